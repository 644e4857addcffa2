import AttestCore
import AttestJobs
import PostgresClient

/// The SQL of `verdicts`, and of the device writes that go with a verdict in the same statement (an
/// attested device only if its verdict is new; an assertion's counter only with its verdict).
enum VerdictsTable {
    /// The verdicts already stored for these jobs of their apps, probed by primary key (a batch's prefetch):
    /// each jobId looked up with its team and bundle, all three in every partition's index condition, so the
    /// probe reads what it finds whatever the statistics say. Probed per app with the jobIds as one array
    /// (`job_id = ANY(…)`), the planner chose by its estimate of an app's rows, and where it took them for
    /// few it scanned every verdict of the app in each partition and filtered the jobIds: 100,000 of one
    /// app's verdicts in a partition took 828 ms a probe against 3.6–6.6 ms (psql, 512 new jobIds).
    /// One verdict per jobId is kept across partitions (``BatchLocks``), so the first found is the one.
    struct Stored: PGStatement {
        let jobs: [ScopedJobId]

        var query: PGQuery {
            """
            SELECT x.team AS team_id, x.bundle AS bundle_id, x.job AS job_id, e.verdict_json, e.job_sha256
            FROM unnest(\(jobs.map(\.app.teamId))::text[], \(jobs.map(\.app.bundleId))::text[], \(jobs.map(\.jobId))::text[]) AS x(team, bundle, job)
                CROSS JOIN LATERAL (
                    SELECT verdict_json, job_sha256 FROM verdicts
                    WHERE team_id = x.team AND bundle_id = x.bundle AND job_id = x.job LIMIT 1) e
            """
        }

        struct Row: PGRowDecodable {
            let job: ScopedJobId
            let verdict: StoredVerdict

            init(row: PGRow) throws(PGError) {
                job = ScopedJobId(
                    app: AppIdentity(teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id")),
                    jobId: try row.decode("job_id"))
                verdict = try StoredVerdict(row: row)
            }
        }
    }

    /// A batch's first statement after `BEGIN`: transaction-scoped advisory locks on each of its jobIds and
    /// keys, taken in the order of the locks' own 64-bit keys (a volatile select list is evaluated after
    /// the sort), so two batches sharing jobIds or keys wait for each other instead of deadlocking. Sorting
    /// the integers, not the texts they hash, spares the collation's comparisons; a name listed twice takes
    /// its lock twice, which a session holding it is granted at once. The jobId locks keep one verdict per
    /// jobId across partitions (migration 0013): a batch that takes one another holds waits for that one to
    /// commit, and its reads, each on a snapshot of its own, see the verdict it stored. The key locks keep a
    /// device's counter and assertion count as the batch read them until it settles. A jobId's lock is
    /// `team/bundle/jobId`, as 0.8.0 took it at its commit, so the two wait for each other during an
    /// upgrade; a key's is `key/` and its hex.
    struct BatchLocks: PGCommandStatement {
        let jobs: [ScopedJobId]
        let keyIds: [[UInt8]]

        var query: PGQuery {
            """
            SELECT pg_advisory_xact_lock(k)
            FROM (SELECT hashtextextended(t || '/' || b || '/' || j, 0)
                    FROM unnest(\(jobs.map(\.app.teamId))::text[], \(jobs.map(\.app.bundleId))::text[], \(jobs.map(\.jobId))::text[]) AS x(t, b, j)
                UNION ALL SELECT hashtextextended('key/' || encode(k, 'hex'), 0) FROM unnest(\(keyIds)::bytea[]) AS y(k)) AS locks(k)
            ORDER BY k
            """
        }
    }

    /// The unnest arguments of a write statement's `x`: each decision's position, then its verdict's
    /// values in the order of ``verdictColumns``.
    private static func verdictArrays(_ decisions: [Decision]) -> PGQuery {
        """
        \(decisions.indices.map { Int32($0) })::int4[], \(decisions.map(\.jobId))::text[], \(decisions.map(\.kind))::text[],
        \(decisions.map(\.keyId))::text[], \(decisions.map(\.app.teamId))::text[], \(decisions.map(\.app.bundleId))::text[],
        \(decisions.map(\.ok))::bool[], \(decisions.map(\.code))::text[], \(decisions.map(\.reason))::text[],
        \(decisions.map(\.verdictJSON))::text[], \(decisions.map(\.receivedAt))::timestamptz[],
        \(decisions.map(\.decidedAt))::timestamptz[], \(decisions.map { $0.source?.topic })::text[],
        \(decisions.map { $0.source?.partition })::int4[], \(decisions.map { $0.source?.offset })::int8[],
        \(decisions.map(\.jobDigest))::bytea[], \(decisions.map(\.storedPartitionAt))::timestamptz[]
        """
    }

    /// `x`'s names for ``verdictArrays(_:)``'s values after the position, in ``insertVerdict``'s column order.
    private static let verdictColumns = "job, kind, kid, team, bundle, ok, code, reason, verdict, received, decided, topic, part, o, sha, pat"

