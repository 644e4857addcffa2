import AttestCore
import AttestCrypto
import AttestJobs
import Observability
import PostgresClient
import Store

/// `POST /v1/challenges` with `Authorization: Bearer KEY` and `{"teamId", "bundleId"}` → 201 `{"challenge",
/// "expiresAt", "teamId", "bundleId"}`. Errors are JSON `{"error", "message"}`: 400 for a body that is not
/// exactly that object (or whose teamId and bundleId are not a valid App ID prefix and
/// bundle identifier), 401 (with `WWW-Authenticate`) without a key that admits this app — the same answer
/// whether or not the app exists —, 404 for an unregistered app (only the shared secret's holder gets this
/// far), 413 for an oversized body, 429 (with `Retry-After`) past a rate, 503 when the database cannot be
/// reached.
///
/// Checks in order, each with its answer: the body (400/413), the credential (401), and the rate buckets,
/// all in PostgreSQL and so shared by every worker: a refused credential takes from its client address's
/// bucket and then from the bucket of all refusals (429 once either is empty, so scanning app ids or keys
/// costs the scanner; ``RefusalBuckets`` answers the rest of the wait from memory), an admitted one from
/// its app's bucket (429).
///
/// The handler runs on a libmicrohttpd connection thread and makes at most three short round trips over
/// ``ChallengeIssuer``'s own connection, whose retries are bounded, so the thread is held for seconds at most.
public struct ChallengeEndpoint: Sendable {
    public static let path = "/v1/challenges"
    /// The body is two short strings; anything much larger is not a challenge request.
    static let maxBodyBytes = 4096

    public typealias Issue = @Sendable (_ teamId: String, _ bundleId: String) throws(ChallengeIssuer.IssueError) -> IssuedChallenge
    public typealias Take = @Sendable (_ bucket: String, _ limit: RateLimitStore.Limit) throws(PGError) -> Int?

    /// The three rates (`ATTEST_CHALLENGES_PER_MINUTE`/`_BURST`, `ATTEST_CHALLENGE_FAILURES_PER_IP_PER_MINUTE`,
    /// `ATTEST_CHALLENGE_FAILURES_PER_MINUTE`).
    public struct Limits: Sendable {
        public var perApp: RateLimitStore.Limit
        public var failuresPerAddress: RateLimitStore.Limit
        public var failures: RateLimitStore.Limit

        public init(perApp: RateLimitStore.Limit, failuresPerAddress: RateLimitStore.Limit, failures: RateLimitStore.Limit) {
            self.perApp = perApp
            self.failuresPerAddress = failuresPerAddress
            self.failures = failures
        }
    }

    private let issue: Issue
    private let take: Take
    private let authenticator: ChallengeAuthenticator
    private let limits: Limits
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let requests: Counter
    private let refusals = RefusalBuckets()

    public init(
        issue: @escaping Issue, take: @escaping Take, authenticator: ChallengeAuthenticator, limits: Limits,
        metrics: WorkerMetrics, logger: Logger
    ) {
        self.issue = issue
        self.take = take
        self.authenticator = authenticator
        self.limits = limits
        self.logger = logger
        self.metrics = metrics
        requests = metrics.registry.counter(
            "attest_challenge_requests_total", help: "Challenge issuance requests, by HTTP status.", labelNames: ["status"])
    }

    /// Everything over `issuer`'s connection.
    public init(issuer: ChallengeIssuer, sharedSecret: String?, limits: Limits, metrics: WorkerMetrics, logger: Logger) {
        self.init(
            issue: { teamId, bundleId throws(ChallengeIssuer.IssueError) in try issuer.issue(teamId: teamId, bundleId: bundleId) },
            take: { bucket, limit throws(PGError) in try issuer.take(bucket, limit) },
            authenticator: ChallengeAuthenticator(
                sharedSecret: sharedSecret,
                keyHashes: { teamId, bundleId throws(PGError) in try issuer.activeKeyHashes(teamId: teamId, bundleId: bundleId) }),
            limits: limits, metrics: metrics, logger: logger)
    }

    public func register(on routes: inout HTTPRoutes) {
        routes.add("POST", Self.path) { request in
            let response = handle(request)
            requests.labels([String(response.status)]).increment()
            return response
        }
    }

    /// Answers one issuance request (what the route runs, less the request counter).
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        guard request.body.count <= Self.maxBodyBytes else {
            return HTTPResponse.jsonError(413, "too_large", "the body must be at most \(Self.maxBodyBytes) bytes")
        }
        guard let json = JSONValue.parse(request.body, maxDepth: 2), case .object(let members) = json,
            members.count == 2, let teamId = json["teamId"]?.stringValue, let bundleId = json["bundleId"]?.stringValue
        else {
            return HTTPResponse.jsonError(400, "invalid_request", "the body must be a JSON object with exactly teamId and bundleId, both strings")
        }
        // The exact pair a job would have to name (AppIdentity): also what keeps bucket keys small and distinct.
        guard let identity = AppIdentity(validating: teamId, bundleId) else {
            let problem = AppIdentity.teamIdProblem(teamId) ?? AppIdentity.bundleIdProblem(bundleId) ?? ""
            return HTTPResponse.jsonError(400, "invalid_request", problem)
        }
        do throws(PGError) {
            guard try authenticator.admits(authorization: request.header("Authorization"), teamId: teamId, bundleId: bundleId) else {
                // The client's address, then every refusal together: one scanner is held back by the first, many
                // by the second, and a limited address does not drain the shared bucket further.
                if let retryAfter = try refusals.take(
                    address: ClientAddress.bucketKey(request.clientAddress), perAddress: limits.failuresPerAddress,
                    all: limits.failures, take)
                {
                    return HTTPResponse.rateLimited(retryAfter, "too many refused requests")
                }
                var response = HTTPResponse.jsonError(401, "unauthorized", "an API key of this app is required: Authorization: Bearer KEY")
                response.headers.append((name: "WWW-Authenticate", value: #"Bearer realm="attest-worker""#))
                return response
            }
            if let retryAfter = try take("app:" + identity.appId, limits.perApp) {
                return HTTPResponse.rateLimited(retryAfter, "too many challenges for \(identity.appId)")
            }
        } catch {
            metrics.errors.labels(["db"]).increment()
            logger.error("challenge authentication failed", [("error", .string(error.description))])
            return HTTPResponse.jsonError(503, "unavailable", "challenges cannot be issued right now")
        }
        do {
            let issued = try issue(teamId, bundleId)
            return HTTPResponse(status: 201, contentType: "application/json", body: Array(issued.json.serialized().utf8))
        } catch {
            switch error {
            case .unknownApp:
                return HTTPResponse.jsonError(404, "unknown_app", "app \(teamId).\(bundleId) is not registered")
            case .randomUnavailable(let failure):
                logger.error("challenge issuance failed", [("error", .string(failure.description))])
                return HTTPResponse.jsonError(503, "unavailable", "challenges cannot be issued right now")
            case .database(let failure):
                metrics.errors.labels(["db"]).increment()
                logger.error("challenge issuance failed", [("error", .string(failure.description))])
                return HTTPResponse.jsonError(503, "unavailable", "challenges cannot be issued right now")
            }
        }
    }
}
