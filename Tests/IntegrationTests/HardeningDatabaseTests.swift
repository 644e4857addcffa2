import AttestCore
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack.ClusterWide {
    /// Database faults every session sees never lose a job (issue 11, item 5), each produced for real against
    /// a running worker: a read-only database, terminated sessions, lock and statement timeouts set on the
    /// role. Transient faults delay jobs without dead-lettering any.
    @Suite struct DatabaseOutageTests {
        /// Guarantee: a read-only database (a failover to a standby) loses nothing. With writes refused
        /// (25006) the worker publishes nothing, dead-letters nothing and answers /readyz 503 with the reason;
        /// once writes are allowed again it reconnects by itself and decides every job once.
        @Test func aReadOnlyDatabaseDelaysJobsAndLosesNone() throws {
            let topics = try Stack.topics("readonly")
            let stream = try JobStream(devices: 6, assertions: 4)
            try Jobs.registerApp(stream.bundleId)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "\(worker.log.suffix(1500))")
            let verdicts = try TopicReader(topic: topics.verdicts)
            let dead = try TopicReader(topic: topics.deadLetters)
            do {
                let admin = try DatabaseFaults.admin()
                defer { try? DatabaseFaults.setReadOnly(false, admin) }
                try DatabaseFaults.setReadOnly(true, admin)
                try DatabaseFaults.terminateWorkerSessions(admin)
                try produce(topics.jobs, stream.messages)

                #expect(worker.waitFor(body: "read-only (25006)", seconds: 30), "\(worker.log.suffix(2000))")
                #expect(try worker.get("/readyz").status == 503)
                // Three refused attempts of the batch, then nothing on either topic: what it did while writes failed.
                #expect(try eventually(seconds: 30) { try worker.retries("25") >= 3 }, "\(worker.log.suffix(2000))")
                #expect(!verdicts.read(seconds: 1) { !$0.isEmpty }, "a verdict was published while writes failed")
                #expect(!dead.read(seconds: 1) { !$0.isEmpty }, "a job was dead-lettered while writes failed")
            }
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            try LiveStack.FaultInjectionTests().expectDecidedOnce(stream, verdicts, assertions: 4, String(worker.log.suffix(1500)))
            #expect(!dead.read(seconds: 2) { !$0.isEmpty }, "valid jobs were dead-lettered")
            #expect(worker.waitFor("/readyz", status: 200, seconds: 20), "readiness did not come back")
            // The outage is logged when it starts (once per lane at most) and when it ends, not per retry.
            let failing = worker.log.components(separatedBy: "\"database failing; retrying\"").count - 1
            #expect(failing >= 1 && failing <= 4, "\(failing) outage lines")
            #expect(worker.log.contains("\"database recovered\""))
        }

        /// Guarantee: a worker stopped during an outage still shuts down in order: SIGTERM cancels the retries,
        /// the unstored batch is given up unacknowledged (no offset moves, nothing published), the process exits
        /// 0 well before the shutdown deadline, and the next worker decides every job once writes are back.
        @Test func aWorkerStoppedDuringAnOutageExitsInOrderAndTheNextDecidesEverything() throws {
            let topics = try Stack.topics("stopro")
            let stream = try JobStream(devices: 4, assertions: 3)
            try Jobs.registerApp(stream.bundleId)
            let group = "g-\(UUID().uuidString)"
            let worker = try WorkerProcess(topics: topics, group: group)
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "\(worker.log.suffix(1500))")
            let verdicts = try TopicReader(topic: topics.verdicts)
            do {
                let admin = try DatabaseFaults.admin()
                defer { try? DatabaseFaults.setReadOnly(false, admin) }
                try DatabaseFaults.setReadOnly(true, admin)
                try DatabaseFaults.terminateWorkerSessions(admin)
                try produce(topics.jobs, stream.messages)
                #expect(worker.waitFor(body: "read-only (25006)", seconds: 30), "\(worker.log.suffix(2000))")
                worker.kill(SIGTERM)
                #expect(worker.wait(seconds: 12), "the worker did not stop during the outage\n\(worker.log.suffix(2000))")
                #expect(worker.process.terminationStatus == 0, "\(worker.log.suffix(2000))")
                #expect(!worker.log.contains("shutdown deadline passed"))
                #expect(worker.log.contains("\"worker stopped\""))
                #expect(!verdicts.read(seconds: 1) { !$0.isEmpty }, "a verdict was published while writes failed")
            }
            let next = try WorkerProcess(topics: topics, group: group)
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(next.log.suffix(2000))")
            try LiveStack.FaultInjectionTests().expectDecidedOnce(stream, verdicts, assertions: 3, String(next.log.suffix(1500)))
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(!dead.read(seconds: 2) { !$0.isEmpty }, "jobs were dead-lettered")
        }

        /// Guarantee: sessions terminated over and over mid-load (pg_terminate_backend, as a failover or an
        /// operator does) delay jobs and lose none: every job decided once, nothing dead-lettered.
        @Test func sessionsTerminatedRepeatedlyMidLoadLoseNothing() throws {
            let topics = try Stack.topics("terminate")
            let stream = try JobStream(devices: 40, assertions: 12)
            try Jobs.registerApp(stream.bundleId)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_BATCH_SIZE": "8"])
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "\(worker.log.suffix(1500))")
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            let admin = try DatabaseFaults.admin()
            // Rounds that terminated the worker's sessions while jobs were still undecided.
            var midLoad = 0
            for _ in 0..<40 where verdicts.verdictsByJob.count < stream.expected.count {
                if try DatabaseFaults.terminateWorkerSessions(admin) > 0 { midLoad += 1 }
                _ = verdicts.read(seconds: 0.2) { _ in false }
            }
            #expect(midLoad >= 2, "sessions terminated mid-load only \(midLoad) times")
            #expect(verdicts.read(seconds: 120) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            try LiveStack.FaultInjectionTests().expectDecidedOnce(stream, verdicts, assertions: 12, String(worker.log.suffix(1500)))
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(!dead.read(seconds: 2) { !$0.isEmpty }, "jobs were dead-lettered")
            #expect(worker.process.isRunning)
        }

        /// Guarantee: lock and statement timeouts (55P03, 57014) are retried, not dead-lettered. The worker's
        /// role gets a short timeout and its sessions are replaced; a test session holds a row the batch
        /// writes, so every attempt times out, /readyz says so, and the job is stored once the row is free.
        @Test(arguments: [("lock_timeout", "55", "lock not available (55P03)"), ("statement_timeout", "57", "statement timeout or cancel (57014)")])
        func timeoutsAreRetriedNotDeadLettered(setting: String, sqlClass: String, reason: String) throws {
            let topics = try Stack.topics("timeout", partitions: 1)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "\(worker.log.suffix(1500))")
            let jobId = "to-\(UUID().uuidString.prefix(8).lowercased())"
            let admin = try DatabaseFaults.admin()
            do {
                defer {
                    // Outside the held transaction, which an early failure leaves open (and would undo the reset).
                    _ = try? admin.execute("ROLLBACK")
                    _ = try? admin.execute("ALTER ROLE current_user RESET \(setting)")
                }
                try admin.execute("ALTER ROLE current_user SET \(setting) = '300ms'")
                try DatabaseFaults.terminateWorkerSessions(admin)
                try admin.execute("BEGIN")
                try DatabaseFaults.holdVerdict(jobId, admin)
                try produce(topics.jobs, [(nil, DatabaseFaults.invalidJob(jobId))])
                #expect(worker.waitFor(body: reason, seconds: 30), "\(worker.log.suffix(2000))")
                #expect(try eventually(seconds: 20) { try worker.retries(sqlClass) >= 3 }, "\(worker.log.suffix(2000))")
                try admin.execute("ROLLBACK")
            }
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob[jobId] != nil }, "\(worker.log.suffix(2000))")
            #expect(verdicts.verdictsByJob[jobId]?.count == 1)
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(!dead.read(seconds: 2) { !$0.isEmpty }, "the timed-out job was dead-lettered")
            #expect(worker.waitFor("/readyz", status: 200, seconds: 20))
        }
    }
}