    private static let insertVerdict = """
        INSERT INTO verdicts (job_id, kind, key_id, team_id, bundle_id, ok, code, reason, verdict_json, received_at,
            decided_at, source_topic, source_partition, source_offset, job_sha256, partition_at)
        """

    /// Accepted attestations of distinct keys, in one statement: their verdicts and their devices (inserted,
    /// or refreshed on re-attestation of the same key; the counter never moves back). Every verdict is
    /// stored or the statement fails, so it returns no rows. Keys must be distinct
    /// because one statement cannot change a row twice: a batch attesting a key twice writes its
    /// attestations in rounds, one statement each (``DecisionWrites``). The batch's gather found no
    /// verdict for these jobIds in any partition after taking their locks (``BatchLocks``), and no other
    /// worker stores them before this commits, so nothing here probes `verdicts` again, and no ON CONFLICT
    /// clause guards the insert (its speculative insertion, a second probe of the key and a second WAL
    /// record, cost more than half again a plain insert): a writer that takes no lock and stored one of
    /// these jobIds in the same partition meanwhile makes the insert fail on the partition's key, and the
    /// settle runs the batch again (``StoreTransaction/settle(_:)``). A device the attestation names keeps
    /// that id; one it does not name keeps its stored id, or gets a new UUID: the two are separate inserts
    /// because an upsert's update sees only the row it proposed, not whether the id in it was given.
    struct Attestations: PGCommandStatement {
        let decisions: [Decision]

        /// - Precondition: every decision is an accepted attestation (`attestedDevice` is set), of distinct keys
        ///   and distinct jobIds.
        init(_ decisions: [Decision]) { self.decisions = decisions }

        var query: PGQuery {
            let devices = decisions.map { $0.attestedDevice! }
            let metadata = { (key: String) in devices.map { $0.metadata[key] } }
            return """
            WITH x AS (
                SELECT * FROM unnest(\(verdictArrays(decisions)),
                    \(devices.map(\.keyId))::bytea[], \(devices.map(\.publicKey))::bytea[], \(devices.map(\.environment))::text[],
                    \(devices.map(\.receipt))::bytea[], \(devices.map(\.deviceId))::text[], \(metadata("deviceFingerprint"))::text[],
                    \(metadata("subjectId"))::text[], \(metadata("deviceModel"))::text[], \(metadata("osVersion"))::text[],
                    \(metadata("appVersion"))::text[], \(metadata("appBuildNumber"))::text[], \(metadata("platform"))::text[])
                    AS x(i, \(unescaped: verdictColumns), dkey, pub, env, receipt, did, fp, subject, model, os, appv, build, platform)),
            v AS (\(unescaped: insertVerdict) SELECT \(unescaped: verdictColumns) FROM x),
            named AS (\(unescaped: upsertDevices(deviceId: "did", where: "did IS NOT NULL", keep: "device_id = EXCLUDED.device_id,")))
            \(unescaped: upsertDevices(deviceId: "gen_random_uuid()::text", where: "did IS NULL", keep: ""))
            """
        }

        /// The devices of the attestations in `x` that `where` selects, in key order, with `deviceId` as a
        /// new row's id and `keep` setting (or not) an existing row's.
        private func upsertDevices(deviceId: String, where condition: String, keep: String) -> String {
            """
            INSERT INTO devices (key_id, team_id, bundle_id, public_key, environment, receipt, device_id, fingerprint,
                subject_id, device_model, os_version, app_version, app_build_number, platform, attested_at, last_seen_at)
            SELECT dkey, team, bundle, pub, env, receipt, \(deviceId), fp, subject, model, os, appv, build, platform, received, received
            FROM x WHERE \(condition) ORDER BY dkey
            ON CONFLICT (key_id) DO UPDATE SET public_key = EXCLUDED.public_key, environment = EXCLUDED.environment,
                receipt = EXCLUDED.receipt, \(keep)
                fingerprint = coalesce(EXCLUDED.fingerprint, devices.fingerprint),
                subject_id = coalesce(EXCLUDED.subject_id, devices.subject_id),
                device_model = coalesce(EXCLUDED.device_model, devices.device_model),
                os_version = coalesce(EXCLUDED.os_version, devices.os_version),
                app_version = coalesce(EXCLUDED.app_version, devices.app_version),
                app_build_number = coalesce(EXCLUDED.app_build_number, devices.app_build_number),
                platform = coalesce(EXCLUDED.platform, devices.platform),
                attestation_count = devices.attestation_count + 1, attested_at = EXCLUDED.attested_at,
                last_seen_at = greatest(devices.last_seen_at, EXCLUDED.last_seen_at)
            """
        }
    }

