import AttestCore
import AttestJobs
import AttestVerifier

/// The receipt's BER CMS SignedData, its signed attributes and its payload, then the whole receipt
/// verification under the test receipt root. The payload is parsed directly, because mutated receipts
/// rarely keep the signature that guards it in verification; the raw input is also tried as a payload.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceipt(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    _ = try? ReceiptPayload(der: bytes)
    guard let signed = try? SignedData(ber: bytes) else { return 0 }
    _ = signed.signer.signedAttribute(.contentTypeAttribute)
    _ = signed.signer.signedAttribute(.messageDigestAttribute)
    if let payload = try? ReceiptPayload(der: signed.content), let key = payload[.attestedPublicKey] {
        _ = try? Certificate(der: key)
    }
    _ = Vectors.freshTestTrust().receipt.verify(
        bytes, expectedAppId: validReceipt.appId, attestedKey: validReceipt.attestedKey, at: validReceipt.time)
    return 0
}

/// `att_valid_production`'s app, attested key and time: that case's receipt is a seed and verifies.
private let validReceipt: (appId: String, attestedKey: [UInt8], time: Timestamp) = {
    let c = Vectors.vectorCase("att_valid_production")
    return (
        Vectors.field(c, "teamId") + "." + Vectors.field(c, "bundleId"), Vectors.bytes(c["expect"], "publicKey"),
        Vectors.time(c)
    )
}()