extension LiveStack {
    /// Database faults of one job or one table never lose a job: a deadlock is retried, and only a job
    /// whose own value PostgreSQL refuses is answered unstorable (and dead-lettered with its jobId), its
    /// neighbours stored as usual. Each is local to the test's schema, so it runs in a lane.
    @Suite struct HardeningDatabaseTests {
        /// Guarantee: a deadlock victim (40P01) is retried, not dead-lettered. A test session holds the second
        /// of a batch's jobId locks in the order the batch takes them (their keys'), waits until the worker's
        /// batch holds the first and waits for the second, then asks for the first: PostgreSQL aborts the
        /// worker's transaction (the test session's deadlock_timeout is longer), and the worker stores both
        /// jobs once the test session lets go.
        @Test func aDeadlockVictimIsRetriedNotDeadLettered() throws {
            let topics = try Stack.topics("deadlock", partitions: 1)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            #expect(worker.waitFor("/readyz", status: 200, seconds: 30), "\(worker.log.suffix(1500))")
            let verdicts = try TopicReader(topic: topics.verdicts)
            var jobIds: [String] = []
            // The two jobs normally share a batch; when they did not, the worker met no cycle: try again.
            var rounds = 0
            while try worker.retries("40") == 0, rounds < 4 {
                rounds += 1
                let id = UUID().uuidString.prefix(8).lowercased()
                let admin = try DatabaseFaults.admin()
                let (first, second) = try DatabaseFaults.inLockOrder("dl-\(id)-a", "dl-\(id)-b", admin)
                jobIds += [first, second]
                try admin.execute("SET deadlock_timeout = '30s'")
                try admin.execute("BEGIN")
                try DatabaseFaults.holdVerdict(second, admin)
                try produce(topics.jobs, [(nil, DatabaseFaults.invalidJob(first)), (nil, DatabaseFaults.invalidJob(second))])
                if try DatabaseFaults.waitForWorkerLockWait(admin, seconds: 20) {
                    try DatabaseFaults.holdVerdict(first, admin)  // closes the cycle; returns once the worker is aborted
                }
                try admin.execute("ROLLBACK")
                #expect(verdicts.read(seconds: 60) { _ in Set(jobIds).isSubset(of: verdicts.verdictsByJob.keys) }, "\(worker.log.suffix(1500))")
            }
            #expect(try worker.retries("40") >= 1, "no deadlock was retried\n\(worker.log.suffix(2000))")
            #expect(worker.log.contains("40P01"))
            for jobId in jobIds {
                let copies = try #require(verdicts.verdictsByJob[jobId], "no verdict for \(jobId)")
                #expect(JSONValue.parse(Array(copies[0].utf8))?["code"] == .string("job_invalid"))
                #expect(JSONValue.parse(Array(copies[0].utf8))?["reason"] != .string("unstorable"))
            }
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(!dead.read(seconds: 2) { !$0.isEmpty }, "the deadlock victim was dead-lettered")
            let stored = try DatabaseFaults.admin().execute("SELECT count(*) FROM verdicts WHERE job_id = ANY($1::text[])", [.array(.text(jobIds))])
            #expect(stored.int(0, 0) == Int64(jobIds.count))
        }

