import AttestCore

/// The keyId a job names: base64 of the 32-byte SHA-256 of the device key.
public enum KeyIdentifier {
    public static func decode(_ text: String) -> Result<[UInt8], VerificationFailure> {
        guard let bytes = Base64.decode(text) else {
            return .failure(VerificationFailure(.keyIdInvalid, .malformedBase64, "keyId is not base64"))
        }
        guard bytes.count == 32 else {
            return .failure(VerificationFailure(.keyIdInvalid, .keyIdMismatch, "keyId is not 32 bytes"))
        }
        return .success(bytes)
    }
}
