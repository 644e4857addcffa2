import AppleReceipts
import AttestCore
import Observability
import Testing
@testable import Store
@testable import Worker

/// A team Apple refused is a `/readyz` advisory, not a condition: set when the refresher pauses the team,
/// shown by every worker from the pause in PostgreSQL, gone when the pause ends or a refresh of the team
/// succeeds; the conditions never change.
@Suite(.serialized) struct ReceiptRefusalAdvisoryTests {
    typealias Store = ReceiptRefreshStoreTests
    static let now = Store.now
    static let pause = RefreshSchedule().misconfiguredPauseSeconds

    static func refused(_ status: Int, until: Timestamp = now.adding(seconds: pause), team: String = "TEAM") -> Readiness.Advisory {
        .receiptRefreshRefused(team: team, status: status, pausedUntil: until)
    }

    @Test func aRefusalIsNotedByEveryWorkerUntilThePauseEnds() throws {
        let db = try Store.Database()
        try db.addDevice(1)
        try db.addDevice(2, team: "GOOD")
        let clock = ManualClock(Self.now)
        let (mine, theirs) = (Readiness.Conditions(), Readiness.Conditions())
        for conditions in [mine, theirs] { for c in Readiness.Condition.allCases { conditions.markReady(c) } }
        let apple = Store.FakeApple([.misconfigured(status: 401, reason: "unauthorized")], teams: ["TEAM", "GOOD"])
        let registry = MetricsRegistry()
        let a = Store.refresher(db, apple, clock: clock, readiness: mine, registry: registry)
        let b = Store.refresher(db, apple, clock: clock, readiness: theirs)
        a.round()
        #expect(try db.value("SELECT team_id FROM receipt_refresh_teams") == "TEAM")
        #expect(mine.advisories == [Self.refused(401)])
        // The gauge counts the team as soon as the note shows, not from the next round.
        #expect(registry.render().contains("attest_receipt_refresh_teams_paused 1\n"))
        #expect(mine.advisoryTexts() == ["receipt refresh: team TEAM refused by Apple (401), paused until \(Self.now.adding(seconds: Self.pause).rfc3339)"])
        // The jobs' path is untouched: still ready.
        #expect(mine.check() == nil)
        // Another worker shows it from PostgreSQL at its next round, and keeps one note for the team.
        b.round()
        b.round()
        #expect(theirs.advisories == [Self.refused(401)])
        #expect(theirs.check() == nil)
        // The pause over, both notes go at the next round.
        clock.advance(seconds: Self.pause)
        a.round()
        b.round()
        #expect(mine.advisories.isEmpty)
        #expect(theirs.advisories.isEmpty)
    }

    @Test func aSuccessfulRefreshOfTheTeamEndsThePauseAndItsNotes() throws {
        let db = try Store.Database()
        try db.addDevice(1)
        let clock = ManualClock(Self.now)
        let (mine, theirs) = (Readiness.Conditions(), Readiness.Conditions())
        let apple = Store.FakeApple([.misconfigured(status: 403, reason: "forbidden"), .refreshed(Store.receipt(metric: 2))])
        let registry = MetricsRegistry()
        let a = Store.refresher(db, apple, clock: clock, readiness: mine, registry: registry)
        let b = Store.refresher(db, apple, clock: clock, readiness: theirs)
        a.round()
        #expect(registry.render().contains("attest_receipt_refresh_teams_paused 1\n"))
        // The team paused: its device attested since is not sent.
        try db.addDevice(2)
        b.round()
        #expect(apple.calls == 1)
        #expect(theirs.advisories == [Self.refused(403)])
        // The key fixed, an operator's forced refresh (`attest-worker receipt refresh`) of one device succeeds.
        clock.advance(seconds: 60)
        let device = try #require(
            try db.store().leaseRefresh(keyId: Store.Database.key(2), teamId: nil, bundleId: nil, owner: a.owner, now: clock.now(), leaseSeconds: 300))
        let report = try a.refresh(device, forced: true)
        #expect(report.next.status == .refreshed)
        #expect(mine.advisories.isEmpty)
        #expect(registry.render().contains("attest_receipt_refresh_teams_paused 0\n"))
        #expect(try db.store().pausedRefreshTeams(now: clock.now()).isEmpty)
        b.round()
        #expect(theirs.advisories.isEmpty)
    }
}
