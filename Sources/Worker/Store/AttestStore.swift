import AttestCore
import AttestJobs
import AttestVerifier
import DeviceIntelligence
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

    public func apps() throws(PGError) -> [AppIdentity: AppPolicy] {
        let rows = try connection.run { c throws(PGError) in
            try c.execute(
                "SELECT team_id, bundle_id, environments, challenges, mad_limit, grace_days, token_lifetime_seconds, risk_weights FROM apps")
        }
        var apps = [AppIdentity: AppPolicy]()
        for r in 0..<rows.count {
            let app = AppPolicy(
                teamId: rows.string(r, 0) ?? "", bundleId: rows.string(r, 1) ?? "",
                environments: rows.string(r, 2).flatMap(EnvironmentPolicy.init(rawValue:)) ?? .production,
                challenges: rows.string(r, 3).flatMap(AppPolicy.ChallengeMode.init(rawValue:)) ?? .backend,
                madLimit: rows.int(r, 4).map(Int.init), graceDays: Int(rows.int(r, 5) ?? 7),
                tokenLifetimeSeconds: Int(rows.int(r, 6) ?? 3600),
                risk: rows.string(r, 7).flatMap { JSONValue.parse(Array($0.utf8)) }.flatMap { try? RiskPolicy(json: $0) } ?? RiskPolicy())
            apps[app.app] = app
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

    /// Verdicts already stored for these jobs of their apps, and the devices with these keys: one round trip,
    /// the verdicts probed by primary key.
    public func prefetch(jobs: [ScopedJobId], keyIds: [[UInt8]]) throws(PGError) -> (verdicts: [ScopedJobId: StoredVerdict], devices: [[UInt8]: DeviceRecord]) {
        let results = try connection.run { c throws(PGError) in
            try c.pipeline([
                (
                    """
                    SELECT x.team, x.bundle, x.job, e.verdict_json, e.job_sha256
                    FROM unnest($1::text[], $2::text[], $3::text[]) AS x(team, bundle, job)
                        CROSS JOIN LATERAL (
                            SELECT verdict_json, job_sha256 FROM verdicts
                            WHERE team_id = x.team AND bundle_id = x.bundle AND job_id = x.job LIMIT 1) e
                    """,
                    [.array(.text(jobs.map(\.app.teamId))), .array(.text(jobs.map(\.app.bundleId))), .array(.text(jobs.map(\.jobId)))]
                ),
                (
                    """
                    SELECT key_id, team_id, bundle_id, public_key, counter, environment, device_id, fingerprint FROM devices
                    WHERE key_id = ANY($1::bytea[])
                    """,
                    [.array(.bytea(keyIds))]
                ),
            ])
        }
        var verdicts = [ScopedJobId: StoredVerdict]()
        let v = results[0]
        for r in 0..<v.count {
            if let team = v.string(r, 0), let bundle = v.string(r, 1), let id = v.string(r, 2), let json = v.string(r, 3) {
                verdicts[ScopedJobId(app: AppIdentity(teamId: team, bundleId: bundle), jobId: id)] =
                    StoredVerdict(json: json, jobDigest: v.bytes(r, 4))
            }
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

    /// Stores a batch of decisions in one transaction and one round trip, with a handful of statements
    /// whatever the batch size (statement start-up and constraint checks, not rows, were most of
    /// PostgreSQL's time when each decision had its own): each accepted attestation on its own (device
    /// upserts do not combine), then every other decision in one set-based statement, then the risk rows
    /// that change, then the month's counts. Attestations go first so a device's assertions in the same
    /// batch find it. The outcome of each says whether it was stored, already decided, or lost a counter
    /// race; the crossings are the quota thresholds the batch's newly counted devices crossed.
    ///
    /// Every statement takes its row locks in key order (attestations by key, the set-based statements
    /// sort inside, risk rows by app and identity; a row's own decisions keep their batch order), so two
    /// workers' batches wait for each other but cannot deadlock on the rows of one table. A deadlock
    /// that still happens (across tables, or against another session) is transient: the batch is
    /// retried.
    public func commit(_ decisions: [Decision]) throws(PGError) -> (outcomes: [CommitOutcome], crossings: [QuotaCrossing]) {
        guard !decisions.isEmpty else { return ([], []) }
        let attested = decisions.indices.filter { decisions[$0].attestedDevice != nil }.sorted { a, b in
            let (x, y) = (decisions[a].attestedDevice!.keyId, decisions[b].attestedDevice!.keyId)
            return x == y ? a < b : x.lexicographicallyPrecedes(y)
        }
        let others = decisions.indices.filter { decisions[$0].attestedDevice == nil }
        let counted = decisions.indices.filter { decisions[$0].intelligence?.countsAsActive == true }
        let scored = decisions.indices.sorted { a, b in
            let (x, y) = (decisions[a].intelligence?.device, decisions[b].intelligence?.device)
            let keys = ((x?.teamId ?? "", x?.bundleId ?? "", x?.identity.value ?? ""), (y?.teamId ?? "", y?.bundleId ?? "", y?.identity.value ?? ""))
            return keys.0 == keys.1 ? a < b : keys.0 < keys.1
        }
        var statements: [(sql: String, params: [PGValue])] = [("BEGIN", [])]
        statements += attested.map { Self.attestation(decisions[$0]) }
        if !others.isEmpty { statements.append(Self.verdicts(others, of: decisions)) }
        statements += scored.compactMap { IntelligenceWrites.risk(decisions[$0]) }
        if !counted.isEmpty { statements.append(IntelligenceWrites.count(counted, of: decisions)) }
        statements.append(("COMMIT", []))
        let results = try connection.run { c throws(PGError) in try c.pipeline(statements) }

        // Every write statement returns (team, bundle, jobId, 1 if stored else 0, the verdict and digest
        // stored before if any); the batch's scoped jobIds are distinct.
        var index = [ScopedJobId: Int](minimumCapacity: decisions.count)
        for (i, d) in decisions.enumerated() { index[ScopedJobId(app: d.app, jobId: d.jobId)] = i }
        var outcomes = [CommitOutcome](repeating: .counterConflict, count: decisions.count)
        for rows in results[1..<(1 + attested.count + (others.isEmpty ? 0 : 1))] {
            for r in 0..<rows.count {
                guard let team = rows.string(r, 0), let bundle = rows.string(r, 1), let jobId = rows.string(r, 2),
                    let i = index[ScopedJobId(app: AppIdentity(teamId: team, bundleId: bundle), jobId: jobId)]
                else { continue }
                if rows.int(r, 3) == 1 {
                    outcomes[i] = .stored
                } else if let existing = rows.string(r, 4) {
                    outcomes[i] = .alreadyDecided(StoredVerdict(json: existing, jobDigest: rows.bytes(r, 5)))
                }
            }
        }
        return (outcomes, counted.isEmpty ? [] : IntelligenceWrites.crossings(results[results.count - 2]))
    }

    private static let insertVerdict = """
        INSERT INTO verdicts (job_id, kind, key_id, team_id, bundle_id, ok, code, reason, verdict_json, received_at,
            decided_at, source_topic, source_partition, source_offset, job_sha256)
        """

    /// An accepted attestation: its verdict and, only if that is new, its device (inserted, or refreshed on
    /// re-attestation of the same key; the counter never moves back).
    static func attestation(_ d: Decision) -> (sql: String, params: [PGValue]) {
        let device = d.attestedDevice!
        let m = device.metadata
        let optional = { (name: String) -> PGValue in m[name].map(PGValue.text) ?? .null }
        return (
            """
            WITH v AS (\(insertVerdict)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::timestamptz, $11::timestamptz, $12, $13, $14, $15)
                ON CONFLICT (team_id, bundle_id, job_id) DO NOTHING RETURNING 1),
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
            SELECT $4, $5, $1, (SELECT count(*) FROM v)::int, e.verdict_json, e.job_sha256
            FROM (SELECT 1) one LEFT JOIN LATERAL (
                SELECT verdict_json, job_sha256 FROM verdicts WHERE team_id = $4 AND bundle_id = $5 AND job_id = $1
                    AND NOT EXISTS (SELECT 1 FROM v)) e ON true
            """,
            [
                .text(d.jobId), d.kind.map(PGValue.text) ?? .null, d.keyId.map(PGValue.text) ?? .null,
                .text(d.app.teamId), .text(d.app.bundleId), .bool(d.ok),
                d.code.map(PGValue.text) ?? .null, d.reason.map(PGValue.text) ?? .null, .text(d.verdictJSON),
                d.receivedAt.map { .text($0.rfc3339) } ?? .null, .text(d.decidedAt.rfc3339),
                d.source.map { .text($0.topic) } ?? .null, d.source.map { .int(Int64($0.partition)) } ?? .null,
                d.source.map { .int($0.offset) } ?? .null, d.jobDigest.map(PGValue.bytes) ?? .null,
                .bytes(device.keyId), .bytes(device.publicKey), .text(device.environment), .bytes(device.receipt),
                device.deviceId.map(PGValue.text) ?? .null, optional("deviceFingerprint"), optional("subjectId"),
                optional("deviceModel"), optional("osVersion"), optional("appVersion"), optional("appBuildNumber"),
                optional("platform"),
            ]
        )
    }

    /// Every decision that is not an accepted attestation, in one statement: the verdicts of jobs not
    /// decided before, and for accepted assertions the counter's compare-and-set per key.
    ///
    /// A key's accepted assertions in a batch were decided in order, each above the one before, so the
    /// key's counter moves to the highest of them when the stored counter is below the lowest, which is
    /// what applying them one by one would do. When it is not (another writer moved it), none of the
    /// key's assertions is stored and each is reported a counter conflict, to be decided again against
    /// the stored counter. The condition is in the UPDATE itself, so a concurrent writer's change is
    /// re-checked under the row lock, and the rows are locked in key order first (`locked`) so that two
    /// batches cannot deadlock on them; verdicts are inserted in jobId order for the same reason. Stored
    /// verdicts are looked up one by one through the primary key
    /// (LATERAL … LIMIT 1 cannot become a join that scans the table, whatever plan the cached statement
    /// settles on).
    static func verdicts(_ indices: [Int], of decisions: [Decision]) -> (sql: String, params: [PGValue]) {
        let rows = indices.map { decisions[$0] }
        let advanced = rows.map { d -> (key: [UInt8], counter: UInt32)? in
            if case .advanced(let key, let counter) = d.change { (key, counter) } else { nil }
        }
        let columns: [PGArray] = [
            .int4(indices.map { Int32($0) }), .text(rows.map(\.jobId)), .text(rows.map(\.kind)), .text(rows.map(\.keyId)),
            .text(rows.map(\.app.teamId)), .text(rows.map(\.app.bundleId)), .bool(rows.map(\.ok)), .text(rows.map(\.code)),
            .text(rows.map(\.reason)), .text(rows.map(\.verdictJSON)),
            .timestamptz(unixMicroseconds: rows.map { $0.receivedAt?.microseconds }),
            .timestamptz(unixMicroseconds: rows.map(\.decidedAt.microseconds)), .text(rows.map { $0.source?.topic }),
            .int4(rows.map { $0.source?.partition }), .int8(rows.map { $0.source?.offset }), .bytea(rows.map(\.jobDigest)),
            .bytea(advanced.map { $0?.key }), .int8(advanced.map { $0.map { Int64($0.counter) } }),
        ]
        return (
            """
            WITH x AS (
                SELECT * FROM unnest($1::int4[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[],
                    $8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::text[], $14::int4[],
                    $15::int8[], $16::bytea[], $17::bytea[], $18::int8[])
                    AS x(i, job, kind, kid, team, bundle, ok, code, reason, verdict, received, decided, topic, part, o, sha,
                        dkey, ctr)),
            decided AS (
                SELECT x.i, x.team, x.bundle, x.job, e.verdict_json, e.job_sha256
                FROM x CROSS JOIN LATERAL (
                    SELECT verdict_json, job_sha256 FROM verdicts
                    WHERE team_id = x.team AND bundle_id = x.bundle AND job_id = x.job LIMIT 1) e),
            fresh AS (SELECT * FROM x WHERE i NOT IN (SELECT i FROM decided)),
            g AS (
                SELECT dkey AS key_id, min(ctr) AS lowest, max(ctr) AS highest, count(*)::int AS n,
                    max(received) AS seen
                FROM fresh WHERE dkey IS NOT NULL GROUP BY dkey),
            locked AS (
                SELECT key_id FROM devices WHERE key_id IN (SELECT key_id FROM g) ORDER BY key_id FOR UPDATE),
            d AS (
                UPDATE devices SET counter = g.highest, assertion_count = assertion_count + g.n,
                    last_seen_at = greatest(last_seen_at, g.seen)
                FROM g WHERE devices.key_id = g.key_id AND devices.counter < g.lowest
                    AND devices.key_id IN (SELECT key_id FROM locked)
                RETURNING devices.key_id),
            v AS (
                \(insertVerdict)
                SELECT job, kind, kid, team, bundle, ok, code, reason, verdict, received, decided, topic, part, o, sha
                FROM fresh WHERE dkey IS NULL OR dkey IN (SELECT key_id FROM d)
                ORDER BY team, bundle, job
                ON CONFLICT (team_id, bundle_id, job_id) DO NOTHING RETURNING team_id, bundle_id, job_id)
            SELECT team_id, bundle_id, job_id, 1, NULL, NULL FROM v
            UNION ALL SELECT team, bundle, job, 0, verdict_json, job_sha256 FROM decided
            """,
            columns.map(PGValue.array)
        )
    }
}
