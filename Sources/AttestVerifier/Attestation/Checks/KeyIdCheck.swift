import AttestCore
import AttestCrypto

/// Apple step 5: SHA-256 of the credential certificate's public key (the uncompressed point) is the keyId.
struct KeyIdCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        let key = context.leaf.publicKey
        guard context.leaf.namedCurve == .prime256v1, key.count == 65, key[0] == 0x04,
            ConstantTime.equal(Digest.sha256.hash(key), context.keyId)
        else {
            return VerificationFailure(.keyIdInvalid, .keyIdMismatch, "keyId is not the hash of the certified key")
        }
        return nil
    }
}
