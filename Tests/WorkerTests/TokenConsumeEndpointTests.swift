import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import Foundation
import Observability
import PostgresClient
import Synchronization
import Testing

@testable import Store
@testable import Worker

/// `POST /v1/tokens/consume` without a database (a ledger in memory): every answer of the decision, in
/// order, and the metrics it counts.
@Suite struct TokenConsumeEndpointTests {
    static let app = AppIdentity(teamId: "A1B2C3D4E5", bundleId: "com.example.app")
    static let other = AppIdentity(teamId: "Z9Y8X7W6V5", bundleId: "com.example.other")
    static let secret = String(repeating: "s", count: 32)
    static let ownKey = "ak_" + String(repeating: "o", count: 43)
    static let otherKey = "ak_" + String(repeating: "x", count: 43)
    static let issuedAt = Timestamp(seconds: 1_777_636_800)
    static let signingKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOiT/r52+g8arqh1P
        rAWZ/csuRc++VB2+13bUTDDtWH6hRANCAAT2NUQRrbre/2zGRvxxYdBqlyyW/d0U
        gQAocswI537LChA35o1jFpJb+KHBl3Dyqmuh9LN/yvU1y77DVRubNAWC
        -----END PRIVATE KEY-----
        """

    /// The spent jtis, and the ledger's forced answer when set.
    final class Ledger: Sendable {
        let spent = Mutex<Set<String>>([])
        let failing = Mutex(false)
        let expired = Mutex(false)

        var spend: TokenConsumeEndpoint.Spend {
            { [self] spendable, _ throws(PGError) in
                if failing.withLock({ $0 }) { throw PGError(code: .connectionLost, message: "gone") }
                if expired.withLock({ $0 }) { return .expired }
                return spent.withLock { $0.insert(spendable.app.appId + "/" + spendable.jti).inserted } ? .consumed : .alreadyConsumed
            }
        }
    }

    final class Fixture {
        let ledger = Ledger()
        let buckets = CountingBuckets()
        let clock = ManualClock(TokenConsumeEndpointTests.issuedAt.adding(seconds: 5))
        let metrics = WorkerMetrics()
        let signer = try! TokenSigner(keys: [try! ECPrivateKey(pem: TokenConsumeEndpointTests.signingKey)])
        /// One endpoint per fixture: its counters are registered once.
        let endpoint: TokenConsumeEndpoint

        init() {
            endpoint = TokenConsumeEndpoint(
                verifier: TokenVerifier(jwks: signer.jwks, clock: clock, leewaySeconds: 60), issuer: signer.issuer,
                sharedSecret: TokenConsumeEndpointTests.secret,
                keyOwner: { hash throws(PGError) in
                    hash == APIKeyStore.hash(TokenConsumeEndpointTests.ownKey)
                        ? TokenConsumeEndpointTests.app
                        : hash == APIKeyStore.hash(TokenConsumeEndpointTests.otherKey) ? TokenConsumeEndpointTests.other : nil
                },
                spend: ledger.spend, take: buckets.take,
                limits: .init(
                    perApp: .init(perMinute: 60, burst: 60), failuresPerAddress: .init(perMinute: 60, burst: 60),
                    failures: .init(perMinute: 60, burst: 60)),
                metrics: metrics, logger: Logger(level: .error, sink: { _ in }))
        }

        func token(limitedUse: Bool = true, jobId: String = "job-1", lifetime: Int64 = 300) -> String {
            var verdict = Verdict(job: nil, verifiedAt: TokenConsumeEndpointTests.issuedAt)
            verdict.jobId = jobId
            verdict.kind = .assertion
            verdict.keyId = "HXuyCE8REKn8prt0WZeySyrtcaQ0AY20K4tx+IbYtS8="
            verdict.teamId = TokenConsumeEndpointTests.app.teamId
            verdict.bundleId = TokenConsumeEndpointTests.app.bundleId
            try! verdict.attachToken(signer: signer, lifetimeSeconds: lifetime, limitedUse: limitedUse)
            return verdict.token!
        }

        func post(_ body: String, key: String?) -> (status: Int, json: JSONValue?, headers: [String: String]) {
            let response = endpoint.handle(
                HTTPRequest(
                    method: "POST", path: TokenConsumeEndpoint.path, body: Array(body.utf8),
                    headers: key.map { [(name: "Authorization", value: "Bearer " + $0)] } ?? [], clientAddress: "192.0.2.7"))
            return (response.status, JSONValue.parse(response.body), Dictionary(response.headers.map { ($0.name, $0.value) }) { a, _ in a })
        }

        func consume(_ token: String, key: String? = TokenConsumeEndpointTests.ownKey) -> (status: Int, json: JSONValue?, headers: [String: String]) {
            post(JSONValue.object([("token", .string(token))]).serialized(), key: key)
        }

        func metric(_ line: String) -> Bool { metrics.registry.render().split(separator: "\n").contains { $0 == line } }
    }

    @Test func firstCallSpendsAndAnswersTheClaimsLaterOnesConflict() throws {
        let f = Fixture()
        let token = f.token()
        let first = f.consume(token)
        #expect(first.status == 200)
        let claims = try #require(first.json?["claims"])
        #expect(claims["limitedUse"] == .bool(true) && claims["aud"] == .string(Self.app.appId))
        for key in [Self.ownKey, Self.secret] {
            let again = f.consume(token, key: key)
            #expect(again.status == 409 && again.json?["error"] == .string("token_already_consumed"))
        }
        // Another token of the app is its own.
        #expect(f.consume(f.token(jobId: "job-2")).status == 200)
        #expect(f.metric("attest_tokens_consumed_total 2"))
        #expect(f.metric(#"attest_token_consume_refused_total{reason="already_consumed"} 2"#))
    }

    @Test func theSharedSecretSpendsAnyAppsTokenAKeyOnlyItsOwn() {
        let f = Fixture()
        let token = f.token()
        let foreign = f.consume(token, key: Self.otherKey)
        #expect(foreign.status == 403 && foreign.json?["error"] == .string("forbidden"))
        #expect(f.consume(token, key: Self.secret).status == 200, "a refused consumer spends nothing")
        #expect(f.metric(#"attest_token_consume_refused_total{reason="forbidden"} 1"#))
        #expect(f.buckets.count("unauthenticated") == 0, "a real key of another app is no scan")
    }

    @Test func noCredentialIsUnauthorizedAndTakesFromTheRefusalBuckets() {
        let f = Fixture()
        let token = f.token()
        for key in [nil, "ak_" + String(repeating: "A", count: 43), "not-a-key", String(repeating: "t", count: 32)] {
            let answer = f.consume(token, key: key)
            #expect(answer.status == 401 && answer.json?["error"] == .string("unauthorized"), "\(key ?? "none")")
            #expect(answer.headers["WWW-Authenticate"] != nil)
        }
        #expect(f.buckets.count("unauthenticated") == 4 && f.buckets.count("ip:192.0.2.7") == 4)
        #expect(f.consume(token).status == 200, "nothing was spent by a refused credential")
    }

    @Test func badTokensAreUnauthorizedWithTheReason() {
        let f = Fixture()
        let token = f.token(lifetime: 300)
        var signature = Array(token.utf8)
        signature[signature.count - 5] = signature[signature.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        for (bad, reason) in [("x.y.z", "malformed"), (String(decoding: signature, as: UTF8.self), "signature_invalid")] {
            let answer = f.consume(bad)
            #expect(answer.status == 401 && answer.json?["error"] == .string("token_invalid"))
            #expect(answer.json?["reason"] == .string(reason), "\(answer.json?.serialized() ?? "")")
        }
        // Past exp plus the leeway: expired, and never spent.
        f.clock.advance(seconds: 300 + 60)
        let late = f.consume(token)
        #expect(late.status == 401 && late.json?["reason"] == .string("expired"))
        #expect(f.ledger.spent.withLock { $0.isEmpty })
        #expect(f.metric(#"attest_token_consume_refused_total{reason="expired"} 1"#))
    }

    @Test func aTokenWithoutTheClaimIsNotConsumable() {
        let f = Fixture()
        let answer = f.consume(f.token(limitedUse: false))
        #expect(answer.status == 422 && answer.json?["error"] == .string("token_not_limited_use"))
        #expect(f.ledger.spent.withLock { $0.isEmpty })
    }

    @Test func theBodyIsExactlyOneTokenAndBounded() {
        let f = Fixture()
        let token = f.token()
        for body in ["", "[]", #"{"token": 1}"#, #"{"token":"\#(token)","extra":1}"#, #"{"jwt":"\#(token)"}"#] {
            #expect(f.post(body, key: Self.ownKey).status == 400, "\(body.prefix(30))")
        }
        #expect(f.post(#"{"token":""# + String(repeating: "a", count: 20_000) + #""}"#, key: Self.ownKey).status == 413)
    }

    @Test func theLedgersAnswersMapToStatuses() {
        let f = Fixture()
        let token = f.token()
        f.ledger.expired.withLock { $0 = true }
        #expect(f.consume(token).json?["reason"] == .string("expired"), "the database's clock says expired: refused as such")
        f.ledger.expired.withLock { $0 = false }
        f.ledger.failing.withLock { $0 = true }
        let down = f.consume(token)
        #expect(down.status == 503 && down.json?["error"] == .string("unavailable"))
        f.ledger.failing.withLock { $0 = false }
        #expect(f.consume(token).status == 200)
    }
}

/// The ledger against the ops/stack PostgreSQL: one statement decides, across connections, and the purge
/// deletes only what the verifier refuses anyway.
@Suite(.serialized) struct ConsumedTokenStoreTests {
    typealias Database = ReceiptRefreshStoreTests.Database
    static let app = AppIdentity(teamId: "A1B2C3D4E5", bundleId: "com.example.app")

    @Test func twentyConnectionsRaceForOneTokenAndOneWins() throws {
        let db = try Database()
        let exp = Int64(Date().timeIntervalSince1970) + 300
        let stores = (0..<20).map { _ in ConsumedTokenStore(conninfo: db.url) }
        // Each store's connection opened before the race, so the statements, not the connects, meet.
        for store in stores { _ = try store.consume(app: Self.app, jti: "warm-up", expiresAt: exp, skewSeconds: 0) }
        let outcomes = Mutex<[ConsumedTokenStore.Outcome]>([])
        // Twenty threads released together (Dispatch's concurrentPerform would run two at a time here).
        let ready = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for store in stores {
            done.enter()
            Thread.detachNewThread {
                ready.signal()
                go.wait()
                let outcome = try? store.consume(app: Self.app, jti: "jti-race", expiresAt: exp, skewSeconds: 0)
                outcomes.withLock { $0.append(outcome ?? .expired) }
                done.leave()
            }
        }
        for _ in stores { ready.wait() }
        for _ in stores { go.signal() }
        done.wait()
        let all = outcomes.withLock { $0 }
        #expect(all.filter { $0 == .consumed }.count == 1)
        #expect(all.filter { $0 == .alreadyConsumed }.count == 19)
        // The jti of another app is another token.
        let other = AppIdentity(teamId: "Z9Y8X7W6V5", bundleId: "com.example.app")
        #expect(try stores[0].consume(app: other, jti: "jti-race", expiresAt: exp, skewSeconds: 0) == .consumed)
    }

    @Test func pastExpPlusSkewNothingIsSpentAndThePurgeDeletes() throws {
        let db = try Database()
        let store = ConsumedTokenStore(conninfo: db.url)
        let now = Int64(Date().timeIntervalSince1970)
        // Expired 30 s ago: within a 60 s skew it is still spent once; with none, it is expired.
        #expect(try store.consume(app: Self.app, jti: "late", expiresAt: now - 30, skewSeconds: 60) == .consumed)
        #expect(try store.consume(app: Self.app, jti: "late", expiresAt: now - 30, skewSeconds: 60) == .alreadyConsumed)
        #expect(try store.consume(app: Self.app, jti: "never", expiresAt: now - 30, skewSeconds: 0) == .expired)
        #expect(try store.consume(app: Self.app, jti: "live", expiresAt: now + 300, skewSeconds: 0) == .consumed)
        let rows = { () throws -> Int64 in
            try db.connection.execute("SELECT count(*) FROM consumed_tokens").int(0, 0) ?? -1
        }
        #expect(try rows() == 2)
        // The purge keeps a row for the skew plus the margin: with a 60 s skew, "late" (30 s past) stays.
        #expect(try db.store().purgeConsumedTokens(skewSeconds: 60) == 0)
        // With none, "late" is past exp plus the margin and goes; "live" stays.
        #expect(try db.store().purgeConsumedTokens(skewSeconds: 0) == 1)
        #expect(try rows() == 1)
        // Once purged, the token is refused as expired by the statement itself, never spent again.
        #expect(try store.consume(app: Self.app, jti: "late", expiresAt: now - 30, skewSeconds: 0) == .expired)
    }
}
