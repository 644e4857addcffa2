import AttestCrypto
import AttestJobs
import Observability
import PostgresClient

/// `POST /v1/challenges`: `{"teamId", "bundleId"}` → 201 `{"challenge", "expiresAt", "teamId", "bundleId"}`
/// for a registered app. Errors are JSON `{"error", "message"}`: 400 for a body that is not exactly that
/// object (or whose teamId and bundleId are not a valid App ID prefix and bundle identifier), 404 for an app that is not registered, 413 for an oversized body, 429 (with `Retry-After`) past
/// the app's rate, 503 when the database cannot be reached.
///
/// The handler runs on a libmicrohttpd connection thread and does one INSERT through ``ChallengeIssuer``,
/// whose connection is its own and whose retries are bounded, so the thread is held for seconds at most.
public struct ChallengeEndpoint: Sendable {
    public static let path = "/v1/challenges"
    /// The body is two short strings; anything much larger is not a challenge request.
    static let maxBodyBytes = 4096

    public typealias Issue = @Sendable (_ teamId: String, _ bundleId: String) throws(ChallengeIssuer.IssueError) -> IssuedChallenge

    private let issue: Issue
    private let limiter: AppRateLimiter
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let requests: Counter

    public init(issue: @escaping Issue, limiter: AppRateLimiter, metrics: WorkerMetrics, logger: Logger) {
        self.issue = issue
        self.limiter = limiter
        self.logger = logger
        self.metrics = metrics
        requests = metrics.registry.counter(
            "attest_challenge_requests_total", help: "Challenge issuance requests, by HTTP status.", labelNames: ["status"])
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
            return Self.error(413, "too_large", "the body must be at most \(Self.maxBodyBytes) bytes")
        }
        guard let json = JSONValue.parse(request.body, maxDepth: 2), case .object(let members) = json,
            members.count == 2, let teamId = json["teamId"]?.stringValue, let bundleId = json["bundleId"]?.stringValue
        else {
            return Self.error(400, "invalid_request", "the body must be a JSON object with exactly teamId and bundleId, both strings")
        }
        // The exact pair a job would have to name (AppIdentity): also what keeps bucket keys small and distinct.
        guard let identity = AppIdentity(validating: teamId, bundleId) else {
            let problem = AppIdentity.teamIdProblem(teamId) ?? AppIdentity.bundleIdProblem(bundleId) ?? ""
            return Self.error(400, "invalid_request", problem)
        }
        let app = identity.appId
        if let retryAfter = limiter.take(app) {
            var response = Self.error(429, "rate_limited", "too many challenges for \(app); retry in \(retryAfter) s")
            response.headers.append((name: "Retry-After", value: String(retryAfter)))
            return response
        }
        do {
            let issued = try issue(teamId, bundleId)
            return HTTPResponse(status: 201, contentType: "application/json", body: Array(issued.json.serialized().utf8))
        } catch {
            switch error {
            case .unknownApp:
                limiter.forget(app)
                return Self.error(404, "unknown_app", "app \(app) is not registered")
            case .randomUnavailable(let failure):
                logger.error("challenge issuance failed", [("error", .string(failure.description))])
                return Self.error(503, "unavailable", "challenges cannot be issued right now")
            case .database(let failure):
                metrics.errors.labels(["db"]).increment()
                logger.error("challenge issuance failed", [("error", .string(failure.description))])
                return Self.error(503, "unavailable", "challenges cannot be issued right now")
            }
        }
    }

    private static func error(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        let body = JSONValue.object([("error", .string(code)), ("message", .string(message))]).serialized()
        return HTTPResponse(status: status, contentType: "application/json", body: Array(body.utf8))
    }
}
