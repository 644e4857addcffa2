import PostgresClient

/// The SQL of `devices` read on its own (the attestation's device upsert travels with its verdict, in
/// ``VerdictsTable/Attestation``; assertions' counters with theirs, in ``VerdictsTable/Decisions``).
enum DevicesTable {
    /// The devices with these keys (a batch's prefetch).
    struct ByKeys: PGStatement {
        static let sql = """
            SELECT key_id, team_id, bundle_id, public_key, counter, environment, device_id, fingerprint FROM devices
            WHERE key_id = ANY($1::bytea[])
            """
        typealias Row = DeviceRecord
        let parameters: [PGValue]

        init(keyIds: [[UInt8]]) { parameters = [.array(.bytea(keyIds))] }
    }
}

extension DeviceRecord: PGRowDecodable {
    /// The counter column is checked to fit 32 bits by the schema; a value beyond it is clamped, as before.
    public init(row: PGRow) throws(PGError) {
        let counter: Int64 = try row.decode("counter")
        self.init(
            keyId: try row.decode("key_id"), teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
            publicKey: try row.decode("public_key"), counter: UInt32(clamping: counter),
            environment: try row.decode("environment"), deviceId: try row.decode("device_id"),
            fingerprint: try row.decode("fingerprint"))
    }
}
