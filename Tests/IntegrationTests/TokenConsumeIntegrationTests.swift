import AttestClient
import AttestCore
import AttestJobs
import AttestMint
import AttestTokens
import Foundation
import PostgresClient
import Synchronization
import Testing

/// Runs `body` on `count` threads released together, and returns what each returned: a race, not a queue
/// (Dispatch's concurrentPerform would run two at a time on two cores).
func race<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = Mutex<[Int: T]>([:])
    let ready = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for i in 0..<count {
        done.enter()
        Thread.detachNewThread {
            ready.signal()
            go.wait()
            let result = body(i)
            results.withLock { $0[i] = result }
            done.leave()
        }
    }
    for _ in 0..<count { ready.wait() }
    for _ in 0..<count { go.signal() }
    done.wait()
    return results.withLock { results in (0..<count).compactMap { results[$0] } }
}

extension LiveStack {
    /// Limited-use tokens against real workers (issue 28): spent once across workers, still spent after a
    /// restart, purged after exp and then refused as expired; ordinary tokens as before.
    @Suite struct TokenConsumeIntegrationTests {
        /// Two fresh P-256 PEM keys (the signing key first), removed with the directory by the caller.
        static func keys() throws -> (directory: URL, paths: [String]) {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("consume-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let paths = ["current", "retired"].map { directory.appendingPathComponent("\($0).pem").path }
            for path in paths {
                let status = try Stack.run("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
                try #require(status == 0, "openssl genpkey failed")
            }
            return (directory, paths)
        }

        /// A worker signing with `keys`, in `group` on `topics`.
        static func worker(
            _ topics: (jobs: String, verdicts: String, deadLetters: String), group: String, keys: [String], extra: [String: String] = [:]
        ) throws -> WorkerProcess {
            try WorkerProcess(topics: topics, group: group, extra: ["ATTEST_TOKEN_KEYS": keys.joined(separator: ",")].merging(extra) { _, b in b })
        }

        /// The verdicts of `messages`, by jobId, once every one arrived.
        static func verdicts(_ topics: (jobs: String, verdicts: String, deadLetters: String), _ messages: [(key: [UInt8]?, value: [UInt8])], log: () -> String) throws
            -> [String: JSONValue]
        {
            let reader = try TopicReader(topic: topics.verdicts)
            try produce(topics.jobs, messages)
            #expect(reader.read(seconds: 90) { _ in reader.verdictsByJob.count >= messages.count }, "\(log().suffix(2000))")
            return reader.verdictsByJob.compactMapValues { $0.first.flatMap { JSONValue.parse(Array($0.utf8)) } }
        }

        static func consumer(_ worker: WorkerProcess, _ credential: String) throws -> TokenConsumer {
            TokenConsumer(baseURL: "http://127.0.0.1:\(try worker.httpPort())", credential: credential, timeout: .seconds(30))
        }

        @Test func twentyConsumersOnTwoWorkersSpendOneTokenOnce() throws {
            let (directory, keys) = try Self.keys()
            defer { try? FileManager.default.removeItem(at: directory) }
            let topics = try Stack.topics("consume", partitions: 2)
            let bundleId = "com.example.consume.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            try Jobs.registerApp(bundleId + ".other")
            try resetRefusalBuckets()
            let key = try addAPIKey(bundleId)
            let otherKey = try addAPIKey(bundleId + ".other")
            let group = "g-\(UUID().uuidString)"
            // Twenty consumers on one address: the per-address connection limit (8 by default) must admit them.
            let workers = try (0..<2).map { _ in
                try Self.worker(topics, group: group, keys: keys, extra: ["ATTEST_HTTP_MAX_CONNECTIONS_PER_IP": "32"])
            }
            defer { for worker in workers { worker.kill(SIGTERM); worker.wait(seconds: 20) } }

            let device = try Device()
            let jobId = "\(bundleId)-limited"
            let job = Jobs.attestation(device, bundleId: bundleId, jobId: jobId, metadata: [("limitedUse", .bool(true))])
            let verdicts = try Self.verdicts(topics, [(Array(Base64.encode(device.keyId).utf8), job)]) { workers.map(\.log).joined() }
            let token = try #require(verdicts[jobId]?["token"]?.stringValue, "\(verdicts[jobId]?.serialized() ?? "no verdict")")
            let jwks = try #require(JWKS(json: Array(try workers[0].get("/.well-known/jwks.json", product: true).body.utf8)))
            let claims = try TokenVerifier(jwks: jwks).verify(token, audience: "\(Jobs.teamId).\(bundleId)")
            #expect(claims["limitedUse"] == .bool(true))
            #expect(claims["jti"] != .string(jobId), "a limited-use token's jti is its own")

            // Another app's key is refused, and spends nothing.
            guard case .refused(403, "forbidden", _) = try Self.consumer(workers[1], otherKey).consume(token) else {
                Issue.record("another app's key was not refused with 403")
                return
            }
            let consumers = try workers.map { try Self.consumer($0, key) }
            let outcomes = race(20) { i in
                do throws(TokenConsumer.Unanswered) { return try consumers[i % 2].consume(token) } catch { return .refused(status: 0, error: "unanswered", reason: error.description) }
            }
            let spent = outcomes.filter { if case .consumed = $0 { true } else { false } }
            #expect(spent.count == 1, "\(outcomes)")
            #expect(outcomes.filter { $0 == .alreadyConsumed }.count == 19, "\(outcomes)")
            if case .consumed(let answered)? = spent.first { #expect(answered == claims) }
            // Both workers counted what they answered.
            var consumed = 0.0
            var refused = 0.0
            for worker in workers {
                for sample in try prometheusSamples(try worker.get("/metrics").body) {
                    if sample.name == "attest_tokens_consumed_total" { consumed += sample.value }
                    if sample.name == "attest_token_consume_refused_total", sample.labels["reason"] == "already_consumed" { refused += sample.value }
                }
            }
            #expect(consumed == 1 && refused == 19)
            try validate(
                [JSONValue.object([("claims", claims)]).serialized(), #"{"error":"token_already_consumed","message":"x"}"#],
                schema: "token-consume-response")
        }

        @Test func aSpentTokenStaysSpentAcrossARestartAndOrdinaryTokensAreAsBefore() throws {
            let (directory, keys) = try Self.keys()
            defer { try? FileManager.default.removeItem(at: directory) }
            let topics = try Stack.topics("consume", partitions: 1)
            let bundleId = "com.example.consume.\(UUID().uuidString.prefix(8).lowercased())"
            // Assertions must get limited-use tokens, living 120 s; attestations only when their job asks.
            try Jobs.registerApp(bundleId, policy: ["--limited-use-assertions", "required", "--limited-use-lifetime", "120"])
            try resetRefusalBuckets()
            let secret = String(repeating: "c", count: 32)
            let group = "g-\(UUID().uuidString)"
            var worker = try Self.worker(topics, group: group, keys: keys, extra: ["ATTEST_CHALLENGE_SECRET": secret])
            let device = try Device()
            let key = Array(Base64.encode(device.keyId).utf8)
            let attestation = "\(bundleId)-att"
            let assertion = "\(bundleId)-asr"
            let second = "\(bundleId)-asr-2"
            let verdicts = try Self.verdicts(
                topics,
                [(key, Jobs.attestation(device, bundleId: bundleId, jobId: attestation)),
                 (key, Jobs.assertion(device, bundleId: bundleId, jobId: assertion, counter: 1)),
                 (key, Jobs.assertion(device, bundleId: bundleId, jobId: second, counter: 2))]) { worker.log }
            let jwks = try #require(JWKS(json: Array(try worker.get("/.well-known/jwks.json", product: true).body.utf8)))
            let verifier = TokenVerifier(jwks: jwks)

            // The attestation's token is an ordinary one: as before, and not consumable.
            let ordinary = try #require(verdicts[attestation]?["token"]?.stringValue)
            let ordinaryClaims = try verifier.verify(ordinary, audience: "\(Jobs.teamId).\(bundleId)")
            #expect(ordinaryClaims["jti"] == .string(attestation) && ordinaryClaims["limitedUse"] == nil)
            #expect(try Self.consumer(worker, secret).consume(ordinary) == .refused(status: 422, error: "token_not_limited_use", reason: nil))

            let limited = try #require(verdicts[assertion]?["token"]?.stringValue)
            let claims = try verifier.verify(limited, audience: "\(Jobs.teamId).\(bundleId)")
            #expect(claims["limitedUse"] == .bool(true))
            if case .int(let exp)? = claims["exp"], case .int(let iat)? = claims["iat"] { #expect(exp - iat == 120) }
            #expect(try Self.consumer(worker, secret).consume(limited) == .consumed(claims))

            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30))
            worker = try Self.worker(topics, group: group, keys: keys, extra: ["ATTEST_CHALLENGE_SECRET": secret])
            defer { worker.kill(SIGTERM); worker.wait(seconds: 20) }
            #expect(try Self.consumer(worker, secret).consume(limited) == .alreadyConsumed)
            // The Python example spends the other assertion's token once, as a backend would.
            let python = { (token: String) throws -> (status: Int32, output: String) in
                try Stack.run(
                    "/usr/bin/env",
                    ["ATTEST_API_KEY=\(secret)", Stack.environment["PYTHON"] ?? "python3",
                     Stack.repository.appendingPathComponent("examples/python/consume_token.py").path,
                     "--url", "http://127.0.0.1:\(try worker.httpPort())", "--audience", "\(Jobs.teamId).\(bundleId)", token],
                    capture: true)
            }
            let secondToken = try #require(verdicts[second]?["token"]?.stringValue)
            let spent = try python(secondToken)
            #expect(spent.status == 0 && JSONValue.parse(Array(spent.output.utf8))?["limitedUse"] == .bool(true), "\(spent.output)")
            let replayed = try python(secondToken)
            #expect(replayed.status == 1 && replayed.output.contains("refused: token_already_consumed"), "\(replayed.output)")
            let refusedOrdinary = try python(ordinary)
            #expect(refusedOrdinary.status == 1 && refusedOrdinary.output.contains("refused: token_not_limited_use"))
            // The command spends by the same ledger.
            let jwksFile = directory.appendingPathComponent("jwks.json").path
            try jwks.json.serialized().write(toFile: jwksFile, atomically: true, encoding: .utf8)
            let command = try Stack.run(Stack.binary, ["token", "consume", "--jwks", jwksFile, limited], capture: true)
            #expect(command.status == 1 && command.output.contains("refused: token_already_consumed"), "\(command.output)")
        }

        @Test func aTokenPastExpIsPurgedAndRefusedAsExpired() throws {
            let (directory, keys) = try Self.keys()
            defer { try? FileManager.default.removeItem(at: directory) }
            let topics = try Stack.topics("consume", partitions: 1)
            let bundleId = "com.example.consume.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId, policy: ["--limited-use-lifetime", "6"])
            try resetRefusalBuckets()
            let secret = String(repeating: "e", count: 32)
            let group = "g-\(UUID().uuidString)"
            // No skew allowance: the row may go the purge margin (10 s) after exp.
            let settings = ["ATTEST_CHALLENGE_SECRET": secret, "ATTEST_MAX_FUTURE_SKEW": "0"]
            var worker = try Self.worker(topics, group: group, keys: keys, extra: settings)
            let device = try Device()
            let jobId = "\(bundleId)-limited"
            let verdicts = try Self.verdicts(
                topics, [(Array(Base64.encode(device.keyId).utf8), Jobs.attestation(device, bundleId: bundleId, jobId: jobId, metadata: [("limitedUse", .bool(true))]))]
            ) { worker.log }
            let token = try #require(verdicts[jobId]?["token"]?.stringValue)
            let jwks = try #require(JWKS(json: Array(try worker.get("/.well-known/jwks.json", product: true).body.utf8)))
            let claims = try TokenVerifier(jwks: jwks, leewaySeconds: 0).verify(token)
            guard case .int(let exp)? = claims["exp"], case .string(let jti)? = claims["jti"] else {
                Issue.record("claims \(claims.serialized())")
                return
            }
            #expect(try Self.consumer(worker, secret).consume(token) == .consumed(claims))
            let database = try PGConnection(conninfo: try Stack.databaseURL)
            let rows = { () throws -> Int64 in
                try database.execute("SELECT count(*) FROM consumed_tokens WHERE jti = $1", [.text(jti)]).int(0, 0) ?? -1
            }
            #expect(try rows() == 1)

            // Past exp and the purge margin, a restarted worker purges at its start.
            // 10: ConsumedTokenStore.purgeMarginSeconds (this target runs the binary, it does not link Worker).
            let purgeable = Double(exp + 10 + 1)
            #expect(eventually(seconds: 60) { Date().timeIntervalSince1970 > purgeable })
            worker.kill(SIGTERM)
            #expect(worker.wait(seconds: 30))
            worker = try Self.worker(topics, group: group, keys: keys, extra: settings)
            defer { worker.kill(SIGTERM); worker.wait(seconds: 20) }
            #expect(try eventually(seconds: 60) { try rows() == 0 }, "\(worker.log.suffix(2000))")
            // Gone from the ledger, and refused as expired, never as unknown or spendable.
            #expect(try Self.consumer(worker, secret).consume(token) == .refused(status: 401, error: "token_invalid", reason: "expired"))
            #expect(try rows() == 0)
        }
    }
}