        /// Guarantee: a job whose own value PostgreSQL refuses (a CHECK on the verdict's jobId the test adds,
        /// standing for any value the schema refuses: the job parser bounds what it knows, so a device
        /// fingerprint too long for its index is job_invalid/invalid_field before it reaches the database)
        /// is isolated from its batch and answered: a
        /// job_invalid/unstorable verdict on the verdicts topic keyed like any other with its jobId header, and
        /// a dead letter carrying the jobId. Its neighbours in the same partition and batch are stored as usual.
        @Test func aJobWithAValueThatPostgreSQLRefusesIsAnsweredUnstorableAndItsNeighboursStored() throws {
            let topics = try Stack.topics("unstorable", partitions: 1)
            let stream = try JobStream(devices: 4, assertions: 3)
            try Jobs.registerApp(stream.bundleId)
            let id = UUID().uuidString.prefix(8).lowercased()
            let constraint = "itest_refuse_\(id)"
            let admin = try DatabaseFaults.admin()
            try admin.execute("ALTER TABLE verdicts ADD CONSTRAINT \(constraint) CHECK (job_id NOT LIKE 'refused-\(id)-%') NOT VALID")
            defer { _ = try? admin.execute("ALTER TABLE verdicts DROP CONSTRAINT \(constraint)") }
            let (device, printed) = (try Device(), try Device())
            // Random base64: an index entry holds at most 2704 bytes, and this does not compress below it.
            let fingerprint = Base64.encode((0..<6000).map { _ in UInt8.random(in: 0...255) })
            let printedJob = "fingerprint-\(id)"
            let refused: [(jobId: String, key: [UInt8]?, value: [UInt8])] = [
                ("refused-\(id)-attestation", Array(Base64.encode(device.keyId).utf8),
                 Jobs.attestation(device, bundleId: stream.bundleId, jobId: "refused-\(id)-attestation")),
                ("refused-\(id)-invalid", nil, DatabaseFaults.invalidJob("refused-\(id)-invalid")),
            ]
            var messages = stream.messages
            for (n, job) in refused.enumerated() { messages.insert((job.key, job.value), at: 3 + 5 * n) }
            messages.insert(
                (Array(Base64.encode(printed.keyId).utf8),
                 // Another app's scope, so the stream's own verdicts are counted alone.
                 Jobs.attestation(printed, bundleId: stream.bundleId + ".printed", jobId: printedJob, metadata: [("deviceFingerprint", .string(fingerprint))])),
                at: 13)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            try produce(topics.jobs, messages)

            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(
                verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count + refused.count + 1 },
                "\(worker.log.suffix(2000))")
            try FaultInjectionTests().expectDecidedOnce(stream, verdicts, assertions: 3, String(worker.log.suffix(1500)))
            for job in refused {
                let message = try #require(verdicts.messages.first { $0.headers.contains { $0.name == "jobId" && $0.value == Array(job.jobId.utf8) } })
                let verdict = try #require(JSONValue.parse(message.value))
                #expect(verdict["code"] == .string("job_invalid") && verdict["reason"] == .string("unstorable"), "\(verdict.serialized())")
                #expect(verdict["jobId"] == .string(job.jobId))
                #expect(verdict["ok"] == .bool(false))
                if let key = job.key { #expect(message.key == key, "keyed by keyId like other verdicts") }
                try validate([String(decoding: message.value, as: UTF8.self)], schema: "verdict")
            }
            let dead = try TopicReader(topic: topics.deadLetters)
            #expect(dead.read(seconds: 30) { $0.count >= refused.count })
            #expect(dead.messages.count == refused.count, "only the refused jobs are dead-lettered")
            let deadJobIds = Set(dead.messages.compactMap { $0.headers.first { $0.name == "jobId" }.map { String(decoding: $0.value, as: UTF8.self) } })
            #expect(deadJobIds == Set(refused.map(\.jobId)))
            for letter in dead.messages {
                let json = JSONValue.parse(letter.value)
                #expect(json?["reason"] == .string("job_invalid"))
                guard case .string(let jobId)? = json?["jobId"] else {
                    Issue.record("a dead letter without its jobId")
                    continue
                }
                #expect(deadJobIds.contains(jobId))
            }
            try validate(dead.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "deadletter")
            let devices = try admin.execute("SELECT count(*) FROM devices WHERE key_id = ANY($1::bytea[])", [.array(.bytea([device.keyId, printed.keyId]))])
            #expect(devices.int(0, 0) == 0, "a refused attestation's device was stored")
            let oversize = try #require(verdicts.verdictsByJob[printedJob]?.first.flatMap { JSONValue.parse(Array($0.utf8)) })
            #expect(oversize["code"] == .string("job_invalid") && oversize["reason"] == .string("invalid_field"), "\(oversize.serialized())")
            #expect(!worker.log.contains("54000"), "the oversize fingerprint reached the database")
        }
    }
}

