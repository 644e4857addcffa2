import AttestCore
import AttestVerifier
import Foundation
import Observability
import Synchronization
import Testing
@testable import Worker

/// The status list refresher against the ops/stack PostgreSQL and a local stand-in of Google's endpoint,
/// with a manual clock: one worker fetches for all (the others load what it stored), a fetch is due again
/// only after the refresh interval, a failed fetch keeps the list and is retried, a list that does not
/// parse is never stored, a list from a file is stored at start unless a newer one is, and the age is
/// exported.
@Suite(.serialized) struct AndroidStatusListRefresherTests {
    static let start = Timestamp(microseconds: 1_796_000_000_000_000)

    /// Google's endpoint, answering what the test sets, counting requests.
    final class StandIn: Sendable {
        final class State: Sendable {
            let answer = Mutex<(status: Int, body: [UInt8])>((200, Array(#"{"entries":{"2c8cdddfd5e03bfc":{"status":"REVOKED"}}}"#.utf8)))
            let requests = Atomic<Int>(0)
        }

        let state = State()
        let server: HTTPServer
        let port: Int

        init() throws {
            var routes = HTTPRoutes()
            let state = self.state
            routes.add("GET", "/status") { _ in
                state.requests.add(1, ordering: .relaxed)
                let (status, body) = state.answer.withLock { $0 }
                return HTTPResponse(status: status, contentType: "application/json", body: body)
            }
            server = HTTPServer(configuration: .init(address: try HTTPAddress(parsing: "127.0.0.1:0")), routes: routes)
            try server.start()
            port = server.port ?? 0
        }

        var url: String { "http://127.0.0.1:\(port)/status" }
        var count: Int { state.requests.load(ordering: .relaxed) }

        func answer(_ status: Int, _ body: String) { state.answer.withLock { $0 = (status, Array(body.utf8)) } }

        deinit { server.stop() }
    }

    /// A migrated schema of its own, with its URL for the refresher's own connection.
    typealias Database = ReceiptRefreshStoreTests.Database

    static func refresher(
        _ database: Database, url: String?, clock: ManualClock, metrics: MetricsRegistry = MetricsRegistry(),
        file: (path: String, body: String, modifiedAt: Timestamp)? = nil
    ) -> AndroidStatusListRefresher {
        var settings = AndroidStatusListRefresher.Settings()
        settings.url = url
        settings.file = file.map { ($0.path, Array($0.body.utf8), try! AndroidStatusList(json: Array($0.body.utf8)), $0.modifiedAt) }
        settings.refreshSeconds = 3600
        settings.retrySeconds = 300
        settings.maxAgeSeconds = 7200
        return AndroidStatusListRefresher(conninfo: database.url, settings: settings, clock: clock, metrics: metrics, logger: Logger(level: .error))
    }

    static func serial(_ hex: String) -> [UInt8] { Hex.decode(hex)! }

    @Test func oneWorkerFetchesForAllAndTheOthersLoadWhatItStored() throws {
        let database = try Database()
        let google = try StandIn()
        let clock = ManualClock(Self.start)
        let metrics = MetricsRegistry()
        let first = Self.refresher(database, url: google.url, clock: clock, metrics: metrics)
        let second = Self.refresher(database, url: google.url, clock: clock)
        first.round()
        second.round()
        #expect(google.count == 1)
        for worker in [first, second] {
            let held = try #require(worker.lists.current)
            #expect(held.list.status(ofSerial: Self.serial("2c8cdddfd5e03bfc")) == "REVOKED")
            #expect(held.fetchedAt == Self.start && held.source == google.url)
        }
        // Not due again until the refresh interval has passed, whoever's round it is.
        clock.advance(seconds: 3599)
        first.round()
        second.round()
        #expect(google.count == 1)
        #expect(metrics.render().contains("attest_android_status_list_age_seconds 3599\n"))
        #expect(metrics.render().contains("attest_android_status_list_entries 1\n"))
        // Due: one of them fetches the new list, the other loads it.
        google.answer(200, #"{"entries":{"1":{"status":"SUSPENDED"},"ff":{"status":"REVOKED"}}}"#)
        clock.advance(seconds: 1)
        second.round()
        first.round()
        #expect(google.count == 2)
        #expect(first.lists.current?.list.entries.count == 2 && second.lists.current?.list.entries.count == 2)
        #expect(first.lists.current?.list.status(ofSerial: [0x00, 0xff]) == "REVOKED")
    }

    @Test func aFailedFetchKeepsTheListAndIsRetried() throws {
        let database = try Database()
        let google = try StandIn()
        let clock = ManualClock(Self.start)
        let metrics = MetricsRegistry()
        let worker = Self.refresher(database, url: google.url, clock: clock, metrics: metrics)
        worker.round()
        let stored = try #require(worker.lists.current)
        for answer in [(503, ""), (200, #"{"entries":{"not hex":{}}}"#), (200, "not json")] {
            google.answer(answer.0, answer.1)
            clock.advance(seconds: 3600)
            worker.round()
            #expect(worker.lists.current?.sha256 == stored.sha256, "\(answer.0)")
            // Retried after retrySeconds, not at the next round.
            let fetched = google.count
            clock.advance(seconds: 299)
            worker.round()
            #expect(google.count == fetched)
        }
        #expect(metrics.render().contains(#"attest_android_status_list_fetches_total{outcome="failed"} 3"#))
        #expect(metrics.render().contains("attest_android_status_list_age_seconds 11697\n"))
        // The first fetch after the failures stores the list again: its age starts over.
        google.answer(200, #"{"entries":{}}"#)
        clock.advance(seconds: 1)
        worker.round()
        #expect(worker.lists.current?.list.entries.isEmpty == true)
        #expect(metrics.render().contains("attest_android_status_list_age_seconds 0\n"))
    }

    @Test func aListFromAFileIsStoredAtStartUnlessANewerOneIs() throws {
        let database = try Database()
        let clock = ManualClock(Self.start)
        let body = #"{"entries":{"abc":{"status":"REVOKED"}}}"#
        let old = Self.refresher(database, url: nil, clock: clock, file: ("/etc/list.json", body, Self.start.adding(seconds: -86_400)))
        old.round()
        #expect(old.lists.current?.source == "file:/etc/list.json")
        #expect(old.lists.current?.fetchedAt == Self.start.adding(seconds: -86_400))
        // A worker started later with an older file keeps the newer stored list.
        let older = Self.refresher(
            database, url: nil, clock: clock, file: ("/etc/older.json", #"{"entries":{}}"#, Self.start.adding(seconds: -90_000)))
        older.round()
        #expect(older.lists.current?.source == "file:/etc/list.json")
        #expect(older.lists.current?.list.status(ofSerial: Self.serial("0abc")) == "REVOKED")
        // Without a URL nothing is fetched, and no list stored means none held and an infinite age.
        let empty = try Database()
        let metrics = MetricsRegistry()
        let none = Self.refresher(empty, url: nil, clock: clock, metrics: metrics)
        none.round()
        #expect(none.lists.current == nil)
        #expect(metrics.render().contains("attest_android_status_list_age_seconds +Inf\n"))
    }
}
