import AttestCore
import AttestJobs
import DeviceIntelligence
import Observability
import PostgresClient
import Synchronization
import Testing

@testable import Store
@testable import Worker

/// The usage endpoint without a database: the path's parsing, the answer's figures, and the auth matrix
/// (shared secret, own key, another app's key, unknown credential, unregistered app) with its buckets.
@Suite struct UsageEndpointTests {
    static let team = "A1B2C3D4E5"
    static let bundle = "com.example.usage"
    static let app = AppIdentity(teamId: team, bundleId: bundle)
    static let other = AppIdentity(teamId: "Z9Y8X7W6V5", bundleId: "com.example.other")
    static let secret = String(repeating: "s", count: 32)
    static let ownKey = "ak_" + String(repeating: "o", count: 43)
    static let otherKey = "ak_" + String(repeating: "x", count: 43)
    /// 2026-04-24T03:06:40Z: month 2026-04.
    static let now = Timestamp(seconds: 1_777_000_000)

    static func endpoint(buckets: CountingBuckets = CountingBuckets(), perApp: RateLimitStore.Limit = .init(perMinute: 60, burst: 60))
        -> UsageEndpoint
    {
        UsageEndpoint(
            usage: { app, month throws(PGError) in
                guard app == Self.app else { return nil }
                return AppUsage(
                    app: app, month: month, quota: MonthlyQuota(devices: 150, limitReachedAt: Self.now.adding(seconds: -3600)),
                    madLimit: 120, graceDays: 7)
            },
            keyOwner: { hash throws(PGError) in
                hash == APIKeyStore.hash(Self.ownKey) ? Self.app : hash == APIKeyStore.hash(Self.otherKey) ? Self.other : nil
            },
            take: buckets.take,
            authenticator: ChallengeAuthenticator(
                sharedSecret: secret,
                keyHashes: { teamId, bundleId throws(PGError) in
                    teamId == Self.team && bundleId == Self.bundle ? [APIKeyStore.hash(Self.ownKey)] : [APIKeyStore.hash(Self.otherKey)]
                }),
            limits: .init(perApp: perApp, failuresPerAddress: .init(perMinute: 60, burst: 60), failures: .init(perMinute: 60, burst: 60)),
            clock: FixedClock(now), metrics: WorkerMetrics(), logger: Logger(level: .error, sink: { _ in }))
    }

    static func get(_ endpoint: UsageEndpoint, _ path: String, key: String?) -> (status: Int, json: JSONValue?, headers: [String: String]) {
        let response = endpoint.handle(
            HTTPRequest(
                method: "GET", path: path, headers: key.map { [(name: "Authorization", value: "Bearer " + $0)] } ?? [],
                clientAddress: "192.0.2.7"))
        return (response.status, JSONValue.parse(response.body), Dictionary(response.headers.map { ($0.name, $0.value) }) { a, _ in a })
    }

    static let path = "/v1/apps/\(team).\(bundle)/usage"

    @Test func pathNamesOneValidPair() {
        #expect(UsagePath.parse(Self.path) == .app(Self.app))
        // The first dot splits: the bundle keeps its own dots.
        #expect(UsagePath.parse("/v1/apps/A1B2C3D4E5.a.b.c/usage") == .app(AppIdentity(teamId: "A1B2C3D4E5", bundleId: "a.b.c")))
        for malformed in [
            "/v1/apps//usage", "/v1/apps/usage", "/v1/apps/A1B2C3D4E5/usage", "/v1/apps/A1B2C3D4E5./usage",
            "/v1/apps/a1b2c3d4e5.com.x/usage", "/v1/apps/A1B2C3D4E.com.x/usage", "/v1/apps/A1B2C3D4E5.com/x/usage",
            "/v1/apps/A1B2C3D4E5.com.x/usage/", "/v1/apps/A1B2C3D4E5.com.x", "/v1/apps/A1B2C3D4E5.com x/usage",
            "/v1/apps/A1B2C3D4E5." + String(repeating: "a", count: 256) + "/usage",
            "/v1/apps/" + String(repeating: "A", count: 100_000) + "/usage",
        ] {
            guard case .malformed(let problem) = UsagePath.parse(malformed) else {
                Issue.record("accepted \(malformed.prefix(60))")
                continue
            }
            #expect(!problem.isEmpty)
        }
    }