/// The test's own view of the stack's PostgreSQL: an administrator session, and the faults it produces.
enum DatabaseFaults {
    /// A superuser session that writes even while the database defaults to read-only.
    static func admin() throws -> PGConnection {
        let connection = try PGConnection(conninfo: try Stack.databaseURL, applicationName: "itest-admin")
        try connection.execute("SET default_transaction_read_only = off")
        return connection
    }

    /// Makes every new transaction read-only (as on a standby), or lifts it, for every session.
    static func setReadOnly(_ on: Bool, _ admin: PGConnection) throws {
        try admin.execute(on ? "ALTER SYSTEM SET default_transaction_read_only = on" : "ALTER SYSTEM RESET default_transaction_read_only")
        try admin.execute("SELECT pg_reload_conf()")
    }

    /// Terminates the worker processes' sessions (their application names start with attest-worker);
    /// returns how many.
    @discardableResult
    static func terminateWorkerSessions(_ admin: PGConnection) throws -> Int {
        let rows = try admin.execute(
            """
            SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE application_name LIKE 'attest-worker%' AND pid <> pg_backend_pid()
            """)
        return Int(rows.int(0, 0) ?? 0)
    }

    /// Inserts a verdict row for `jobId` in the admin's open transaction: a worker writing that jobId waits.
    static func holdVerdict(_ jobId: String, _ admin: PGConnection) throws {
        // Under the jobId's lock, as a batch takes it (VerdictsTable.BatchLocks, migration 0013).
        try admin.execute("SELECT pg_advisory_xact_lock(hashtextextended('//' || $1, 0))", [.text(jobId)])
        try admin.execute(
            // The scope of a job naming no valid app (``invalidJob``'s): the row the worker's insert waits for.
            """
            INSERT INTO verdicts (team_id, bundle_id, job_id, ok, verdict_json, decided_at) VALUES ('', '', $1, false, '{}', now())
            ON CONFLICT DO NOTHING
            """,
            [.text(jobId)])
    }

