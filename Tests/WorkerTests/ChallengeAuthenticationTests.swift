import AttestCore
import AttestCrypto
import Foundation
import Observability
import PostgresClient
import Synchronization
import Testing
@testable import Store
@testable import Worker

/// Issue 11 item 9: who may issue challenges, and the rate limits every worker shares.
@Suite struct ChallengeAuthenticationTests {
    static let teamId = "ABCDE12345"
    static let key = "ak_" + String(repeating: "k", count: 43)
    static let otherKey = "ak_" + String(repeating: "o", count: 43)
    static let secret = String(repeating: "x", count: 40)

    /// Keys by app, counting the lookups.
    final class Keys: Sendable {
        let lookups = Atomic<Int>(0)
        func hashes(_ teamId: String, _ bundleId: String) -> [[UInt8]] {
            lookups.add(1, ordering: .relaxed)
            switch bundleId {
            case "com.a": return [APIKeyStore.hash(ChallengeAuthenticationTests.otherKey), APIKeyStore.hash(ChallengeAuthenticationTests.key)]
            case "com.b": return [APIKeyStore.hash(ChallengeAuthenticationTests.otherKey)]
            default: return []
            }
        }
    }

    @Test func anAppsKeyAdmitsThatAppOnly() throws {
        let keys = Keys()
        let auth = ChallengeAuthenticator(sharedSecret: nil, keyHashes: { t, b in keys.hashes(t, b) })
        #expect(try auth.admits(authorization: "Bearer " + Self.key, teamId: Self.teamId, bundleId: "com.a"))
        #expect(try auth.admits(authorization: "bearer  " + Self.key, teamId: Self.teamId, bundleId: "com.a"), "the scheme is case-insensitive")
        // Another app's key, an unknown app, a key one character off, no key, other schemes.
        #expect(try !auth.admits(authorization: "Bearer " + Self.key, teamId: Self.teamId, bundleId: "com.b"))
        #expect(try !auth.admits(authorization: "Bearer " + Self.key, teamId: Self.teamId, bundleId: "com.unknown"))
        #expect(try !auth.admits(authorization: "Bearer " + Self.key.dropLast() + "j", teamId: Self.teamId, bundleId: "com.a"))
        #expect(try !auth.admits(authorization: "Bearer " + Self.key.dropLast(), teamId: Self.teamId, bundleId: "com.a"))
        for header in [nil, "", "Bearer", "Bearer ", "Basic " + Self.key, Self.key, "Bearer \(Self.key) extra",
            "Bearer " + Self.key + "\u{7f}", "Bearer " + String(repeating: "a", count: 600)]
        {
            #expect(try !auth.admits(authorization: header, teamId: Self.teamId, bundleId: "com.a"), "\(header ?? "nil")")
        }
        // Without a shared secret, an app with no keys admits nobody, the empty secret included.
        #expect(try !ChallengeAuthenticator(sharedSecret: "", keyHashes: { _, _ in [] })
            .admits(authorization: "Bearer ", teamId: Self.teamId, bundleId: "com.none"))
    }

    @Test func theSharedSecretAdmitsEveryAppAndOnlyCredentialsShapedLikeKeysReachTheDatabase() throws {
        let keys = Keys()
        let auth = ChallengeAuthenticator(sharedSecret: Self.secret, keyHashes: { t, b in keys.hashes(t, b) })
        #expect(try auth.admits(authorization: "Bearer " + Self.secret, teamId: Self.teamId, bundleId: "com.unknown"))
        #expect(try !auth.admits(authorization: "Bearer " + Self.secret + "x", teamId: Self.teamId, bundleId: "com.a"))
        #expect(try !auth.admits(authorization: "Bearer " + Self.secret.dropLast(), teamId: Self.teamId, bundleId: "com.a"))
        #expect(keys.lookups.load(ordering: .relaxed) == 0)
        #expect(try auth.admits(authorization: "Bearer " + Self.key, teamId: Self.teamId, bundleId: "com.a"))
        #expect(keys.lookups.load(ordering: .relaxed) == 1)
    }

    @Test func clientAddressesShareABucketPerIPv6Slash64() {
        #expect(ClientAddress.bucketKey("192.0.2.7") == "192.0.2.7")
        #expect(ClientAddress.bucketKey("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(ClientAddress.bucketKey("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64")
        #expect(ClientAddress.bucketKey("2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(ClientAddress.bucketKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(ClientAddress.bucketKey("") == "")
    }

    /// A bucket found empty answers the rest of its wait from memory: a flood of refused requests asks the
    /// database once per bucket and wait, then again once the wait has passed.
    @Test func anEmptyRefusalBucketIsRememberedUntilItsRetryAfter() throws {
        let calls = Mutex([String: Int]())
        let take: ChallengeEndpoint.Take = { bucket, _ in
            calls.withLock { $0[bucket, default: 0] += 1 }
            return bucket.hasPrefix("ip:") ? 7 : nil
        }
        let refusals = RefusalBuckets()
        let limit = RateLimitStore.Limit(perMinute: 60, burst: 1)
        let start = ContinuousClock.now
        for second in 0..<5 {
            let wait = try refusals.take(address: "192.0.2.1", perAddress: limit, all: limit, now: start + .seconds(second), take)
            #expect(wait == 7 - second)
        }
        #expect(calls.withLock { $0 } == ["ip:192.0.2.1": 1])
        // Past the wait, the database is asked again; another address is its own.
        #expect(try refusals.take(address: "192.0.2.1", perAddress: limit, all: limit, now: start + .seconds(7), take) == 7)
        #expect(try refusals.take(address: "192.0.2.2", perAddress: limit, all: limit, now: start, take) == 7)
        #expect(calls.withLock { $0 } == ["ip:192.0.2.1": 2, "ip:192.0.2.2": 1])
    }

    // MARK: The endpoint's order of checks

    static func endpoint(_ buckets: CountingBuckets, failuresPerAddress: Int = 3, failures: Int = 5) -> ChallengeEndpoint {
        let keys = Keys()
        return ChallengeEndpoint(
            issue: { teamId, bundleId throws(ChallengeIssuer.IssueError) in
                IssuedChallenge(
                    bytes: Array(repeating: 7, count: 32), teamId: teamId, bundleId: bundleId, issuedAt: .init(seconds: 0),
                    expiresAt: .init(seconds: 300))
            }, take: buckets.take,
            authenticator: ChallengeAuthenticator(sharedSecret: nil, keyHashes: { t, b in keys.hashes(t, b) }),
            limits: .init(
                perApp: .init(perMinute: 60, burst: 100), failuresPerAddress: .init(perMinute: failuresPerAddress, burst: failuresPerAddress),
                failures: .init(perMinute: failures, burst: failures)),
            metrics: WorkerMetrics(), logger: Logger(level: .error, sink: { _ in }))
    }

    static func body(_ bundleId: String) -> String { #"{"teamId":"\#(teamId)","bundleId":"\#(bundleId)"}"# }

    @Test func refusalsAreAlike401sUntilTheAddressOrEveryRefusalIsOverItsRate() {
        let buckets = CountingBuckets()
        let endpoint = Self.endpoint(buckets)
        // No key, another app's key, an unknown app: one answer, the same body, so nothing tells them apart.
        let answers = [
            ChallengeTests.post(endpoint, Self.body("com.a"), authorization: nil),
            ChallengeTests.post(endpoint, Self.body("com.b"), authorization: "Bearer " + Self.key),
            ChallengeTests.post(endpoint, Self.body("com.unknown"), authorization: "Bearer " + Self.key),
        ]
        for answer in answers {
            #expect(answer.status == 401)
            #expect(answer.headers["WWW-Authenticate"] == #"Bearer realm="attest-worker""#)
            #expect(answer.json == answers[0].json)
        }
        // The address's three are spent: 429, also for the app scan's next id, without drawing on the shared bucket.
        let limited = ChallengeTests.post(endpoint, Self.body("com.unknown2"), authorization: "Bearer " + Self.key)
        #expect(limited.status == 429)
        #expect(limited.headers["Retry-After"] == "60")
        #expect(buckets.count("unauthenticated") == 3)
        // Other addresses take the rest of the shared bucket (five), then every refusal is 429.
        #expect(ChallengeTests.post(endpoint, Self.body("com.x"), authorization: nil, from: "198.51.100.1").status == 401)
        #expect(ChallengeTests.post(endpoint, Self.body("com.x"), authorization: nil, from: "198.51.100.2").status == 401)
        #expect(ChallengeTests.post(endpoint, Self.body("com.x"), authorization: nil, from: "198.51.100.3").status == 429)
        // An IPv6 scanner rotating through its /64 is one address.
        for n in 1...3 {
            let status = ChallengeTests.post(endpoint, Self.body("com.x"), authorization: nil, from: "2001:db8::\(n)").status
            #expect(status == 429)
        }
        #expect(buckets.count("ip:2001:db8:0:0::/64") == 3, "three addresses of one /64, one bucket")
        // The right key still issues: an admitted request never draws on the refusal buckets.
        let created = ChallengeTests.post(endpoint, Self.body("com.a"), authorization: "Bearer " + Self.key)
        #expect(created.status == 201)
        #expect(buckets.count("app:\(Self.teamId).com.a") == 1)
        // A malformed body is 400 before any credential check or bucket.
        #expect(ChallengeTests.post(endpoint, "{}", authorization: nil, from: "203.0.113.9").status == 400)
        #expect(buckets.count("ip:203.0.113.9") == 0)
    }

    @Test func aDatabaseOutageIs503NotAnOpenDoor() {
        let endpoint = ChallengeEndpoint(
            issue: { _, _ throws(ChallengeIssuer.IssueError) in throw .unknownApp }, take: { _, _ in nil },
            authenticator: ChallengeAuthenticator(
                sharedSecret: nil, keyHashes: { _, _ throws(PGError) in throw PGError(code: .connectionLost, message: "gone") }),
            limits: .init(perApp: .init(perMinute: 1, burst: 1), failuresPerAddress: .init(perMinute: 1, burst: 1), failures: .init(perMinute: 1, burst: 1)),
            metrics: WorkerMetrics(), logger: Logger(level: .error, sink: { _ in }))
        #expect(ChallengeTests.post(endpoint, Self.body("com.a"), authorization: "Bearer " + Self.key).status == 503)
    }

    // MARK: Against PostgreSQL

    @Test func twoWorkersShareOneBucketExactly() throws {
        let database = try AttestStoreTests.Database()
        let url = try #require(ProcessInfo.processInfo.environment["ATTEST_DATABASE_URL"])
        let scoped = url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(database.schema)"
        // Two issuers, each with its own connection, as two worker processes have.
        let workers = [ChallengeIssuer(conninfo: scoped), ChallengeIssuer(conninfo: scoped)]
        let limit = RateLimitStore.Limit(perMinute: 1, burst: 10)
        let granted = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { n in
            for _ in 0..<5 where (try? workers[n % 2].take("app:shared", limit)) == .some(nil) {
                granted.add(1, ordering: .relaxed)
            }
        }
        #expect(granted.load(ordering: .relaxed) == 10, "40 takes over two connections, a burst of 10")
        let refused = try #require(try workers[0].take("app:shared", limit))
        // Less what the takes took on the database's clock, which a loaded machine stretches.
        #expect((50...60).contains(refused), "a whole token takes a minute at 1 per minute: \(refused)")
        // Refill follows the database's clock: 30 s later at 4 per minute, two tokens.
        try database.connection.execute("UPDATE http_rate_buckets SET updated_at = updated_at - interval '30 seconds'")
        let faster = RateLimitStore.Limit(perMinute: 4, burst: 10)
        #expect(try workers[1].take("app:shared", faster) == nil)
        #expect(try workers[0].take("app:shared", faster) == nil)
        #expect(try workers[1].take("app:shared", faster) != nil)
        // Other buckets are their own.
        #expect(try workers[0].take("app:other", limit) == nil)
        // Idle buckets are purged, busy ones kept.
        try database.connection.execute("UPDATE http_rate_buckets SET updated_at = now() - interval '2 hours' WHERE bucket = 'app:other'")
        #expect(try database.store.purgeRateBuckets(idleSeconds: 3600) == 1)
        #expect(try database.connection.execute("SELECT bucket FROM http_rate_buckets").string(0, 0) == "app:shared")
    }

    @Test func keysAreStoredHashedListedWithoutThemselvesAndRevocable() throws {
        let database = try AttestStoreTests.Database()
        try database.store.upsert(AppPolicy(teamId: Self.teamId, bundleId: "com.keys"))
        try database.store.upsert(AppPolicy(teamId: Self.teamId, bundleId: "com.other"))
        let (key, keyId) = try database.store.addAPIKey(teamId: Self.teamId, bundleId: "com.keys")
        #expect(key.hasPrefix("ak_") && key.utf8.count == 46)
        let stored = try database.connection.execute("SELECT key_hash, key_id FROM app_api_keys")
        #expect(stored.bytes(0, 0) == APIKeyStore.hash(key))
        #expect(stored.string(0, 1) == keyId)
        #expect(try APIKeyStore.activeHashes(teamId: Self.teamId, bundleId: "com.keys", on: database.connection) == [APIKeyStore.hash(key)])
        #expect(try APIKeyStore.activeHashes(teamId: Self.teamId, bundleId: "com.other", on: database.connection).isEmpty)
        #expect(try database.store.apiKeys(teamId: Self.teamId, bundleId: "com.keys").map(\.keyId) == [keyId])
        // Revoked: gone from the lookups, still listed; revoking again or under another app fails.
        #expect(try !database.store.revokeAPIKey(teamId: Self.teamId, bundleId: "com.other", keyId: keyId))
        #expect(try database.store.revokeAPIKey(teamId: Self.teamId, bundleId: "com.keys", keyId: keyId))
        #expect(try !database.store.revokeAPIKey(teamId: Self.teamId, bundleId: "com.keys", keyId: keyId))
        #expect(try APIKeyStore.activeHashes(teamId: Self.teamId, bundleId: "com.keys", on: database.connection).isEmpty)
        #expect(try database.store.apiKeys(teamId: Self.teamId, bundleId: "com.keys").first?.revokedAt != nil)
        // Unknown apps get no keys; an app gets at most the maximum of unrevoked ones.
        #expect(throws: APIKeyStore.AddError.self) { try database.store.addAPIKey(teamId: Self.teamId, bundleId: "com.none") }
        for _ in 0..<APIKeyStore.maxActiveKeysPerApp { _ = try database.store.addAPIKey(teamId: Self.teamId, bundleId: "com.keys") }
        do {
            _ = try database.store.addAPIKey(teamId: Self.teamId, bundleId: "com.keys")
            Issue.record("a key past the maximum was added")
        } catch {
            guard case .tooManyKeys = error else { throw error }
        }
    }

    // MARK: Settings

    static let required = ["ATTEST_KAFKA_BROKERS": "127.0.0.1:9092", "ATTEST_DATABASE_URL": "postgresql://db/attest"]

    @Test func theHTTPSettingsHaveSafeDefaultsAndAreValidated() throws {
        let (defaults, _) = try WorkerConfiguration.load(file: nil, environment: Self.required)
        #expect(defaults.opsHTTPAddress == "127.0.0.1:9090" && defaults.httpAddress == "127.0.0.1:8080")
        #expect(defaults.challengeSecret == nil, "no shared secret: API keys only")
        #expect(defaults.httpMaxConnections == 64 && defaults.httpMaxConnectionsPerIP == 8)
        #expect(defaults.httpRequestTimeoutSeconds == 10 && defaults.httpMaxBodyBytes == 4096 && defaults.httpMaxHeaderBytes == 16384)
        #expect(defaults.challengeFailuresPerIPPerMinute == 30 && defaults.challengeFailuresPerMinute == 600)
        for (name, value) in [
            ("ATTEST_OPS_HTTP_ADDRESS", "127.0.0.1:8080"), ("ATTEST_OPS_HTTP_ADDRESS", "nowhere"),
            ("ATTEST_CHALLENGE_SECRET", "short"), ("ATTEST_HTTP_MAX_CONNECTIONS_PER_IP", "65"),
            ("ATTEST_HTTP_REQUEST_TIMEOUT", "0"), ("ATTEST_HTTP_MAX_HEADER_BYTES", "1000"), ("ATTEST_HTTP_MAX_BODY_BYTES", "-1"),
            ("ATTEST_CHALLENGE_FAILURES_PER_IP_PER_MINUTE", "0"), ("ATTEST_CHALLENGE_FAILURES_PER_MINUTE", "x"),
        ] {
            do {
                _ = try WorkerConfiguration.load(file: nil, environment: Self.required.merging([name: value]) { _, b in b })
                Issue.record("\(name)=\(value) was accepted")
            } catch {
                #expect(error.description.contains(name), "\(error)")
            }
        }
        let secret = String(repeating: "q", count: 32)
        let (configured, resolved) = try WorkerConfiguration.load(
            file: nil, environment: Self.required.merging(["ATTEST_CHALLENGE_SECRET": secret]) { _, b in b })
        #expect(configured.challengeSecret == secret)
        let printed = WorkerConfiguration.describe(resolved)
        #expect(printed.first { $0.0 == "ATTEST_CHALLENGE_SECRET" }?.1 == "***")
        #expect(!printed.contains { $0.1.contains(secret) })
    }
}
