import AttestCore

/// A verified App Attest receipt: what the verdict reports and what the device store keeps.
public struct Receipt: Sendable {
    /// The whole CMS object, stored with the device for later refreshes.
    public let der: [UInt8]
    public let payload: ReceiptPayload

    /// "ATTEST" for the receipt inside an attestation, "RECEIPT" for a refreshed one.
    public var type: String? { payload.text(.receiptType) }
    public var creationTime: String? { payload.text(.creationTime) }
    public var expirationTime: String? { payload.text(.expirationTime) }
    public var notBefore: String? { payload.text(.notBefore) }
    public var environment: String? { payload.text(.environment) }
    /// Apple's risk metric (refreshed receipts): a decimal count as text.
    public var riskMetric: Int? { payload.text(.riskMetric).flatMap { Int($0) } }
}