    /// Every decision that is not an accepted attestation, in one statement: the verdicts, for accepted
    /// assertions the counter's compare-and-set per key, and for accepted Android assertions (no counter)
    /// the device's count and last use. It returns the positions, in the order given, of the decisions it
    /// did not store (``Unstored``): none, unless a key's counter had moved.
    ///
    /// A key's accepted assertions in a batch were decided in order, each above the one before, so the
    /// key's counter moves to the highest of them when the stored counter is below the lowest, which is
    /// what applying them one by one would do. When it is not (a writer that took no key lock moved it), none of
    /// the key's assertions is stored (the worker's batch then runs again whole). The condition is in the
    /// UPDATE itself, so a concurrent writer's change is re-checked under the row lock, and the rows are
    /// locked in key order first (`locked`) so that two batches cannot deadlock on them. Verdicts need no
    /// order: a unique index makes two inserts wait for each other only on one key, and two batches never
    /// insert one jobId at once under its lock. Nothing probes `verdicts` (every partition) for the jobIds
    /// again: the gather did, under their locks (``Attestations`` says why that suffices, and what a
    /// verdict stored meanwhile by a writer that takes no lock does). The devices are locked and updated by
    /// their keys as one array (`= ANY(ARRAY(…))`), which only the primary key serves: as a semi-join, a plan
    /// made while `devices` was analyzed empty read every device on every batch.
    struct Decisions: PGStatement {
        let decisions: [Decision]

        /// - Precondition: the decisions' jobIds are distinct (a row answers its decision by jobId).
        init(_ decisions: [Decision]) { self.decisions = decisions }

        var query: PGQuery {
            let advanced = decisions.map { d -> (key: [UInt8], counter: UInt32)? in
                if case .advanced(let key, let counter) = d.change { (key, counter) } else { nil }
            }
            let used = decisions.map { d -> [UInt8]? in if case .used(let key) = d.change { key } else { nil } }
            return """
            WITH x AS (
                SELECT * FROM unnest(\(verdictArrays(decisions)), \(advanced.map { $0?.key })::bytea[],
                    \(advanced.map { $0.map { Int64($0.counter) } })::int8[], \(used)::bytea[])
                    AS x(i, \(unescaped: verdictColumns), dkey, ctr, ukey)),
            g AS (
                SELECT dkey AS key_id, min(ctr) AS lowest, max(ctr) AS highest, count(*)::int AS n,
                    max(received) AS seen
                FROM x WHERE dkey IS NOT NULL GROUP BY dkey),
            u AS (
                SELECT ukey AS key_id, count(*)::int AS n, max(received) AS seen FROM x WHERE ukey IS NOT NULL GROUP BY ukey),
            locked AS (
                SELECT key_id FROM devices WHERE key_id = ANY(ARRAY(SELECT key_id FROM g UNION ALL SELECT key_id FROM u))
                ORDER BY key_id FOR UPDATE),
            used AS (
                UPDATE devices SET assertion_count = assertion_count + u.n, last_seen_at = greatest(last_seen_at, u.seen)
                FROM u WHERE devices.key_id = u.key_id AND devices.key_id = ANY(ARRAY(SELECT key_id FROM locked))
                RETURNING devices.key_id),
            d AS (
                UPDATE devices SET counter = g.highest, assertion_count = assertion_count + g.n,
                    last_seen_at = greatest(last_seen_at, g.seen)
                FROM g WHERE devices.key_id = g.key_id AND devices.counter < g.lowest
                    AND devices.key_id = ANY(ARRAY(SELECT key_id FROM locked))
                RETURNING devices.key_id),
            v AS (
                \(unescaped: insertVerdict)
                SELECT \(unescaped: verdictColumns)
                FROM x WHERE dkey IS NULL OR dkey IN (SELECT key_id FROM d))
            SELECT i AS decision FROM x WHERE dkey IS NOT NULL AND dkey NOT IN (SELECT key_id FROM d) ORDER BY i
            """
        }

        typealias Row = Unstored
        typealias Result = [Int]

        func result(_ rows: PGDecodedRows<Unstored>) throws(PGError) -> [Int] { try Unstored.positions(rows, count: decisions.count) }
    }

    /// A decision ``Decisions`` did not store (its key's counter had moved, which only a writer that takes
    /// no key lock can do): its position in the statement's input.
    struct Unstored: PGRowDecodable {
        let decision: Int

        init(row: PGRow) throws(PGError) { decision = try row.decode("decision") }

        /// The positions the rows name, among `count` decisions.
        /// - Throws: `.unexpectedRowCount` unless the rows name positions below `count`, each once, in order.
        static func positions(_ rows: PGDecodedRows<Unstored>, count: Int) throws(PGError) -> [Int] {
            var previous = -1
            for row in rows.rows {
                guard row.decision > previous, row.decision < count else {
                    throw PGError(code: .unexpectedRowCount, message: "a row names decision \(row.decision) of \(count) after \(previous)")
                }
                previous = row.decision
            }
            return rows.rows.map(\.decision)
        }
    }
}

extension StoredVerdict: PGRowDecodable {
    /// From `verdict_json` and `job_sha256`.
    public init(row: PGRow) throws(PGError) {
        self.init(json: try row.decode("verdict_json"), jobDigest: try row.decode("job_sha256"))
    }
}
