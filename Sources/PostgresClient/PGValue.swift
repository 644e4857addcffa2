/// A value bound to a statement parameter (`$1`, `$2`, …).
///
/// Values always travel separately from the SQL text, so nothing is ever escaped or interpolated: a
/// string that looks like SQL stays a string. Everything except `bytes`, `timestamptz` and `array` is sent
/// in text format; those go in binary format so arbitrary bytes (including NUL) arrive unchanged and an
/// instant arrives as the exact microsecond, whatever the session's time zone or date style.
public enum PGValue: Sendable, Equatable {
    /// SQL `NULL`.
    case null
    /// Text, sent untyped so the server infers the type from context (`text`, `uuid`, `timestamptz`, …).
    /// PostgreSQL text cannot hold U+0000: a value containing it is refused before anything is sent.
    case text(String)
    /// A 64-bit integer, sent as `int8` so no value is ever narrowed by type inference. Assignment to an
    /// `int4` column and comparisons with `int4` work; a function that only takes `int4` needs `$1::int`.
    case int(Int64)
    /// A boolean, sent as `bool`.
    case bool(Bool)
    /// Bytes, sent as `bytea` in binary format.
    case bytes([UInt8])
    /// A JSON document, sent untyped so it fits both `json` and `jsonb` columns.
    case json(String)
    /// An instant as microseconds since the Unix epoch, sent as `timestamptz`.
    case timestamptz(unixMicroseconds: Int64)
    /// A one-dimensional array of one element type, in binary format.
    case array(PGArray)
}
