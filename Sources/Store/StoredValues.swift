import AttestCore
import PostgresClient

/// The one way an instant is bound: `timestamptz` as its exact microsecond, in binary, so neither the
/// session's time zone nor text formatting nor float seconds touch it, alone or in an array.
extension Timestamp: PGEncodable, PGArrayElement {
    public var pgValue: PGValue { .timestamptz(unixMicroseconds: microseconds) }

    public static func pgArray(_ elements: [Timestamp?]) -> PGArray {
        .timestamptz(unixMicroseconds: elements.map { $0?.microseconds })
    }

    public static func pgArray(nonNil elements: [Timestamp]) -> PGArray {
        .timestamptz(unixMicroseconds: elements.map { Optional($0.microseconds) })
    }
}

/// A JSON document binds as its text, untyped, so it fits `json` and `jsonb` alike.
extension JSONValue: PGEncodable {
    public var pgValue: PGValue { .json(serialized()) }
}
