internal import CLibPQ

/// The statements one connection has prepared on the server, by SQL text and parameter types.
///
/// The worker sends the same few statements for every batch; planning them again each time cost more
/// server CPU than executing them. Prepared statements live as long as the server session, which is as
/// long as the `PGConnection` that owns this table: a reconnect starts empty. Parameter types are part of
/// the key because a statement prepared with an untyped NULL has its type inferred once, for good.
struct PreparedStatements {
    struct Key: Hashable {
        let sql: String
        let types: [Oid]

        /// Hashes the types, the text's length and its last ``hashedTail`` bytes only: every statement of
        /// every batch is looked up here, and hashing a statement's whole text (a few KB for a batch's
        /// writes) cost more than building it. Equality still compares whole texts, so two that end alike
        /// only share a bucket.
        func hash(into hasher: inout Hasher) {
            hasher.combine(types)
            var sql = sql
            sql.withUTF8 { bytes in
                hasher.combine(bytes.count)
                hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(Self.hashedTail))))
            }
        }

        static let hashedTail = 256
    }

    /// Beyond this many distinct statements the rest run unprepared, so a caller that builds SQL text
    /// dynamically cannot grow the server session without bound.
    static let capacity = 256

    private var names: [Key: String] = [:]
    private var issued = 0

    func name(for key: Key) -> String? { names[key] }

    /// Whether `pending` more statements still fit under the capacity.
    func hasRoom(besides pending: Int) -> Bool { names.count + pending < Self.capacity }

    /// A name never used on this connection (a failed prepare's name is not reused either).
    mutating func reserveName() -> String {
        issued += 1
        return "attest_\(issued)"
    }

    /// Records a statement the server confirmed it prepared.
    mutating func add(_ key: Key, name: String) { names[key] = name }
}
