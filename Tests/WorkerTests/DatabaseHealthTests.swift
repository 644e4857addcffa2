import Observability
import PostgresClient
import Synchronization
import Testing
import Worker

@Suite("Database health: readiness, retries and outage logs")
struct DatabaseHealthTests {
    /// A monotonic reading the test moves.
    final class TestClock: Sendable {
        let reading = Mutex<Duration>(.zero)
    }

    /// A DatabaseHealth on a clock the test moves.
    final class Fixture: Sendable {
        let readiness = Readiness.Conditions()
        let registry = MetricsRegistry()
        let retries: Counter
        let clock = TestClock()
        let health: DatabaseHealth

        init() {
            retries = registry.counter("r_total", help: "h", labelNames: ["class"])
            let clock = self.clock
            health = DatabaseHealth(readiness: readiness, retries: retries, reminderInterval: .seconds(30), now: { clock.reading.withLock { $0 } })
            // Only the postgres condition is under test.
            readiness.markReady(.migrations)
            readiness.markReady(.broker)
        }

        func advance(_ duration: Duration) { clock.reading.withLock { $0 += duration } }
    }

    static let readOnly = PGError(code: .server, sqlState: "25006", message: "cannot execute INSERT in a read-only transaction")
    static let deadlock = PGError(code: .server, sqlState: "40P01", message: "deadlock detected")
    static let lost = PGError(code: .connectionLost, message: "server closed the connection", isConnectionLost: true)

    @Test("a failing writer makes readiness unmet with the reason until its work goes through")
    func readinessFollowsTheWriters() {
        let f = Fixture()
        f.health.probed(nil)
        #expect(f.readiness.check() == nil)
        _ = f.health.failed(Self.readOnly, writer: "lane-0")
        #expect(f.readiness.check() == "postgres: read-only (25006)")
        // The probe's SELECT still works on a read-only database: it must not clear the writer's failure.
        f.health.probed(nil)
        #expect(f.readiness.check() == "postgres: read-only (25006)")
        _ = f.health.failed(Self.deadlock, writer: "lane-1")
        #expect(f.health.recovered(writer: "lane-0") == nil, "lane-1 still fails")
        #expect(f.readiness.check() == "postgres: deadlock (40P01)")
        #expect(f.health.recovered(writer: "lane-1") != nil)
        #expect(f.readiness.check() == nil)
        f.health.probed(.unreachable)
        #expect(f.readiness.check() == "postgres: unreachable")
    }

    @Test("an outage is logged once, then reminded every interval, and its end reported with the totals")
    func logsOncePerOutageWithReminders() {
        let f = Fixture()
        #expect(f.health.failed(Self.lost, writer: "lane-0") == .started)
        var reports: [DatabaseHealth.Report] = []
        for _ in 0..<100 {  // 100 retries over 50 s
            f.advance(.milliseconds(500))
            if let report = f.health.failed(Self.readOnly, writer: "lane-0") { reports.append(report) }
        }
        #expect(reports == [.ongoing(retries: 61, seconds: 30)])
        let outage = f.health.recovered(writer: "lane-0")
        #expect(outage?.retries == 101 && outage?.seconds == 50)
        // A writer that did not fail has nothing to recover from.
        #expect(f.health.recovered(writer: "lane-0") == nil)
        // The next outage starts afresh.
        #expect(f.health.failed(Self.deadlock, writer: "lane-0") == .started)
    }

    @Test("retries are counted by SQLSTATE class")
    func retriesCountedByClass() {
        let f = Fixture()
        _ = f.health.failed(Self.readOnly, writer: "a")
        _ = f.health.failed(Self.readOnly, writer: "a")
        _ = f.health.failed(Self.deadlock, writer: "b")
        _ = f.health.failed(Self.lost, writer: "b")
        #expect(f.retries.labels(["25"]).value == 2)
        #expect(f.retries.labels(["40"]).value == 1)
        #expect(f.retries.labels(["connection"]).value == 1)
    }
}
