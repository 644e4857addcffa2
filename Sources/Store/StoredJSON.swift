import AttestCore
import PostgresClient

/// The one policy for JSON the worker reads back from its own columns. jsonb guarantees JSON, not the shape
/// this build expects: a row another build wrote, or one edited by hand. What does not read as the value
/// it should be reads as absent, and each caller says what absence means (the default risk weights, no
/// custom claims, no held score so the device is scored afresh, no receipt metrics), so one odd row never
/// stops a batch; only an events row, which must be published exactly as written, refuses to decode.
extension PGRow {
    /// The JSON text of `column` read by `value`; nil when the column is NULL, not JSON, or `value` throws.
    func decodeJSON<T>(_ column: String, as value: (JSONValue) throws -> T?) throws(PGError) -> T? {
        let text: String? = try decode(column)
        guard let text, let json = JSONValue.parse(Array(text.utf8)) else { return nil }
        return try? value(json)
    }
}
