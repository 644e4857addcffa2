/// Why a receipt was refused (all of them are `receipt_invalid`); the text is for logs and support.
public struct ReceiptFailure: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
