import AttestCore
import AttestJobs
import AttestVerifier
import PostgresClient

/// The worker's PostgreSQL access: apps, devices and verdicts. Every method is one round trip whatever
/// the batch size (pipeline mode), and every statement binds parameters; nothing is built from input.
public final class AttestStore: @unchecked Sendable {
    /// Internal for the store's extensions in other files (challenges).
    let connection: PGReconnectingConnection

    /// - Parameter connection: retries on a fresh connection after connection loss, with backoff.
    public init(connection: PGReconnectingConnection) {
        self.connection = connection
    }

    // MARK: Apps

    public func apps() throws(PGError) -> [String: AppPolicy] {
        let rows = try connection.run { c throws(PGError) in
            try c.execute(
                "SELECT team_id, bundle_id, environments, challenges, mad_limit, grace_days, token_lifetime_seconds, risk_weights FROM apps")
        }
        var apps = [String: AppPolicy]()
        for r in 0..<rows.count {
            let app = AppPolicy(
                teamId: rows.string(r, 0) ?? "", bundleId: rows.string(r, 1) ?? "",
                environments: rows.string(r, 2).flatMap(EnvironmentPolicy.init(rawValue:)) ?? .production,
                challenges: rows.string(r, 3).flatMap(AppPolicy.ChallengeMode.init(rawValue:)) ?? .backend,
                madLimit: rows.int(r, 4).map(Int.init), graceDays: Int(rows.int(r, 5) ?? 7),
                tokenLifetimeSeconds: Int(rows.int(r, 6) ?? 3600),
                risk: rows.string(r, 7).flatMap { JSONValue.parse(Array($0.utf8)) }.flatMap { try? RiskPolicy(json: $0) } ?? RiskPolicy())
            apps[app.appId] = app
        }
        return apps
    }

    /// Registers or replaces an app.
    public func upsert(_ app: AppPolicy) throws(PGError) {
        _ = try connection.run { c throws(PGError) in
            try c.execute(
                """
                INSERT INTO apps (team_id, bundle_id, environments, challenges, mad_limit, grace_days, token_lifetime_seconds,
                    risk_weights)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)
                ON CONFLICT (team_id, bundle_id) DO UPDATE SET environments = EXCLUDED.environments,
                    challenges = EXCLUDED.challenges, mad_limit = EXCLUDED.mad_limit, grace_days = EXCLUDED.grace_days,
                    token_lifetime_seconds = EXCLUDED.token_lifetime_seconds, risk_weights = EXCLUDED.risk_weights,
                    updated_at = now()
                """,
                [
                    .text(app.teamId), .text(app.bundleId), .text(app.environments.rawValue), .text(app.challenges.rawValue),
                    app.madLimit.map { .int(Int64($0)) } ?? .null, .int(Int64(app.graceDays)),
                    .int(Int64(app.tokenLifetimeSeconds)), .json(app.risk.json.serialized()),
                ])
        }
    }

    // MARK: Reads before deciding a batch

