import AttestCore
import AttestJobs
import PostgresClient

/// The SQL of `devices` read on its own (the attestation's device upsert travels with its verdict, in
/// ``VerdictsTable/Attestations``; assertions' counters with theirs, in ``VerdictsTable/Decisions``).
enum DevicesTable {
    /// The devices with these keys (a batch's prefetch).
    struct ByKeys: PGStatement {
        typealias Row = DeviceRecord
        let keyIds: [[UInt8]]

        var query: PGQuery {
            """
            SELECT key_id, team_id, bundle_id, public_key, counter, environment, device_id, fingerprint,
                (extract(epoch FROM revoked_at) * 1000000)::bigint AS revoked_at_us
            FROM devices WHERE key_id = ANY(\(keyIds)::bytea[])
            """
        }
    }
}

extension DeviceRecord: PGRowDecodable {
    /// The counter column is checked to fit 32 bits by the schema; a value beyond it is clamped, as before.
    public init(row: PGRow) throws(PGError) {
        let counter: Int64 = try row.decode("counter")
        let revokedAt: Int64? = try row.decode("revoked_at_us")
        self.init(
            keyId: try row.decode("key_id"), teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
            publicKey: try row.decode("public_key"), counter: UInt32(clamping: counter),
            environment: try row.decode("environment"), deviceId: try row.decode("device_id"),
            fingerprint: try row.decode("fingerprint"), revokedAt: revokedAt.map(Timestamp.init(microseconds:)))
    }
}

extension DevicesTable {
    /// The device row `attest-worker device show` prints, with the risk state of its identity (the device's
    /// deviceId in its app); times as RFC 3339 UTC seconds. No row when the key is not stored (for the app,
    /// when one is given).
    struct Show: PGOptionalRowStatement {
        typealias Row = DeviceAdministration.Shown
        let keyId: [UInt8]
        let app: AppIdentity?

        var query: PGQuery {
            """
            SELECT d.key_id, d.team_id, d.bundle_id, d.counter, d.environment, d.device_id, d.fingerprint,
                d.attestation_count, d.assertion_count,
                to_char(d.attested_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS attested_at,
                to_char(d.last_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_seen_at,
                to_char(d.revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS revoked_at, d.revoked_reason,
                r.score AS risk_score, r.category AS risk_category
            FROM devices d
            LEFT JOIN LATERAL (
                SELECT score, category FROM device_risk
                WHERE team_id = d.team_id AND bundle_id = d.bundle_id AND device_id = d.device_id
                ORDER BY updated_at DESC LIMIT 1) r ON true
            WHERE d.key_id = \(keyId) AND (\(app?.teamId)::text IS NULL OR d.team_id = \(app?.teamId))
                AND (\(app?.bundleId)::text IS NULL OR d.bundle_id = \(app?.bundleId))
            """
        }
    }

    /// Revokes one unrevoked key of an app at `at`; the device as revoked when it did, none when the key is
    /// not stored for the app or was revoked already.
    struct Revoke: PGOptionalRowStatement {
        typealias Row = DeviceRecord
        let keyId: [UInt8]
        let app: AppIdentity
        let at: Timestamp
        let reason: String?

        var query: PGQuery {
            """
            UPDATE devices SET revoked_at = \(at)::timestamptz, revoked_reason = \(reason)
            WHERE key_id = \(keyId) AND team_id = \(app.teamId) AND bundle_id = \(app.bundleId) AND revoked_at IS NULL
            RETURNING key_id, team_id, bundle_id, public_key, counter, environment, device_id, fingerprint,
                (extract(epoch FROM revoked_at) * 1000000)::bigint AS revoked_at_us
            """
        }
    }
}

extension DeviceAdministration.Shown: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        let counter: Int64 = try row.decode("counter")
        self.init(
            keyId: try row.decode("key_id"), app: AppIdentity(teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id")),
            counter: counter, environment: try row.decode("environment"), deviceId: try row.decode("device_id"),
            fingerprint: try row.decode("fingerprint"), attestations: try row.decode("attestation_count"),
            assertions: try row.decode("assertion_count"), attestedAt: try row.decode("attested_at"),
            lastSeenAt: try row.decode("last_seen_at"), revokedAt: try row.decode("revoked_at"),
            revokedReason: try row.decode("revoked_reason"), riskScore: try row.decode("risk_score"),
            riskCategory: try row.decode("risk_category"))
    }
}