    /// The two jobIds (of ``invalidJob``'s scope) in the order a batch takes their locks: their keys'.
    static func inLockOrder(_ a: String, _ b: String, _ admin: PGConnection) throws -> (String, String) {
        let rows = try admin.execute("SELECT hashtextextended('//' || $1, 0) < hashtextextended('//' || $2, 0)", [.text(a), .text(b)])
        let ordered = try #require(rows.bool(0, 0) as Bool?)
        return ordered ? (a, b) : (b, a)
    }

    /// Waits until a worker session waits for a lock `admin` holds (not any lock: another lane's tests hold
    /// their own); false after `seconds`. `admin` may be inside a transaction, where PostgreSQL keeps the
    /// first view of pg_stat_activity: each poll clears it.
    static func waitForWorkerLockWait(_ admin: PGConnection, seconds: Double) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            try admin.execute("SELECT pg_stat_clear_snapshot()")
            let rows = try admin.execute(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE application_name LIKE 'attest-worker%' AND pg_backend_pid() = ANY(pg_blocking_pids(pid))
                """)
            if rows.int(0, 0) ?? 0 > 0 { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    /// A job with a usable jobId and unusable fields: decided job_invalid and stored like any other.
    static func invalidJob(_ jobId: String) -> [UInt8] {
        Array(#"{"jobId":"\#(jobId)","kind":"assertion","teamId":7}"#.utf8)
    }
}

extension WorkerProcess {
    /// Polls /readyz until its body contains `text`; false after `seconds`.
    func waitFor(body text: String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? get("/readyz").body.contains(text)) == true { return true }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return false
    }

    /// `attest_db_retries_total` for one SQLSTATE class, from /metrics: the one series read by its line, so
    /// that these tests need no Prometheus parser installed.
    func retries(_ sqlClass: String) throws -> Double {
        let prefix = #"attest_db_retries_total{class="\#(sqlClass)"} "#
        let line = try get("/metrics").body.split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Double($0.dropFirst(prefix.count)) } ?? 0
    }
}
