import Foundation
import Observability
import Synchronization
import Testing

/// A started server on a free loopback port with the health routes, an echo route and whatever `extra` adds.
private func startServer(
    readiness: @escaping @Sendable () -> String? = { nil },
    metrics: MetricsRegistry = MetricsRegistry(),
    maxBody: Int = 64 * 1024,
    extra: (inout HTTPRoutes) -> Void = { _ in }
) throws -> HTTPServer {
    var routes = HTTPRoutes()
    HealthEndpoints.register(on: &routes, metrics: metrics, readiness: readiness)
    routes.add("POST", "/echo") { request in
        HTTPResponse(
            status: 200,
            contentType: "application/octet-stream",
            body: request.body,
            headers: [(name: "X-Method", value: request.method)]
        )
    }
    extra(&routes)
    let server = HTTPServer(
        configuration: .init(address: try HTTPAddress(parsing: "127.0.0.1:0"), maxRequestBodyBytes: maxBody),
        routes: routes
    )
    try server.start()
    return server
}

private func port(_ server: HTTPServer) throws -> Int { try #require(server.port) }

/// The socket of this process listening on the port: a stopped server must have closed that very socket.
private func listener(_ port: Int) throws -> String { try #require(RawHTTP.listeningSocket(port: port)) }

/// Serialized: the stop/start tests bind an explicit port just freed, which a parallel test's server
/// could otherwise take first.
@Suite("HTTP server and health endpoints", .serialized)
struct HTTPServerTests {
    @Test("GET /healthz answers 200 ok; HEAD answers the same without a body")
    func healthz() throws {
        let server = try startServer()
        let response = try RawHTTP.get(port: try port(server), "/healthz")
        #expect(response.status == 200)
        #expect(response.text == "ok\n")
        #expect(response.header("Content-Type") == "text/plain; charset=utf-8")
        let head = try RawHTTP.get(port: try port(server), "/healthz", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
    }

    @Test("GET /readyz follows the readiness closure: 200, then 503 with the reason, then 200 again")
    func readyzFlips() throws {
        let readiness = ReadinessConditions<TestCondition, TestReason, TestAdvisory>()
        readiness.markReady(.broker)
        readiness.markReady(.postgres)
        readiness.markReady(.migrations)
        let server = try startServer(readiness: readiness.check)
        let port = try port(server)
        let ready = try RawHTTP.get(port: port, "/readyz")
        #expect(ready.status == 200)
        #expect(ready.text == "ok\n")

        readiness.markNotReady(.postgres, .because("connection refused"))
        let notReady = try RawHTTP.get(port: port, "/readyz")
        #expect(notReady.status == 503)
        #expect(notReady.text == "postgres: connection refused\n")
        // Liveness does not depend on readiness.
        #expect(try RawHTTP.get(port: port, "/healthz").status == 200)

        readiness.markReady(.postgres)
        #expect(try RawHTTP.get(port: port, "/readyz").status == 200)
    }

    @Test("GET /metrics serves the registry as text/plain; version=0.0.4 that parses strictly")
    func metrics() throws {
        let registry = MetricsRegistry()
        let verdicts = registry.counter(
            "attest_verdicts_total",
            help: "Verdicts.",
            labelNames: ["kind", "code", "reason"]
        )
        let latency = registry.histogram("attest_verification_seconds", help: "Latency.")
        let server = try startServer(metrics: registry)
        verdicts.labels(["attestation", "rejected", "nonce_mismatch"]).increment(by: 4)
        latency.observe(.milliseconds(3))

        let response = try RawHTTP.get(port: try port(server), "/metrics")
        #expect(response.status == 200)
        let contentType = try #require(response.header("Content-Type"))
        #expect(contentType.hasPrefix("text/plain; version=0.0.4"))
        let parsed = try Exposition(parsing: response.text)
        #expect(
            parsed.value(
                "attest_verdicts_total",
                ["kind": "attestation", "code": "rejected", "reason": "nonce_mismatch"]
            ) == 4
        )
        #expect(parsed.value("attest_verification_seconds_bucket", ["le": "0.005"]) == 1)
        #expect(parsed.value("attest_verification_seconds_count") == 1)
        if PythonPrometheusParser.isAvailable {
            let lines = try PythonPrometheusParser.samples(response.text)
            #expect(lines.contains("histogram|attest_verification_seconds_count{} 1.0"))
        }
    }

    @Test("unknown paths answer 404; known paths with another method 405 with Allow")
    func notFoundAndMethodNotAllowed() throws {
        let server = try startServer()
        let port = try port(server)
        #expect(try RawHTTP.get(port: port, "/nope").status == 404)
        #expect(try RawHTTP.get(port: port, "/healthz/extra").status == 404)
        #expect(try RawHTTP.post(port: port, "/nope", body: Array("x".utf8)).status == 404)

        let post = try RawHTTP.post(port: port, "/healthz", body: [])
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
        let delete = try RawHTTP.get(port: port, "/metrics", method: "DELETE")
        #expect(delete.status == 405)
        let get = try RawHTTP.get(port: port, "/echo")
        #expect(get.status == 405)
        #expect(get.header("Allow") == "POST")
    }

    @Test("a query string does not change the route")
    func queryString() throws {
        let server = try startServer()
        #expect(try RawHTTP.get(port: try port(server), "/healthz?verbose=1").status == 200)
    }

    @Test("bodies up to the limit reach the handler intact, in one piece however they were sent")
    func bodies() throws {
        let server = try startServer(maxBody: 64 * 1024)
        let port = try port(server)
        var generator = SystemRandomNumberGenerator()
        let exact = (0..<(64 * 1024)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let echoed = try RawHTTP.post(port: port, "/echo", body: exact)
        #expect(echoed.status == 200)
        #expect(echoed.body == exact)
        #expect(echoed.header("X-Method") == "POST")

        let empty = try RawHTTP.post(port: port, "/echo", body: [])
        #expect(empty.status == 200)
        #expect(empty.body.isEmpty)

        let chunked = try RawHTTP.exchange(
            port: port,
            head: "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked",
            body: Array("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".utf8)
        )
        #expect(chunked.status == 200)
        #expect(chunked.text == "hello world")
    }

    @Test("bodies over the limit answer 413 without reaching the handler, declared or streamed")
    func tooLarge() throws {
        let calls = Atomic<Int>(0)
        let server = try startServer(maxBody: 1024) { routes in
            routes.add("POST", "/count") { _ in
                calls.add(1, ordering: .relaxed)
                return .text(200, "counted\n")
            }
        }
        let port = try port(server)
        let over = [UInt8](repeating: 0x61, count: 1025)

        // Declared by Content-Length: answered from the headers, the body is never read.
        let declared = try RawHTTP.post(port: port, "/count", body: over)
        #expect(declared.status == 413)

        // Declared and the client waits for 100 Continue: it gets the 413 instead and sends nothing.
        let expecting = try RawHTTP.exchange(
            port: port,
            head: "POST /count HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\nExpect: 100-continue"
        )
        #expect(expecting.status == 413)

        // Chunked, so the size shows only while reading: read to the end and dropped, then 413.
        let chunk = "401\r\n" + String(repeating: "a", count: 1025) + "\r\n0\r\n\r\n"
        let streamed = try RawHTTP.exchange(
            port: port,
            head: "POST /count HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked",
            body: Array(chunk.utf8)
        )
        #expect(streamed.status == 413)
        #expect(calls.load(ordering: .relaxed) == 0)

        // At the limit it goes through.
        #expect(try RawHTTP.post(port: port, "/count", body: Array(over.dropLast())).status == 200)
        #expect(calls.load(ordering: .relaxed) == 1)
        // And the server still serves after all that.
        #expect(try RawHTTP.get(port: port, "/healthz").status == 200)
    }

    @Test("requests are served concurrently: handlers run side by side, every answer is right")
    func concurrentRequests() throws {
        let inside = Atomic<Int>(0)
        let together = 8
        let registry = MetricsRegistry()
        let hits = registry.counter("hits_total", help: "h")
        let server = try startServer(metrics: registry) { routes in
            // Each call waits (bounded) until `together` calls are inside at once: only a server that runs
            // handlers concurrently answers "together".
            routes.add("GET", "/rendezvous") { _ in
                inside.add(1, ordering: .relaxed)
                let deadline = ContinuousClock.now + .seconds(5)
                while inside.load(ordering: .relaxed) < together, ContinuousClock.now < deadline {
                    Thread.sleep(forTimeInterval: 0.001)
                }
                return .text(200, inside.load(ordering: .relaxed) >= together ? "together" : "alone")
            }
            routes.add("GET", "/hit") { _ in
                hits.increment()
                return .text(200, "hit")
            }
        }
        let port = try port(server)
        let rendezvous = onThreads(together) { _ in (try? RawHTTP.get(port: port, "/rendezvous"))?.text }
        #expect(rendezvous.allSatisfy { $0 == "together" }, "\(rendezvous)")

        // 32 clients × 20 requests, mixed routes.
        let outcomes = onThreads(32) { client -> [Int] in
            (0..<20).map { request in
                let path = ["/hit", "/healthz", "/metrics", "/readyz"][(client + request) % 4]
                return (try? RawHTTP.get(port: port, path))?.status ?? -1
            }
        }
        #expect(outcomes.joined().allSatisfy { $0 == 200 })
        #expect(hits.value == Double(outcomes.joined().count / 4))
    }

    @Test("stop closes the port; start serves again; a new server can take the same port")
    func stopAndStart() throws {
        let server = try startServer()
        let first = try port(server)
        #expect(try RawHTTP.get(port: first, "/healthz").status == 200)

        let firstSocket = try listener(first)
        server.stop()
        #expect(server.port == nil)
        #expect(!RawHTTP.openSockets().contains(firstSocket))
        server.stop()  // idempotent

        try server.start()
        let second = try port(server)
        #expect(try RawHTTP.get(port: second, "/healthz").status == 200)
        try server.start()  // idempotent while running
        #expect(server.port == second)
        let secondSocket = try listener(second)
        server.stop()
        #expect(!RawHTTP.openSockets().contains(secondSocket))

        // The same explicit port right after a stop (connections in TIME_WAIT): SO_REUSEADDR makes it bindable.
        let again = HTTPServer(
            configuration: .init(address: try HTTPAddress(parsing: "127.0.0.1:\(second)")),
            routes: HTTPRoutes()
        )
        try again.start()
        #expect(again.port == second)
        #expect(try RawHTTP.get(port: second, "/healthz").status == 404)
        let againSocket = try listener(second)
        again.stop()
        #expect(!RawHTTP.openSockets().contains(againSocket))
    }

    @Test("dropping the last reference stops the server")
    func deinitStops() throws {
        var server: HTTPServer? = try startServer()
        let port = try #require(server?.port)
        #expect(try RawHTTP.get(port: port, "/healthz").status == 200)
        let socket = try listener(port)
        server = nil
        #expect(!RawHTTP.openSockets().contains(socket))
    }

    @Test("a taken address fails start with libmicrohttpd's reason")
    func addressInUse() throws {
        let server = try startServer()
        let taken = try port(server)
        let diagnostics = LockedBox([String]())
        let rival = HTTPServer(
            configuration: .init(address: try HTTPAddress(parsing: "127.0.0.1:\(taken)")),
            routes: HTTPRoutes(),
            diagnostics: { message in diagnostics.withLock { $0.append(message) } }
        )
        #expect {
            try rival.start()
        } throws: { error in
            guard let error = error as? HTTPServerError, error.code == .startFailed else { return false }
            return error.message.contains("127.0.0.1:\(taken)")
                && error.message.localizedCaseInsensitiveContains("in use")
        }
        #expect(rival.port == nil)
        // The same reason went to the diagnostics sink (nothing went to stderr).
        #expect(diagnostics.withLock { $0 }.contains { $0.localizedCaseInsensitiveContains("in use") })
        #expect(try RawHTTP.get(port: taken, "/healthz").status == 200)
    }

    @Test("an IPv6 loopback address serves too", .enabled(if: RawHTTP.hasIPv6Loopback))
    func ipv6() throws {
        let server = HTTPServer(
            configuration: .init(address: try HTTPAddress(parsing: "[::1]:0")),
            routes: HTTPRoutes()
        )
        try server.start()
        let address = try #require(server.boundAddress)
        #expect(address.isIPv6)
        #expect(address.description == "[::1]:\(address.port)")
        // Its socket listens over IPv6 only: nothing of this process on 127.0.0.1 for that port.
        #expect(RawHTTP.listeningSocket(port: address.port, tables: ["/proc/net/tcp6"]) != nil)
        #expect(RawHTTP.listeningSocket(port: address.port, tables: ["/proc/net/tcp"]) == nil)
    }
}

@Suite("HTTP addresses")
struct HTTPAddressTests {
    @Test(
        "accepted forms",
        arguments: [
            ("127.0.0.1:8080", "127.0.0.1", 8080, false), ("0.0.0.0:0", "0.0.0.0", 0, false),
            ("localhost:9090", "127.0.0.1", 9090, false), ("[::1]:80", "::1", 80, true),
            ("[::]:65535", "::", 65535, true),
        ]
    )
    func accepted(text: String, host: String, port: Int, isIPv6: Bool) throws {
        let address = try HTTPAddress(parsing: text)
        #expect(address.host == host)
        #expect(address.port == port)
        #expect(address.isIPv6 == isIPv6)
    }

    @Test(
        "refused forms name the expected form",
        arguments: [
            "", "8080", ":8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80x",
            "::1:80", "[::1]", "[::1:80", "nowhere:80", "256.0.0.1:80", "127.0.0.1:+80", "[127.0.0.1]:80",
        ]
    )
    func refused(text: String) {
        #expect {
            _ = try HTTPAddress(parsing: text)
        } throws: { error in
            guard let error = error as? HTTPServerError else { return false }
            return error.code == .invalidAddress && error.message.contains("HOST:PORT")
        }
    }
}