    /// Verdicts already stored for these jobs, and the devices with these keys: one round trip.
    public func prefetch(jobIds: [String], keyIds: [[UInt8]]) throws(PGError) -> (verdicts: [String: StoredVerdict], devices: [[UInt8]: DeviceRecord]) {
        let jobs = JSONValue.array(jobIds.map(JSONValue.string)).serialized()
        let keys = JSONValue.array(keyIds.map { .string(Hex.encode($0)) }).serialized()
        let results = try connection.run { c throws(PGError) in
            try c.pipeline([
                (
                    "SELECT job_id, verdict_json, job_sha256 FROM verdicts WHERE job_id IN (SELECT jsonb_array_elements_text($1::jsonb))",
                    [.json(jobs)]
                ),
                (
                    """
                    SELECT key_id, team_id, bundle_id, public_key, counter, environment, device_id, fingerprint FROM devices
                    WHERE key_id IN (SELECT decode(jsonb_array_elements_text($1::jsonb), 'hex'))
                    """,
                    [.json(keys)]
                ),
            ])
        }
        var verdicts = [String: StoredVerdict]()
        let v = results[0]
        for r in 0..<v.count {
            if let id = v.string(r, 0), let json = v.string(r, 1) { verdicts[id] = StoredVerdict(json: json, jobDigest: v.bytes(r, 2)) }
        }
        var devices = [[UInt8]: DeviceRecord]()
        let d = results[1]
        for r in 0..<d.count {
            guard let keyId = d.bytes(r, 0), let key = d.bytes(r, 3), let counter = d.int(r, 4) else { continue }
            devices[keyId] = DeviceRecord(
                keyId: keyId, teamId: d.string(r, 1) ?? "", bundleId: d.string(r, 2) ?? "", publicKey: key,
                counter: UInt32(clamping: counter), environment: d.string(r, 5) ?? "", deviceId: d.string(r, 6) ?? "",
                fingerprint: d.string(r, 7))
        }
        return (verdicts, devices)
    }

    // MARK: Writing a batch

    /// Stores a batch of decisions in one transaction and one round trip, in order (so a device's
    /// attestation is stored before its assertions in the same batch). The outcome of each says whether it
    /// was stored, already decided, or lost a counter race; the crossings are the quota thresholds the
    /// batch's newly counted devices crossed.
    public func commit(_ decisions: [Decision]) throws(PGError) -> (outcomes: [CommitOutcome], crossings: [QuotaCrossing]) {
        guard !decisions.isEmpty else { return ([], []) }
        var statements: [(sql: String, params: [PGValue])] = [("BEGIN", [])]
        for decision in decisions { statements.append(Self.statement(for: decision)) }
        statements.append(IntelligenceWrites.tally(decisions.compactMap(\.intelligence)))
        statements.append(("COMMIT", []))
        let results = try connection.run { c throws(PGError) in try c.pipeline(statements) }
        let outcomes = decisions.indices.map { i -> CommitOutcome in
            let rows = results[i + 1]
            // Every statement returns (stored, existing verdict_json).
            if rows.int(0, 0) == 1 { return .stored }
            if let existing = rows.string(0, 1) { return .alreadyDecided(verdictJSON: existing) }
            return .counterConflict
        }
        return (outcomes, IntelligenceWrites.crossings(results[decisions.count + 1]))
    }

    /// The verdict row's parameters $1…$15, shared by the three statement shapes.
    private static func verdictParams(_ d: Decision) -> [PGValue] {
        [
            .text(d.jobId), d.kind.map(PGValue.text) ?? .null, d.keyId.map(PGValue.text) ?? .null,
            d.teamId.map(PGValue.text) ?? .null, d.bundleId.map(PGValue.text) ?? .null, .bool(d.ok),
            d.code.map(PGValue.text) ?? .null, d.reason.map(PGValue.text) ?? .null, .text(d.verdictJSON),
            d.receivedAt.map { .text($0.rfc3339) } ?? .null, .text(d.decidedAt.rfc3339),
            d.source.map { .text($0.topic) } ?? .null, d.source.map { .int(Int64($0.partition)) } ?? .null,
            d.source.map { .int($0.offset) } ?? .null, d.jobDigest.map(PGValue.bytes) ?? .null,
        ]
    }

    private static let insertVerdict = """
        INSERT INTO verdicts (job_id, kind, key_id, team_id, bundle_id, ok, code, reason, verdict_json, received_at,
            decided_at, source_topic, source_partition, source_offset, job_sha256)
        """
    private static let verdictValues = "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10::timestamptz, $11::timestamptz, $12, $13, $14, $15"

