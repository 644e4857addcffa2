import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Testing
@testable import DeviceIntelligence
@testable import Store
@testable import Worker

/// The events outbox (migration 0009) against the ops/stack PostgreSQL: the event JSON and its ids, the
/// commit writing each event once with its cause, the grace check by the clock, and the claim, mark and
/// purge the publisher runs.
@Suite struct EventOutboxTests {
    typealias Database = AttestStoreTests.Database
    static let now = AttestStoreTests.now
    static let device = AppDevice(teamId: "TEAM", bundleId: "app", identity: DeviceIdentity(stored: "key:aa"))

    // MARK: ids and JSON

    @Test func eventIdsAreDeterministicAndTellEveryCauseApart() {
        let id = OutboxEvent.eventId(.quotaWarning, ["TEAM", "app", "2026-05"])
        #expect(id == OutboxEvent.eventId(.quotaWarning, ["TEAM", "app", "2026-05"]))
        #expect(id.count == 64 && id.allSatisfy { "0123456789abcdef".contains($0) })
        let others = [
            OutboxEvent.eventId(.quotaReached, ["TEAM", "app", "2026-05"]),
            OutboxEvent.eventId(.quotaWarning, ["TEAM", "app", "2026-06"]),
            OutboxEvent.eventId(.quotaWarning, ["TEAM", "app2", "2026-05"]),
            // Fields are length-prefixed: moving a boundary between fields is another cause.
            OutboxEvent.eventId(.quotaWarning, ["TEA", "Mapp", "2026-05"]),
            OutboxEvent.eventId(.quotaWarning, ["TEAM", "app\n4:2026-05"]),
            OutboxEvent.eventId(.quotaWarning, ["TEAM", "app", "2026-05", ""]),
        ]
        #expect(Set(others + [id]).count == others.count + 1)
    }

