import Durations
import Foundation
@testable import Observability
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 11 item 9: libmicrohttpd's limits — per-address and total connections, header memory, and the
/// whole-request deadline that an idle timeout does not give.
@Suite("HTTP server limits", .serialized)
struct HTTPLimitsTests {
    static func server(
        connectionLimit: Int = 64, perIP: Int = 0, deadline: Int = 30, idle: Int = 30, maxHeaderBytes: Int = 16 * 1024
    ) throws -> HTTPServer {
        var routes = HTTPRoutes()
        HealthEndpoints.register(on: &routes, metrics: MetricsRegistry(), readiness: { nil })
        routes.add("POST", "/echo") { request in
            .text(200, "\(request.clientAddress) \(request.header("x-probe") ?? "-") \(request.body.count)")
        }
        let server = HTTPServer(
            configuration: .init(
                address: try HTTPAddress(parsing: "127.0.0.1:0"), connectionLimit: connectionLimit, connectionTimeoutSeconds: idle,
                perIPConnectionLimit: perIP, requestDeadlineSeconds: deadline, maxHeaderBytes: maxHeaderBytes),
            routes: routes)
        try server.start()
        return server
    }

    /// Sends `prefix`, then one byte of `trickle` every `every` seconds until the server ends the connection;
    /// returns how long that took (nil when it never did within `limit` seconds).
    static func trickle(port: Int, prefix: String, trickle: String, every: Double, limit: Double) throws -> Double? {
        let fd = try RawHTTP.connect(port: port, timeoutSeconds: 1)
        defer { close(fd) }
        // The continuous clock, as libmicrohttpd's deadline: a step of the wall clock must not move the figure.
        let start = ContinuousClock.now
        RawHTTP.send(fd: fd, Array(prefix.utf8))
        var bytes = Array(trickle.utf8)[...]
        while (ContinuousClock.now - start).timeInterval < limit {
            if let byte = bytes.popFirst() { RawHTTP.send(fd: fd, [byte]) }
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pollfd, 1, Int32(every * 1000)) > 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return (ContinuousClock.now - start).timeInterval }
            }
        }
        return nil
    }

    @Test("a slowloris trickling its headers is cut at the request deadline, although every byte beats the idle timeout")
    func slowHeaders() throws {
        let server = try Self.server(deadline: 1, idle: 30)
        let port = try #require(server.port)
        let cut = try Self.trickle(
            port: port, prefix: "GET /healthz HTTP/1.1\r\nHost: x\r\n", trickle: String(repeating: "X-Slow: aaaa\r\n", count: 100),
            every: 0.2, limit: 6)
        let seconds = try #require(cut, "still open after 6 s")
        #expect(seconds >= 0.9 && seconds < 2.5, "\(seconds) s")
        #expect(server.deadlineCuts.value == 1)
        // The server is fine, and a prompt request is not cut.
        #expect(try RawHTTP.get(port: port, "/healthz").status == 200)
    }

    @Test("a body trickled after complete headers is cut too, before the handler runs")
    func slowBody() throws {
        let server = try Self.server(deadline: 1, idle: 30)
        let port = try #require(server.port)
        let cut = try Self.trickle(
            port: port, prefix: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n", trickle: String(repeating: "b", count: 200),
            every: 0.2, limit: 6)
        let seconds = try #require(cut, "still open after 6 s")
        #expect(seconds < 2.5, "\(seconds) s")
        #expect(server.deadlineCuts.value == 1)
    }

    @Test("one address holds at most the per-IP connections; others are refused until one closes")
    func perIPLimit() throws {
        let server = try Self.server(perIP: 2, deadline: 30)
        let port = try #require(server.port)
        let held = try (0..<2).map { _ in try RawHTTP.connect(port: port) }
        // Accepted, then closed at once by libmicrohttpd: no answer.
        #expect(throws: (any Error).self) { try RawHTTP.get(port: port, "/healthz") }
        close(held[0])
        #expect(RawHTTP.eventuallyGet(port: port, "/healthz") { $0?.status == 200 })
        close(held[1])
    }

    @Test("the total connection limit holds whatever the addresses")
    func totalLimit() throws {
        let server = try Self.server(connectionLimit: 3, deadline: 30)
        let port = try #require(server.port)
        let held = try (0..<3).map { _ in try RawHTTP.connect(port: port) }
        // Refused once the server has taken the held ones in.
        #expect(RawHTTP.eventuallyGet(port: port, "/healthz") { $0 == nil })
        for fd in held { close(fd) }
        #expect(RawHTTP.eventuallyGet(port: port, "/healthz") { $0?.status == 200 })
    }

    @Test("headers past the memory limit are refused without reaching a handler; within it they reach it")
    func headerLimit() throws {
        let server = try Self.server(maxHeaderBytes: 4096)
        let port = try #require(server.port)
        let big = try RawHTTP.exchange(
            port: port, head: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nX-Probe: " + String(repeating: "h", count: 8000) as String)
        #expect([413, 414, 431].contains(big.status), "\(big.status)")
        let many = try RawHTTP.exchange(
            port: port,
            head: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0" + String(repeating: "\r\nX-Many: aaaaaaaaaaaaaaaa", count: 400) as String)
        #expect([413, 414, 431].contains(many.status), "\(many.status)")
        let long = try RawHTTP.get(port: port, "/" + String(repeating: "p", count: 8000) as String)
        #expect([413, 414, 431].contains(long.status), "\(long.status)")
        let fine = try RawHTTP.exchange(port: port, head: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nX-Probe: ok")
        #expect(fine.text == "127.0.0.1 ok 0")
    }
}

/// The deadline bookkeeping on an injected clock: what is cut and when, without waiting.
@Suite struct ConnectionDeadlineTests {
    /// A connected socket pair: the sweep shuts down `[0]`; `[1]` then reads end-of-file.
    static func pair() -> [Int32] {
        var fds: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        return fds
    }

    static func isShutDown(_ fds: [Int32]) -> Bool {
        var pollfd = Glibc.pollfd(fd: fds[1], events: Int16(POLLIN), revents: 0)
        guard poll(&pollfd, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(fds[1], &byte, 1, 0) == 0
    }

    @Test func aRequestIsCutOnceItsDeadlinePassesAndEachAnsweredRequestStartsAFreshOne() throws {
        let cuts = CounterSeries()
        let deadlines = ConnectionDeadlines(deadline: .seconds(10), perNetworkLimit: 8, cuts: cuts)
        defer { deadlines.stop() }
        let (slow, kept, closed) = (Self.pair(), Self.pair(), Self.pair())
        defer { for fd in slow + kept + closed { close(fd) } }
        let t0 = ContinuousClock.now
        let connections = (1...3).map { OpaquePointer(bitPattern: 0x1000 * $0)! }
        deadlines.opened(connections[0], socket: slow[0], address: "192.0.2.1", at: t0)
        deadlines.opened(connections[1], socket: kept[0], address: "192.0.2.2", at: t0)
        deadlines.opened(connections[2], socket: closed[0], address: "192.0.2.3", at: t0)
        // A keep-alive connection answered a request at 9 s: its next request has until 19 s.
        deadlines.requestCompleted(connections[1], at: t0 + .seconds(9))
        // Reported closed: libmicrohttpd may reuse the descriptor, so the sweep must not touch it.
        deadlines.closed(connections[2])

        deadlines.sweep(now: t0 + .seconds(10))
        #expect(!Self.isShutDown(slow), "at the deadline exactly, not yet")
        deadlines.sweep(now: t0 + .seconds(11))
        #expect(Self.isShutDown(slow))
        #expect(!Self.isShutDown(kept))
        #expect(!Self.isShutDown(closed))
        #expect(cuts.value == 1)
        // Cut once, counted once, however many sweeps follow; the kept one goes at its own deadline.
        deadlines.sweep(now: t0 + .seconds(20))
        #expect(Self.isShutDown(kept))
        #expect(!Self.isShutDown(closed))
        #expect(cuts.value == 2)
    }

    /// One IPv6 /64 is one client: its connections past the per-address limit are shut down as they open,
    /// whichever of its addresses they come from, and a slot comes back when one closes.
    @Test func aNetworksConnectionsPastTheLimitAreShutDownAsTheyOpen() throws {
        let deadlines = ConnectionDeadlines(deadline: .seconds(10), perNetworkLimit: 2, cuts: CounterSeries())
        defer { deadlines.stop() }
        let pairs = (0..<4).map { _ in Self.pair() }
        defer { for fd in pairs.flatMap({ $0 }) { close(fd) } }
        let connections = (1...4).map { OpaquePointer(bitPattern: 0x1000 * $0)! }
        #expect(deadlines.opened(connections[0], socket: pairs[0][0], address: "2001:db8:1:2::1"))
        #expect(deadlines.opened(connections[1], socket: pairs[1][0], address: "2001:db8:1:2:ffff::9"))
        #expect(!deadlines.opened(connections[2], socket: pairs[2][0], address: "2001:db8:1:2::77"))
        #expect(Self.isShutDown(pairs[2]) && !Self.isShutDown(pairs[0]) && !Self.isShutDown(pairs[1]))
        // Another network is its own; a closed connection gives its slot back (the refused one too).
        #expect(deadlines.opened(connections[3], socket: pairs[3][0], address: "2001:db8:1:3::1"))
        deadlines.closed(connections[2])
        deadlines.closed(connections[0])
        #expect(deadlines.held(network: "2001:db8:1:2::5") == 1)
    }
}
