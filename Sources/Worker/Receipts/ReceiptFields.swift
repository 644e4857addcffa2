import AppleReceipts
import AttestCore

/// A receipt's fields as `attest-worker receipt show|refresh` print them. Read without verifying: a
/// stored receipt was verified when it was stored, and a refreshed one by the client.
public enum ReceiptFields {
    /// The stored DER's payload fields; nil when it does not parse as a receipt.
    public static func json(der: [UInt8]) -> JSONValue? {
        guard let signed = try? SignedData(ber: der), let payload = try? ReceiptPayload(der: signed.content) else { return nil }
        let text = { (field: ReceiptPayload.Field) -> JSONValue in payload.text(field).map(JSONValue.string) ?? .null }
        return .object([
            ("type", text(.receiptType)), ("environment", text(.environment)), ("creationTime", text(.creationTime)),
            ("notBefore", text(.notBefore)), ("expirationTime", text(.expirationTime)),
            ("riskMetric", payload.text(.riskMetric).flatMap { Int64($0) }.map(JSONValue.int) ?? .null),
            ("bytes", .int(Int64(der.count))),
        ])
    }

    /// A refreshed receipt's parsed fields.
    public static func json(_ receipt: RefreshedReceipt) -> JSONValue {
        .object([
            ("type", .string("RECEIPT")), ("creationTime", .string(receipt.creationTime.rfc3339)),
            ("notBefore", receipt.notBefore.map { .string($0.rfc3339) } ?? .null),
            ("expirationTime", receipt.expirationTime.map { .string($0.rfc3339) } ?? .null),
            ("riskMetric", receipt.riskMetric.map { .int(Int64($0)) } ?? .null), ("bytes", .int(Int64(receipt.der.count))),
        ])
    }
}
