import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension WorkerProcess {
    /// POST http://127.0.0.1:PORT/PATH on the product listener with a JSON body and `Authorization: Bearer
    /// KEY` (none when nil), optionally from another loopback source address (127.0.0.0/8 is all local): the
    /// status, the body and the response's header lines.
    func post(_ path: String, _ body: String, bearer: String? = nil, from source: String? = nil) throws -> (status: Int, body: String, headers: [String]) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("http-\(UUID().uuidString)").path
        defer { for file in [base + ".body", base + ".headers"] { try? FileManager.default.removeItem(atPath: file) } }
        var arguments = ["-s", "-o", base + ".body", "-D", base + ".headers", "-w", "%{http_code}", "-X", "POST", "-H",
            "Content-Type: application/json", "--data-binary", body]
        if let bearer { arguments += ["-H", "Authorization: Bearer \(bearer)"] }
        if let source { arguments += ["--interface", source] }
        let result = try Stack.run("/usr/bin/curl", arguments + ["http://127.0.0.1:\(try httpPort())\(path)"], capture: true)
        let headers = ((try? String(contentsOfFile: base + ".headers", encoding: .utf8)) ?? "").split(separator: "\r\n").map(String.init)
        return (Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0,
                (try? String(contentsOfFile: base + ".body", encoding: .utf8)) ?? "", headers)
    }

    /// `method PATH` on `port`: the status only (0 when nothing answered).
    func status(_ method: String, _ path: String, port: Int) throws -> Int {
        let request = method == "HEAD" ? ["-I"] : ["-X", method]
        let result = try Stack.run(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10"] + request + ["http://127.0.0.1:\(port)\(path)"],
            capture: true)
        return Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
}

