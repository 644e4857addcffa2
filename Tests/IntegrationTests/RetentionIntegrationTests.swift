import AttestCore
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// Issue 14's "Retention works under load": a real worker with 10-second partitions (the least the
    /// setting allows) and a 20-second retention (the least a 10-second job age allows), in a database schema of its own (its maintenance manages that schema's tables only), runs
    /// across partition boundaries: old partitions are dropped with their rows, redeliveries inside the
    /// window get their stored verdicts byte for byte, and nothing newer is lost.
    @Suite struct RetentionIntegrationTests {
        /// A schema of its own and the database URL that selects it.
        static func schema() throws -> (name: String, url: String, admin: PGConnection) {
            let name = "retention_it_\(UInt32.random(in: 0...UInt32.max))"
            let admin = try PGConnection(conninfo: try Stack.databaseURL)
            try admin.execute("CREATE SCHEMA \(name)")
            let url = try Stack.databaseURL
            return (name, url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(name)", admin)
        }

        static func count(_ c: PGConnection, _ table: String, jobs: [String]) throws -> Int64 {
            try #require(try c.execute("SELECT count(*) FROM \(table) WHERE job_id = ANY($1::text[])", [.array(.text(jobs))]).int(0, 0))
        }

        /// One device's attestation and `assertions` assertions.
        static func stream(_ bundleId: String, assertions: Int) throws -> (jobs: [(key: [UInt8]?, value: [UInt8])], ids: [String]) {
            let device = try Device()
            let key = Array(Base64.encode(device.keyId).utf8)
            var jobs = [(key: [UInt8]?, value: [UInt8])]()
            var ids = ["att-\(bundleId)"]
            jobs.append((key, Jobs.attestation(device, bundleId: bundleId, jobId: ids[0])))
            for n in 1...assertions {
                ids.append("asr-\(bundleId)-\(n)")
                jobs.append((key, Jobs.assertion(device, bundleId: bundleId, jobId: ids[n], counter: UInt32(n))))
            }
            return (jobs, ids)
        }

        @Test func oldPartitionsAreDroppedRedeliveriesInsideTheWindowGetTheirStoredVerdictsAndNothingNewerIsLost() throws {
            let (schema, url, admin) = try Self.schema()
            defer { _ = try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
            let topics = try Stack.topics("retention")
            let worker = try WorkerProcess(
                topics: topics, group: "retention-\(UUID().uuidString)",
                extra: [
                    "ATTEST_DATABASE_URL": url, "ATTEST_ADMIT_UNKNOWN_APPS": "true", "ATTEST_DEFAULT_ENVIRONMENTS": "any",
                    "ATTEST_PARTITION_WIDTH": "10s", "ATTEST_MAX_JOB_AGE": "10", "ATTEST_VERDICT_RETENTION": "20s",
                    "ATTEST_RISK_HISTORY_RETENTION": "20s",
                ])
            let reader = try TopicReader(topic: topics.verdicts)
            let c = try PGConnection(conninfo: url)

            // Batch A, then its redelivery inside the window: the same verdicts, decided once.
            let a = try Self.stream("com.example.retention.a\(UInt16.random(in: 0...9999))", assertions: 4)
            try produce(topics.jobs, a.jobs)
            try #require(reader.read(seconds: 60) { _ in a.ids.allSatisfy { reader.verdictsByJob[$0]?.count == 1 } },
                "batch A was not answered: \(worker.log.suffix(2000))")
            let first = reader.verdictsByJob
            #expect(a.ids.allSatisfy { first[$0]?.first?.contains(#""ok":true"#) == true }, "\(first)")
            try produce(topics.jobs, a.jobs)
            try #require(reader.read(seconds: 60) { _ in a.ids.allSatisfy { reader.verdictsByJob[$0]?.count == 2 } },
                "the redelivery of A was not answered: \(worker.log.suffix(2000))")
            for id in a.ids { #expect(reader.verdictsByJob[id]?[1] == first[id]?[0], "\(id) was decided again") }
            #expect(try Self.count(c, "verdicts", jobs: a.ids) == Int64(a.ids.count))

            // Batch B, at least one partition later.
            Thread.sleep(forTimeInterval: 11)  // waits: 11 s, for the next 10-second partition (the least width)
            let b = try Self.stream("com.example.retention.b\(UInt16.random(in: 0...9999))", assertions: 4)
            try produce(topics.jobs, b.jobs)
            try #require(reader.read(seconds: 60) { _ in b.ids.allSatisfy { reader.verdictsByJob[$0]?.count == 1 } },
                "batch B was not answered: \(worker.log.suffix(2000))")

            // A's partitions go once they are wholly older than 20 s; B's rows stay meanwhile.
            // waits: up to 30 s, for A's partition to pass the retention (the least a job age allows)
            let deadline = Date().addingTimeInterval(120)
            var aLeft = Int64(a.ids.count)
            var bLeftWhenAWent: Int64 = -1
            while Date() < deadline {
                aLeft = try Self.count(c, "verdicts", jobs: a.ids)
                if aLeft == 0 {
                    bLeftWhenAWent = try Self.count(c, "verdicts", jobs: b.ids)
                    break
                }
                Thread.sleep(forTimeInterval: 0.25)
            }
            #expect(aLeft == 0, "A's verdicts were not dropped: \(worker.log.suffix(2000))")
            #expect(bLeftWhenAWent == Int64(b.ids.count), "B's verdicts went with A's")
            // No row ever waited in DEFAULT past a round: the worker kept partitions ahead.
            #expect(try c.execute("SELECT count(*) FROM verdicts_default").int(0, 0) == 0)

            // B's redelivery inside its window: its stored verdicts again.
            try produce(topics.jobs, b.jobs)
            try #require(reader.read(seconds: 60) { _ in b.ids.allSatisfy { reader.verdictsByJob[$0]?.count == 2 } },
                "the redelivery of B was not answered: \(worker.log.suffix(2000))")
            for id in b.ids { #expect(reader.verdictsByJob[id]?[1] == reader.verdictsByJob[id]?[0], "\(id) was decided again") }

            let samples = try prometheusSamples(try worker.get("/metrics").body)
            let value = { (name: String, table: String?) in
                samples.first { $0.name == name && (table == nil || $0.labels["table"] == table) }?.value
            }
            for table in ["verdicts", "device_risk_history"] {
                #expect((value("attest_partitions_ahead", table) ?? 0) >= 3)
                // A partition expires every 10 s per table and rounds run every second, one drop each: at most one
                // waits for its round.
                #expect(value("attest_partitions_expired", table).map { $0 <= 1 } == true)
            }
            #expect((value("attest_partition_maintenance_last_success_timestamp_seconds", nil) ?? 0) > Date().timeIntervalSince1970 - 30)
            #expect(value("attest_partition_maintenance_failures_total", nil) ?? 0 == 0)
            #expect(worker.log.contains("\"partition maintenance\""))
        }
    }
}
