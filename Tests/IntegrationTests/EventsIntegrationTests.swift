import AttestCore
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// The events topic end to end (CONTRACT: the events topic): quota crossings, the grace period and risk
    /// category changes published once from the outbox, whatever the redeliveries and workers, and never
    /// lost by a worker killed before it published them.
    @Suite(.serialized) struct EventsIntegrationTests {
        static func bundle() -> String { "com.example.events.\(UUID().uuidString.prefix(8).lowercased())" }

        /// The events of `bundleId` on `reader`'s topic, parsed.
        static func events(_ reader: TopicReader, _ bundleId: String) -> [JSONValue] {
            reader.messages.compactMap { JSONValue.parse($0.value) }.filter { $0["bundleId"] == .string(bundleId) }
        }

        /// Five devices reach a limit of 5 (80% at the fourth, 100% and a grace of 0 days at the fifth);
        /// the first fails three assertions worth 30 points each (suspicious, then blocked).
        static func jobs(_ bundleId: String) throws -> [(key: [UInt8]?, value: [UInt8])] {
            let devices = try (0..<5).map { _ in try Device() }
            var messages = [(key: [UInt8]?, value: [UInt8])]()
            for (d, device) in devices.enumerated() {
                let key = Array(Base64.encode(device.keyId).utf8)
                messages.append((key, Jobs.attestation(device, bundleId: bundleId, jobId: "att-\(bundleId)-\(d)")))
            }
            let key = Array(Base64.encode(devices[0].keyId).utf8)
            for n in 1...3 {
                messages.append(
                    (key, Jobs.assertion(devices[0], bundleId: bundleId, jobId: "bad-\(bundleId)-\(n)", counter: UInt32(n), signer: devices[1])))
            }
            return messages
        }

        static let policy = ["--mad-limit", "5", "--grace-days", "0", "--risk-weights", #"{"failed_assertion": 30}"#]

        /// What the jobs above must publish, one event each: kind and, for risk, from → to.
        static func expectOnce(_ events: [JSONValue], log: String) {
            let kinds = events.compactMap { $0["kind"]?.stringValue }.sorted()
            #expect(
                kinds == [
                    "device.risk_category_changed", "device.risk_category_changed", "mad.grace_ended", "mad.grace_started",
                    "mad.quota_reached", "mad.quota_warning",
                ], "\(kinds)\n\(log.suffix(2000))")
            let ids = events.compactMap { $0["eventId"]?.stringValue }
            #expect(Set(ids).count == ids.count, "an event was published twice")
            let changes = events.filter { $0["kind"] == .string("device.risk_category_changed") }
                .map { "\($0["from"]?.stringValue ?? "")>\($0["to"]?.stringValue ?? "")" }.sorted()
            #expect(changes == ["suspicious>blocked", "trusted>suspicious"])
            #expect(events.allSatisfy { $0["teamId"] == .string(Jobs.teamId) })
        }

        @Test func crossingsAndCategoryChangesArePublishedOnceUnderARedeliveryStormWithTwoWorkers() throws {
            let bundleId = Self.bundle()
            try Jobs.registerApp(bundleId, policy: Self.policy)
            let messages = try Self.jobs(bundleId)
            let topics = try Stack.topics("events")
            let eventsTopic = "\(topics.jobs).events"
            try #require(try Stack.ops("topics", "\(eventsTopic):3") == 0)
            let extra = ["ATTEST_BATCH_SIZE": "4", "ATTEST_EVENTS_TOPIC": eventsTopic]
            // Two consumer groups: both workers decide every copy of every job against one database.
            let first = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: extra)
            let second = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: extra)
            try produce(topics.jobs, messages + messages + messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 120) { $0.count >= 6 * messages.count }, "\(first.log.suffix(1500))")
            try produce(topics.jobs, messages)
            #expect(verdicts.read(seconds: 60) { $0.count >= 8 * messages.count })
            let reader = try TopicReader(topic: eventsTopic)
            reader.read(seconds: 60) { _ in Self.events(reader, bundleId).count >= 6 }
            // Longer than several publisher rounds of both workers: a second copy would show up by then.
            reader.read(seconds: 4) { _ in false }
            let events = Self.events(reader, bundleId)
            Self.expectOnce(events, log: first.log + second.log)
            // Keyed by app, or by device for device events.
            for message in reader.messages {
                guard let event = JSONValue.parse(message.value), event["bundleId"] == .string(bundleId) else { continue }
                let key = String(decoding: message.key ?? [], as: UTF8.self)
                let app = "\(Jobs.teamId).\(bundleId)"
                #expect(key == (event["kind"]?.stringValue?.hasPrefix("mad.") == true ? app : "\(app)/\(event["identity"]?.stringValue ?? "")"))
            }
            try validate(events.map { $0.serialized() }, schema: "event")
            // Marked published once the broker acknowledged the publisher's whole batch, which can be after a
            // reader saw the events.
            let db = try PGConnection(conninfo: try Stack.databaseURL)
            #expect(try eventually(seconds: 30) {
                try db.execute("SELECT count(*) FROM events WHERE bundle_id = $1 AND published_at IS NULL", [.text(bundleId)]).int(0, 0) == 0
            })
        }

        @Test func aWorkerKilledBeforeItPublishedStillGetsItsEventsOutOnRestart() throws {
            let bundleId = Self.bundle()
            try Jobs.registerApp(bundleId, policy: Self.policy)
            let messages = try Self.jobs(bundleId)
            let topics = try Stack.topics("events-kill")
            let group = "g-\(UUID().uuidString)"
            // A topic name the broker refuses: the events are committed with their causes but cannot be published.
            var worker = try WorkerProcess(topics: topics, group: group, extra: ["ATTEST_EVENTS_TOPIC": "no such topic!"])
            try produce(topics.jobs, messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= messages.count }, "\(worker.log.suffix(1500))")
            let db = try PGConnection(conninfo: try Stack.databaseURL)
            let count = "SELECT count(*) FROM events WHERE bundle_id = $1 AND published_at IS NULL"
            let deadline = Date().addingTimeInterval(30)
            while try db.execute(count, [.text(bundleId)]).int(0, 0) ?? 0 < 6, Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
            #expect(try db.execute(count, [.text(bundleId)]).int(0, 0) == 6, "\(worker.log.suffix(1500))")
            // The backlog shows on /metrics (what AttestEventsNotPublished watches), growing while refused.
            let oldest = {
                try prometheusSamples(try worker.get("/metrics").body).first { $0.name == "attest_events_oldest_unpublished_seconds" }?.value
            }
            #expect(try eventually(seconds: 30) { (try oldest() ?? 0) > 0.5 }, "\(worker.log.suffix(1500))")
            worker.kill(SIGKILL)  // waits: the killed member's session timeout (6 s on the test broker) before the next joins
            worker.wait(seconds: 10)

            let eventsTopic = "\(topics.jobs).events"
            try #require(try Stack.ops("topics", "\(eventsTopic):3") == 0)
            worker = try WorkerProcess(topics: topics, group: group, extra: ["ATTEST_EVENTS_TOPIC": eventsTopic])
            let reader = try TopicReader(topic: eventsTopic)
            reader.read(seconds: 60) { _ in Self.events(reader, bundleId).count >= 6 }
            reader.read(seconds: 3) { _ in false }
            let events = Self.events(reader, bundleId)
            Self.expectOnce(events, log: worker.log)
            try validate(events.map { $0.serialized() }, schema: "event")
            #expect(try eventually(seconds: 30) { try db.execute(count, [.text(bundleId)]).int(0, 0) == 0 })
            worker.kill(SIGTERM)
            worker.wait(seconds: 30)
        }
    }
}