    @Test func theEventJSONIsTheCommonMembersThenTheDetail() {
        let event = OutboxEvent(
            eventId: "ab", kind: .riskCategoryChanged, partitionKey: "TEAM.app/key:aa", teamId: "TEAM", bundleId: "app",
            occurredAt: Timestamp(microseconds: 1_777_000_000_250_000), detail: [("from", .string("trusted")), ("to", .string("blocked"))])
        #expect(
            event.json.serialized()
                == #"{"eventId":"ab","kind":"device.risk_category_changed","teamId":"TEAM","bundleId":"app","occurredAt":"2026-04-24T03:06:40.250Z","from":"trusted","to":"blocked"}"#
        )
        #expect(OutboxEvent.appKey(teamId: "TEAM", bundleId: "app") == "TEAM.app")
        #expect(OutboxEvent.deviceKey(teamId: "TEAM", bundleId: "app", identity: "key:aa") == "TEAM.app/key:aa")
    }

    @Test func theSQLEventIdIsTheSwiftOne() throws {
        let db = try Database()
        for fields in [["TEAM", "app", "2026-05"], ["T", "é😀", ""], ["a\nb", "3:x"]] {
            let sql = EventsTable.eventIdSQL(kind: "$1::text", (0..<fields.count).map { "$\($0 + 2)::text" })
            let rows = try db.connection.execute("SELECT \(sql)", [.text(EventKind.graceEnded.rawValue)] + fields.map(PGValue.text))
            #expect(rows.string(0, 0) == OutboxEvent.eventId(.graceEnded, fields), "\(fields)")
        }
    }

    // MARK: the commit

    static func counting(_ jobId: String, identity: String) -> Decision {
        var decision = AttestStoreTests.decision(jobId, .none)
        let device = AppDevice(teamId: "TEAM", bundleId: "app", identity: DeviceIdentity(stored: identity))
        decision.intelligence = IntelligenceChange(
            device: device, month: now.utcMonth, event: DeviceEvent(Verdict(job: nil, verifiedAt: now), newKey: false), deviceId: "d",
            assessment: RiskAssessment(score: 0, factors: []), writesRisk: false, countsAsActive: true, keyId: nil)
        return decision
    }

    static func scored(_ jobId: String, score: Int) -> Decision {
        var decision = AttestStoreTests.decision(jobId, .none)
        decision.intelligence = IntelligenceChange(
            device: device, month: now.utcMonth, event: DeviceEvent(Verdict(job: nil, verifiedAt: now), newKey: false), deviceId: "d",
            assessment: RiskAssessment(score: score, factors: []), writesRisk: true, countsAsActive: false, keyId: nil)
        return decision
    }

    static func events(_ db: Database) throws -> [OutboxEvent] {
        try db.connection.execute(EventsTable.Claim(limit: 1000)).sorted { ($0.occurredAt, $0.kind.rawValue) < ($1.occurredAt, $1.kind.rawValue) }
    }

    @Test func crossingsWriteTheirEventsOnceAndRedeliveriesNone() throws {
        let db = try Database()
        try db.store.upsert(AppPolicy(teamId: "TEAM", bundleId: "app", madLimit: 2, graceDays: 3))
        _ = try db.store.commit([Self.counting("c-1", identity: "key:01")])
        #expect(try Self.events(db).isEmpty)
        let batch = [Self.counting("c-2", identity: "key:02"), Self.counting("c-3", identity: "key:03")]
        _ = try db.store.commit(batch)
        _ = try db.store.commit(batch)  // redelivered: its verdicts exist, so nothing is counted or written
        _ = try db.store.commit([Self.counting("c-4", identity: "key:04")])  // over the limit: no new crossing
        let events = try Self.events(db)
        #expect(events.map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.graceStarted, .quotaReached, .quotaWarning])
        let month = Self.now.utcMonth
        for event in events {
            #expect(event.eventId == OutboxEvent.eventId(event.kind, ["TEAM", "app", month]))
            #expect(event.partitionKey == "TEAM.app" && event.occurredAt == Self.now)
            let json = event.json
            #expect(json["month"] == .string(month) && json["limit"] == .int(2))
        }
        let started = try #require(events.first { $0.kind == .graceStarted }).json
        // The batch took the count from 1 to 3: the crossing records the count it reached.
        #expect(started["graceDays"] == .int(3) && started["devices"] == .int(3))
        #expect(started["graceEndsAt"].flatMap(\.stringValue).flatMap(Timestamp.init(rfc3339:)) == Self.now.adding(seconds: 3 * 86_400))
        #expect(events.first { $0.kind == .quotaWarning }?.json["threshold"] == .int(80))
    }

    @Test func aCategoryChangeIsWrittenOnceAndAnUnchangedCategoryNever() throws {
        let db = try Database()
        _ = try db.store.commit([Self.scored("r-1", score: 5)])  // a new device, trusted: no change
        #expect(try Self.events(db).isEmpty)
        // One batch: to suspicious, a score within suspicious, then to blocked.
        let batch = [Self.scored("r-2", score: 40), Self.scored("r-3", score: 50), Self.scored("r-4", score: 90)]
        _ = try db.store.commit(batch)
        _ = try db.store.commit(batch)
        _ = try db.store.commit([Self.scored("r-5", score: 0)])  // back to trusted
        let events = try Self.events(db)
        #expect(events.map { $0.json["jobId"] } == [.string("r-2"), .string("r-4"), .string("r-5")])
        #expect(events.map { [$0.json["from"], $0.json["to"]] } == [
            [.string("trusted"), .string("suspicious")], [.string("suspicious"), .string("blocked")],
            [.string("blocked"), .string("trusted")],
        ])
        #expect(events.allSatisfy { $0.kind == .riskCategoryChanged && $0.partitionKey == "TEAM.app/key:aa" })
        #expect(events[1].eventId == OutboxEvent.eventId(.riskCategoryChanged, ["TEAM", "app", "key:aa", "r-4"]))
        #expect(events[1].json["score"] == .int(90) && events[1].json["identity"] == .string("key:aa"))
    }

    @Test func aNewDeviceFirstScoredSuspiciousIsAChange() throws {
        let db = try Database()
        _ = try db.store.commit([Self.scored("n-1", score: 30)])
        #expect(try Self.events(db).map { $0.json["from"] } == [.string("trusted")])
    }

    // MARK: the publisher's statements

    @Test func graceEndsByTheClockOnceEvenAfterItsEventIsPurged() throws {
        let db = try Database()
        try db.store.upsert(AppPolicy(teamId: "TEAM", bundleId: "app", madLimit: 1, graceDays: 2))
        _ = try db.store.commit([Self.counting("g-1", identity: "key:01")])
        let end = Self.now.adding(seconds: 2 * 86_400)
        #expect(try db.connection.execute(EventsTable.GraceEnded(now: end.adding(seconds: -1), limit: 10)) == 0)
        #expect(try db.connection.execute(EventsTable.GraceEnded(now: end, limit: 10)) == 1)
        #expect(try db.connection.execute(EventsTable.GraceEnded(now: end.adding(seconds: 9), limit: 10)) == 0)
        let ended = try #require(try Self.events(db).first { $0.kind == .graceEnded })
        #expect(ended.occurredAt == end && ended.json["month"] == .string(Self.now.utcMonth))
        #expect(ended.eventId == OutboxEvent.eventId(.graceEnded, ["TEAM", "app", Self.now.utcMonth]))
        let all = try Self.events(db).map(\.eventId)
        #expect(try db.connection.execute(EventsTable.MarkPublished(all, now: end)) == all.count)
        #expect(try db.connection.execute(EventsTable.Purge(before: end.adding(seconds: 1), limit: 100)) == all.count)
        #expect(try db.connection.execute(EventsTable.GraceEnded(now: end.adding(seconds: 86_400), limit: 10)) == 0)
        #expect(try Self.events(db).isEmpty)
    }

    @Test func aClaimSkipsRowsAnotherHoldsAndPublishedRowsAreNotClaimed() throws {
        let db = try Database()
        let events = (0..<4).map { n in
            OutboxEvent(
                eventId: OutboxEvent.eventId(.deviceRevoked, ["\(n)"]), kind: .deviceRevoked, partitionKey: "k", teamId: "TEAM",
                bundleId: "app", occurredAt: Self.now, detail: [("identity", .string("key:0\(n)"))])
        }
        try db.connection.execute(EventsTable.Insert(events))
        try db.connection.execute(EventsTable.Insert(events))  // the same causes again: nothing more
        let url = try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"])
        let other = try PGConnection(conninfo: url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(db.schema)")
        try other.execute("BEGIN")
        let held = try other.execute(EventsTable.Claim(limit: 3))
        #expect(held.count == 3)
        let rest = try db.connection.transaction { c throws(PGError) in try c.execute(EventsTable.Claim(limit: 10)) }
        #expect(rest.count == 1 && !held.map(\.eventId).contains(rest[0].eventId))
        #expect(try other.execute(EventsTable.MarkPublished(held.map(\.eventId), now: Self.now)) == 3)
        try other.execute("COMMIT")
        #expect(try Self.events(db).map(\.eventId) == rest.map(\.eventId))
        #expect((held + rest).map(\.eventId).sorted() == events.map(\.eventId).sorted())
        #expect(held.allSatisfy { events.contains($0) })
        #expect(try db.connection.execute(EventsTable.Purge(before: Self.now, limit: 10)) == 0)  // published at now, not before
    }
}