    /// One statement per decision, returning (1 if stored else 0, the verdict stored before if any). Each
    /// shape's CTEs name the stored verdict `v`; the intelligence writes hang off it.
    static func statement(for d: Decision) -> (sql: String, params: [PGValue]) {
        let (ctes, params) = changeCTEs(for: d)
        let extra = d.intelligence.map { IntelligenceWrites.ctes(for: $0, firstParameter: params.count + 1) }
        return (
            ctes + (extra?.sql ?? "") + "\nSELECT (SELECT count(*) FROM v)::int, (SELECT verdict_json FROM verdicts WHERE job_id = $1)",
            params + (extra?.params ?? [])
        )
    }

    private static func changeCTEs(for d: Decision) -> (sql: String, params: [PGValue]) {
        switch d.change {
        case .none:
            return (
                """
                WITH v AS (\(insertVerdict) VALUES (\(verdictValues)) ON CONFLICT (job_id) DO NOTHING RETURNING 1)
                """,
                verdictParams(d)
            )
        case .attested(let device):
            let m = device.metadata
            let optional = { (name: String) -> PGValue in m[name].map(PGValue.text) ?? .null }
            return (
                """
                WITH v AS (\(insertVerdict) VALUES (\(verdictValues)) ON CONFLICT (job_id) DO NOTHING RETURNING 1),
                d AS (
                    INSERT INTO devices (key_id, team_id, bundle_id, public_key, environment, receipt, device_id, fingerprint,
                        subject_id, device_model, os_version, app_version, app_build_number, platform, attested_at, last_seen_at)
                    SELECT $16, $4, $5, $17, $18, $19, coalesce($20, gen_random_uuid()::text), $21, $22, $23, $24, $25,
                        $26, $27, $10::timestamptz, $10::timestamptz
                    WHERE EXISTS (SELECT 1 FROM v)
                    ON CONFLICT (key_id) DO UPDATE SET public_key = EXCLUDED.public_key, environment = EXCLUDED.environment,
                        receipt = EXCLUDED.receipt, device_id = coalesce($20, devices.device_id),
                        fingerprint = coalesce(EXCLUDED.fingerprint, devices.fingerprint),
                        subject_id = coalesce(EXCLUDED.subject_id, devices.subject_id),
                        device_model = coalesce(EXCLUDED.device_model, devices.device_model),
                        os_version = coalesce(EXCLUDED.os_version, devices.os_version),
                        app_version = coalesce(EXCLUDED.app_version, devices.app_version),
                        app_build_number = coalesce(EXCLUDED.app_build_number, devices.app_build_number),
                        platform = coalesce(EXCLUDED.platform, devices.platform),
                        attestation_count = devices.attestation_count + 1, attested_at = EXCLUDED.attested_at,
                        last_seen_at = greatest(devices.last_seen_at, EXCLUDED.last_seen_at)
                    RETURNING 1)
                """,
                verdictParams(d) + [
                    .bytes(device.keyId), .bytes(device.publicKey), .text(device.environment), .bytes(device.receipt),
                    device.deviceId.map(PGValue.text) ?? .null, optional("deviceFingerprint"), optional("subjectId"),
                    optional("deviceModel"), optional("osVersion"), optional("appVersion"), optional("appBuildNumber"),
                    optional("platform"),
                ]
            )
        case .advanced(let keyId, let counter):
            // The compare-and-set: the counter moves only forward, and only for a job not decided before.
            return (
                """
                WITH d AS (
                    UPDATE devices SET counter = $17, assertion_count = assertion_count + 1,
                        last_seen_at = greatest(last_seen_at, $10::timestamptz)
                    WHERE key_id = $16 AND counter < $17 AND NOT EXISTS (SELECT 1 FROM verdicts WHERE job_id = $1)
                    RETURNING 1),
                v AS (\(insertVerdict) SELECT \(verdictValues) WHERE EXISTS (SELECT 1 FROM d)
                    ON CONFLICT (job_id) DO NOTHING RETURNING 1)
                """,
                verdictParams(d) + [.bytes(keyId), .int(Int64(counter))]
            )
        }
    }
}
