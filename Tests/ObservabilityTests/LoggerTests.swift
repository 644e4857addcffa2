import AttestCore
import Synchronization
import Testing
@testable import Observability

/// The logger reads `ts` from the clock it is given, so time is injected here as everywhere else.
@Suite struct LoggerTests {
    @Test func timestampComesFromTheInjectedClock() {
        let lines = Mutex<[String]>([])
        let instant = Timestamp(microseconds: 1_777_000_000_123_456)
        let logger = Logger(level: .info, clock: FixedClock(instant)) { line in lines.withLock { $0.append(line) } }
        logger.info("pinned")
        logger.debug("below the level")
        #expect(lines.withLock { $0 } == [#"{"ts":"2026-04-24T03:06:40.123456Z","level":"info","msg":"pinned"}"# + "\n"])
    }

    @Test func theDefaultClockIsTheWallClock() throws {
        let lines = Mutex<[String]>([])
        let before = SystemClock().now()
        Logger(level: .info) { line in lines.withLock { $0.append(line) } }.info("now")
        let after = SystemClock().now()
        let line = try #require(lines.withLock { $0.first })
        let ts = try #require(line.split(separator: "\"").dropFirst(3).first)
        let logged = try #require(Timestamp(rfc3339: String(ts)))
        #expect(before <= logged && logged <= after)
    }
}
