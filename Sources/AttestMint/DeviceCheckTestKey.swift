import AttestCore

/// A fresh DeviceCheck key as Apple hands it out (a P-256 key, unencrypted PKCS#8 PEM, the `.p8` file),
/// for runs against a stand-in of Apple's endpoint: no real key is ever needed there.
public enum DeviceCheckTestKey {
    public static func generatePEM() throws(MintError) -> String {
        PEM.encode(try ECKey.generate(.p256).pkcs8(), label: "PRIVATE KEY")
    }
}
