import AttestCore
import AttestJobs
import Observability
import PostgresClient
import Store

/// `GET /v1/apps/{teamId}.{bundleId}/usage` with `Authorization: Bearer KEY` → 200 ``AppUsage`` JSON (this
/// UTC month, from the injected clock). Errors are JSON `{"error", "message"}`: 400 for a path that names no
/// valid pair, 401 (with `WWW-Authenticate`) without a credential that is a key of some app or the shared
/// secret, 403 for an API key of another app (a key authorizes its own app only), 404 for an unregistered
/// app (only a credential admitted for that app learns this), 429 (with `Retry-After`) past a rate, 503 when
/// the database cannot be reached.
///
/// Admission and rates are the challenge endpoint's (``ChallengeAuthenticator``, the same buckets for
/// refusals, so scanning keys here costs what it costs there); an admitted request takes from its app's
/// usage bucket, at the per-app challenge rate but apart from it, so polling usage never starves issuance.
/// At most four short round trips, each with bounded retries, on a libmicrohttpd connection thread.
public struct UsageEndpoint: Sendable {
    public typealias Usage = @Sendable (_ app: AppIdentity, _ month: String) throws(PGError) -> AppUsage?
    public typealias KeyOwner = @Sendable (_ keyHash: [UInt8]) throws(PGError) -> AppIdentity?

    private let usage: Usage
    private let keyOwner: KeyOwner
    private let take: ChallengeEndpoint.Take
    private let refusals = RefusalBuckets()
    private let authenticator: ChallengeAuthenticator
    private let limits: ChallengeEndpoint.Limits
    private let clock: any Clock
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let requests: Counter

    public init(
        usage: @escaping Usage, keyOwner: @escaping KeyOwner, take: @escaping ChallengeEndpoint.Take,
        authenticator: ChallengeAuthenticator, limits: ChallengeEndpoint.Limits, clock: any Clock, metrics: WorkerMetrics,
        logger: Logger
    ) {
        self.usage = usage
        self.keyOwner = keyOwner
        self.take = take
        self.authenticator = authenticator
        self.limits = limits
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        requests = metrics.registry.counter(
            "attest_usage_requests_total", help: "Usage requests, by HTTP status.", labelNames: ["status"])
    }

    /// Figures and key owners over `reader`'s connection, keys and buckets over `issuer`'s (the challenge
    /// endpoint's).
    public init(
        reader: UsageReader, issuer: ChallengeIssuer, sharedSecret: String?, limits: ChallengeEndpoint.Limits, clock: any Clock,
        metrics: WorkerMetrics, logger: Logger
    ) {
        self.init(
            usage: { app, month throws(PGError) in try reader.usage(of: app, month: month) },
            keyOwner: { hash throws(PGError) in try reader.keyOwner(hash) },
            take: { bucket, limit throws(PGError) in try issuer.take(bucket, limit) },
            authenticator: ChallengeAuthenticator(
                sharedSecret: sharedSecret,
                keyHashes: { teamId, bundleId throws(PGError) in try issuer.activeKeyHashes(teamId: teamId, bundleId: bundleId) }),
            limits: limits, clock: clock, metrics: metrics, logger: logger)
    }

    public func register(on routes: inout HTTPRoutes) {
        routes.add("GET", prefix: UsagePath.prefix) { request in
            let response = handle(request)
            requests.labels([String(response.status)]).increment()
            return response
        }
    }

    /// Answers one usage request (what the route runs, less the request counter).
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let app: AppIdentity
        switch UsagePath.parse(request.path) {
        case .malformed(let problem): return HTTPResponse.jsonError(400, "invalid_request", problem)
        case .app(let identity): app = identity
        }
        let authorization = request.header("Authorization")
        do throws(PGError) {
            guard try authenticator.admits(authorization: authorization, teamId: app.teamId, bundleId: app.bundleId) else {
                if let retryAfter = try refusals.take(
                    address: ClientAddress.bucketKey(request.clientAddress), perAddress: limits.failuresPerAddress,
                    all: limits.failures, take)
                {
                    return .rateLimited(retryAfter, "too many refused requests")
                }
                // Only a real key of another app is told so; anything else reads as no credential at all.
                if let credential = ChallengeAuthenticator.bearer(authorization), credential.hasPrefix(APIKeyStore.prefix),
                    try keyOwner(APIKeyStore.hash(credential)) != nil
                {
                    return HTTPResponse.jsonError(403, "forbidden", "this API key is not one of \(app.appId)'s")
                }
                var response = HTTPResponse.jsonError(401, "unauthorized", "an API key of this app is required: Authorization: Bearer KEY")
                response.headers.append((name: "WWW-Authenticate", value: #"Bearer realm="attest-worker""#))
                return response
            }
            if let retryAfter = try take("usage:" + app.appId, limits.perApp) {
                return .rateLimited(retryAfter, "too many usage requests for \(app.appId)")
            }
            guard let figures = try usage(app, clock.now().utcMonth) else {
                return HTTPResponse.jsonError(404, "unknown_app", "app \(app.appId) is not registered")
            }
            return HTTPResponse(status: 200, contentType: "application/json", body: Array(figures.json.serialized().utf8))
        } catch {
            metrics.errors.labels(["db"]).increment()
            logger.error("usage request failed", [("error", .string(error.description))])
            return HTTPResponse.jsonError(503, "unavailable", "usage cannot be read right now")
        }
    }
}
