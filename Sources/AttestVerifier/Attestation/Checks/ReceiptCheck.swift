import AttestCore
/// The receipt: present, a CMS object signed by Apple's receipt signer under the pinned root, for this
/// app, this key and type ATTEST (docs/CHECK_ORDER.md step 11).
struct ReceiptCheck: AttestationCheck {
    func evaluate(_ context: inout AttestationContext) -> VerificationFailure? {
        guard case .bytes(let der)? = context.object.receipt else {
            return VerificationFailure(.appleValidationFailed, .receiptInvalid, "receipt missing or not bytes")
        }
        let result = context.trust.receipt.verify(
            der, expectedAppId: context.appId, attestedKey: context.leaf.publicKey,
            attestedCertificate: context.leaf, at: context.time)
        switch result {
        case .failure(let failure):
            return VerificationFailure(.appleValidationFailed, .receiptInvalid, failure.description)
        case .success(let receipt):
            context.receipt = receipt
            return nil
        }
    }
}