/// `attest-worker app key add`: the key it prints once.
func addAPIKey(teamId: String = Jobs.teamId, _ bundleId: String) throws -> String {
    let result = try Stack.run(Stack.binary, ["app", "key", "add", "--team", teamId, "--bundle", bundleId], capture: true)
    try #require(result.status == 0, "app key add failed")
    return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Empties the rate buckets of refusals from loopback, so one test's scan does not limit the next.
func resetRefusalBuckets() throws {
    let connection = try PGConnection(conninfo: try Stack.databaseURL)
    try connection.execute("DELETE FROM http_rate_buckets WHERE bucket = 'unauthenticated' OR bucket LIKE 'ip:127.%'")
}

extension LiveStack {
    /// Issue 11 item 9 against real workers: challenge issuance needs the app's own key, refusals and apps are
    /// rate-limited across workers through PostgreSQL, the operations endpoints are on their own listener,
    /// and libmicrohttpd's limits hold against slow and greedy clients.
    @Suite struct HardeningHTTPTests {
        static func body(_ bundleId: String) -> String { #"{"teamId":"\#(Jobs.teamId)","bundleId":"\#(bundleId)"}"# }

        @Test func issuanceNeedsTheAppsOwnKeyAndRefusalsLookAlike() throws {
            try resetRefusalBuckets()
            defer { try? resetRefusalBuckets() }
            let app = try ChallengeIntegrationTests.registerWorkerApp()
            let other = try ChallengeIntegrationTests.registerWorkerApp()
            let (key, otherKey) = (try addAPIKey(app), try addAPIKey(other))
            let secret = "shared-secret-\(UUID().uuidString)"
            let topics = try Stack.topics("http-auth", partitions: 1)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_CHALLENGE_SECRET": secret])

            let created = try worker.post("/v1/challenges", Self.body(app), bearer: key)
            #expect(created.status == 201, "\(created.body)")
            #expect(JSONValue.parse(Array(created.body.utf8))?["challenge"]?.stringValue.flatMap { Base64.decode($0) }?.count == 32)
            // No key, a wrong one, a truncated one, another app's, an unknown app with a real key, a key in the
            // body: one 401, the same body, with WWW-Authenticate.
            let refusals = [
                try worker.post("/v1/challenges", Self.body(app), bearer: nil),
                try worker.post("/v1/challenges", Self.body(app), bearer: "ak_" + String(repeating: "A", count: 43)),
                try worker.post("/v1/challenges", Self.body(app), bearer: String(key.dropLast())),
                try worker.post("/v1/challenges", Self.body(app), bearer: otherKey),
                try worker.post("/v1/challenges", Self.body("com.example.not.registered"), bearer: key),
                try worker.post("/v1/challenges", #"{"teamId":"\#(Jobs.teamId)","bundleId":"\#(app)","key":"\#(key)"}"#, bearer: nil),
            ]
            for (n, refusal) in refusals.enumerated() where n != 5 {
                #expect(refusal.status == 401, "refusal \(n): \(refusal.status) \(refusal.body)")
                #expect(refusal.body == refusals[0].body, "refusal \(n) tells itself apart")
                #expect(refusal.headers.contains { $0.lowercased().hasPrefix("www-authenticate: bearer") }, "refusal \(n)")
            }
            #expect(refusals[5].status == 400, "a body with a third member is not a request")
            // The shared secret issues for every registered app; an unregistered one is then 404.
            #expect(try worker.post("/v1/challenges", Self.body(other), bearer: secret).status == 201)
            #expect(try worker.post("/v1/challenges", Self.body("com.example.not.registered"), bearer: secret).status == 404)
            #expect(try worker.post("/v1/challenges", Self.body(other), bearer: secret + "x").status == 401)
            // A revoked key stops at once; the app's other keys go on.
            let listed = try Stack.run(Stack.binary, ["app", "key", "list", "--team", Jobs.teamId, "--bundle", app, "--json"], capture: true)
            let id = try #require(JSONValue.parse(Array(listed.output.utf8)).flatMap { if case .array(let keys) = $0 { keys.first?["id"]?.stringValue } else { nil } })
            #expect(!listed.output.contains(key), "list never shows a key")
            let spare = try addAPIKey(app)
            #expect(try Stack.run(Stack.binary, ["app", "key", "revoke", "--team", Jobs.teamId, "--bundle", app, "--id", id]) == 0)
            #expect(try worker.post("/v1/challenges", Self.body(app), bearer: key).status == 401)
            #expect(try worker.post("/v1/challenges", Self.body(app), bearer: spare).status == 201)
            // The start log shows the setting, never the secret.
            #expect(worker.log.contains("ATTEST_CHALLENGE_SECRET") && !worker.log.contains(secret))
        }

        @Test func unknownAppsAndBadKeysAreRateLimitedPerAddressAndAltogether() throws {
            try resetRefusalBuckets()
            defer { try? resetRefusalBuckets() }
            let app = try ChallengeIntegrationTests.registerWorkerApp()
            let key = try addAPIKey(app)
            let topics = try Stack.topics("http-scan", partitions: 1)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)",
                extra: ["ATTEST_CHALLENGE_FAILURES_PER_IP_PER_MINUTE": "3", "ATTEST_CHALLENGE_FAILURES_PER_MINUTE": "6"])
            // A scan of app ids from one address: three 401s, then 429 with Retry-After, for ids and keys alike.
            let scan = try (0..<5).map { n in try worker.post("/v1/challenges", Self.body("com.scan.\(n)"), bearer: key, from: "127.0.0.2") }
            #expect(scan.map(\.status) == [401, 401, 401, 429, 429], "\(scan.map(\.status))")
            #expect(scan[3].headers.contains { $0.lowercased().hasPrefix("retry-after: ") })
            #expect(try worker.post("/v1/challenges", Self.body(app), bearer: "ak_wrong", from: "127.0.0.2").status == 429)
            // Other addresses have buckets of their own, until all refusals together pass six.
            let spread = try (3..<8).map { n in try worker.post("/v1/challenges", Self.body("com.scan.x"), bearer: nil, from: "127.0.0.\(n)").status }
            #expect(spread == [401, 401, 401, 429, 429], "\(spread)")
            // The scanned-out addresses still issue with the right key: the app's bucket is its own.
            #expect(try worker.post("/v1/challenges", Self.body(app), bearer: key, from: "127.0.0.2").status == 201)
            #expect(try worker.get("/metrics").body.contains(#"attest_challenge_requests_total{status="429"}"#))
        }

        @Test func twoWorkersShareOneAppsLimit() throws {
            let app = try ChallengeIntegrationTests.registerWorkerApp()
            let key = try addAPIKey(app)
            let topics = try Stack.topics("http-share", partitions: 1)
            let group = "g-\(UUID().uuidString)"
            let limits = ["ATTEST_CHALLENGES_PER_MINUTE": "1", "ATTEST_CHALLENGE_BURST": "4"]
            let workers = try (0..<2).map { _ in try WorkerProcess(topics: topics, group: group, extra: limits) }
            // Alternating between the two: four in all, not four each.
            let statuses = try (0..<8).map { n in try workers[n % 2].post("/v1/challenges", Self.body(app), bearer: key).status }
            #expect(statuses == [201, 201, 201, 201, 429, 429, 429, 429], "\(statuses)")
            // Another app's bucket is untouched.
            let second = try ChallengeIntegrationTests.registerWorkerApp()
            #expect(try workers[1].post("/v1/challenges", Self.body(second), bearer: try addAPIKey(second)).status == 201)
        }

        @Test func eachListenerServesOnlyItsOwnPaths() throws {
            let topics = try Stack.topics("http-split", partitions: 1)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            let (product, ops) = (try worker.httpPort("port"), try worker.httpPort("opsPort"))
            #expect(product != ops)
            for path in ["/healthz", "/readyz", "/metrics"] {
                #expect(try worker.status("GET", path, port: product) == 404, "\(path) on the product listener")
                #expect(try worker.status("HEAD", path, port: product) == 404, "HEAD \(path) on the product listener")
                #expect(try worker.status("GET", path, port: ops) != 404, "\(path) on the operations listener")
            }
            #expect(try worker.status("POST", "/v1/challenges", port: ops) == 404)
            #expect(try worker.status("GET", "/.well-known/jwks.json", port: ops) == 404)
            #expect(try worker.status("GET", "/.well-known/jwks.json", port: product) == 200)
            #expect(try worker.status("POST", "/v1/challenges", port: product) == 400)
        }

        /// A loopback TCP connection with 5-second socket timeouts.
        static func connect(_ port: Int) throws -> Int32 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port)).bigEndian
            inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(result == 0, "connect: errno \(errno)")
            return fd
        }

        static func write(_ fd: Int32, _ text: String) {
            _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Whether the server has closed `fd` (end of file or reset) within `seconds`, reading whatever it sends.
        static func closedByServer(_ fd: Int32, within seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < deadline {
                var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pollfd, 1, 100) > 0 else { continue }
                if buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) <= 0 { return true }
            }
            return false
        }

        /// Whether a keep-alive request on `fd` is answered 200 within a second: the listener took the connection.
        static func answered(_ fd: Int32) -> Bool {
            write(fd, "GET /.well-known/jwks.json HTTP/1.1\r\nHost: x\r\n\r\n")
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollfd, 1, 1000) > 0 else { return false }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return count > 0 && buffer.prefix(12).elementsEqual("HTTP/1.1 200".utf8)
        }

        @Test func slowGreedyAndOversizedClientsAreCutWhileTheWorkerServesOthers() throws {
            let topics = try Stack.topics("http-slow", partitions: 1)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)",
                extra: ["ATTEST_HTTP_REQUEST_TIMEOUT": "2", "ATTEST_HTTP_MAX_CONNECTIONS_PER_IP": "3", "ATTEST_HTTP_MAX_HEADER_BYTES": "8192"])
            let (product, ops) = (try worker.httpPort("port"), try worker.httpPort("opsPort"))

            // Slowloris on both listeners: a header line every half second, each within the idle timeout.
            for port in [product, ops] {
                let fd = try Self.connect(port)
                defer { close(fd) }
                let start = Date()
                Self.write(fd, "POST /v1/challenges HTTP/1.1\r\nHost: x\r\n")
                var cut = false
                while !cut && Date().timeIntervalSince(start) < 8 {
                    Self.write(fd, "X-Slow: a\r\n")
                    cut = Self.closedByServer(fd, within: 0.5)
                }
                #expect(cut, "port \(port): a trickled request still open after 8 s")
                #expect(Date().timeIntervalSince(start) < 6, "port \(port): cut after \(Date().timeIntervalSince(start)) s")
            }
            // A body trickled after its headers, likewise.
            let body = try Self.connect(product)
            Self.write(body, "POST /v1/challenges HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            var trickled = false
            for _ in 0..<16 where !trickled {
                Self.write(body, " ")
                trickled = Self.closedByServer(body, within: 0.5)
            }
            close(body)
            #expect(trickled, "a trickled body still open after 8 s")
            let metrics = try worker.get("/metrics").body
            #expect(metrics.contains(#"attest_http_connections_cut_total{listener="product"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"attest_http_connections_cut_total{listener="ops"} 1"#))
            // libmicrohttpd counts a closed connection against its address until its thread has cleaned up.
            #expect(try eventually(seconds: 10) { try worker.status("GET", "/.well-known/jwks.json", port: product) == 200 })

            // Three connections from one address hold the product listener's share (each answered once, so
            // accepted, and kept alive, for less than the 2 s idle timeout); a fourth is refused, while the
            // operations listener, with limits of its own, still answers.
            let refusedWhileHeld = try eventually(seconds: 10) {
                let held = try (0..<3).map { _ in try Self.connect(product) }
                defer { for fd in held { close(fd) } }
                guard held.allSatisfy({ Self.answered($0) }) else { return false }
                return try worker.status("GET", "/.well-known/jwks.json", port: product) == 0
                    && worker.status("GET", "/healthz", port: ops) == 200
            }
            #expect(refusedWhileHeld)
            #expect(try eventually(seconds: 10) { try worker.status("GET", "/.well-known/jwks.json", port: product) == 200 })

            // Headers past the memory limit: refused, and the connection closed.
            let big = try Stack.run(
                "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Big: " + String(repeating: "b", count: 16_000),
                    "http://127.0.0.1:\(product)/.well-known/jwks.json"], capture: true)
            #expect(["431", "413", "414"].contains(big.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(big.output)")
            // An oversized body: 413 before any handler.
            let oversized = try worker.post("/v1/challenges", String(repeating: " ", count: 10_000), bearer: nil)
            #expect(oversized.status == 413)
            #expect(try worker.get("/healthz").status == 200)
        }
    }
}