    @Test func answerCarriesTheMonthsFigures() {
        let answer = Self.get(Self.endpoint(), Self.path, key: Self.ownKey)
        #expect(answer.status == 200)
        let json = answer.json
        #expect(json?["teamId"]?.stringValue == Self.team)
        #expect(json?["bundleId"]?.stringValue == Self.bundle)
        #expect(json?["month"]?.stringValue == "2026-04")
        #expect(json?["devices"] == .int(150))
        #expect(json?["limit"] == .int(120))
        #expect(json?["percent"] == .int(125))
        #expect(json?["graceEndsAt"]?.stringValue == Self.now.adding(seconds: 7 * 86_400 - 3600).rfc3339)
    }

    @Test func figuresWithoutALimitOrBeforeReachingIt() {
        let none = AppUsage(app: Self.app, month: "2026-04", quota: MonthlyQuota(devices: 3), madLimit: nil, graceDays: 7)
        #expect(none.percent == nil && none.graceEndsAt == nil && none.json["limit"] == .null)
        let under = AppUsage(app: Self.app, month: "2026-04", quota: MonthlyQuota(devices: 199), madLimit: 200, graceDays: 7)
        #expect(under.percent == 99 && under.graceEndsAt == nil)
        let zero = AppUsage(app: Self.app, month: "2026-04", quota: MonthlyQuota(devices: 0), madLimit: 0, graceDays: 7)
        #expect(zero.percent == nil)
        // A grace period beyond a year is a year, as the quota step reads it.
        let reached = Timestamp(seconds: 1_000)
        let long = AppUsage(
            app: Self.app, month: "1970-01", quota: MonthlyQuota(devices: 5, limitReachedAt: reached), madLimit: 5, graceDays: .max)
        #expect(long.graceEndsAt == reached.adding(seconds: 366 * 86_400))
    }

    @Test func authMatrix() {
        let buckets = CountingBuckets()
        let endpoint = Self.endpoint(buckets: buckets)
        #expect(Self.get(endpoint, Self.path, key: Self.secret).status == 200)
        #expect(Self.get(endpoint, Self.path, key: Self.ownKey).status == 200)
        let forbidden = Self.get(endpoint, Self.path, key: Self.otherKey)
        #expect(forbidden.status == 403 && forbidden.json?["error"]?.stringValue == "forbidden")
        let missing = Self.get(endpoint, Self.path, key: nil)
        #expect(missing.status == 401 && missing.headers["WWW-Authenticate"] != nil)
        #expect(Self.get(endpoint, Self.path, key: "ak_" + String(repeating: "n", count: 43)).status == 401)
        #expect(Self.get(endpoint, Self.path, key: "wrong").status == 401)
        // The other app's own key reads the other app, which is not registered here: 404, not 403.
        let unknown = Self.get(endpoint, "/v1/apps/\(Self.other.teamId).\(Self.other.bundleId)/usage", key: Self.otherKey)
        #expect(unknown.status == 404 && unknown.json?["error"]?.stringValue == "unknown_app")
        // An unregistered app's existence is not shown to a credential not admitted for it.
        #expect(Self.get(endpoint, "/v1/apps/Q1Q1Q1Q1Q1.com.nobody/usage", key: Self.ownKey).status == 403)
        #expect(Self.get(endpoint, "/v1/apps/Q1Q1Q1Q1Q1.com.nobody/usage", key: nil).status == 401)
        #expect(Self.get(endpoint, "/v1/apps/bad/usage", key: Self.ownKey).status == 400)
        // Every refusal took from the address and shared buckets; admitted ones from the app's usage bucket.
        #expect(buckets.count("unauthenticated") == 6)
        #expect(buckets.count("ip:192.0.2.7") == 6)
        #expect(buckets.count("usage:" + Self.app.appId) == 2)
        #expect(buckets.count("app:" + Self.app.appId) == 0)
    }

    @Test func admittedRequestsAreRateLimitedPerApp() {
        let endpoint = Self.endpoint(perApp: .init(perMinute: 60, burst: 2))
        #expect(Self.get(endpoint, Self.path, key: Self.ownKey).status == 200)
        #expect(Self.get(endpoint, Self.path, key: Self.ownKey).status == 200)
        let limited = Self.get(endpoint, Self.path, key: Self.ownKey)
        #expect(limited.status == 429 && limited.headers["Retry-After"] != nil)
    }
}
