import AttestCore
import AttestCrypto
import AttestJobs
import AttestTokens
import Observability
import PostgresClient
import Store

/// `POST /v1/tokens/consume` with `Authorization: Bearer KEY` and `{"token"}` → 200 `{"claims"}` the first
/// time a limited-use token is presented, by any worker; 409 `token_already_consumed` every later time
/// (CONTRACT 6). Errors are JSON `{"error", "message"}` (token errors add `reason`): 400 for a body that is
/// not exactly that object, 401 `unauthorized` (with `WWW-Authenticate`) without a credential that is an
/// API key or the shared secret, 401 `token_invalid` with the verifier's reason (`expired`,
/// `signature_invalid`, `unknown_kid` for a key no longer published, …), 403 `forbidden` for a valid token of
/// another app than the key's, 413 for an oversized body, 422 `token_not_limited_use` for a valid token
/// without the claim, 429 (with `Retry-After`) past the refusal rates, 503 when the database cannot be
/// reached.
///
/// Checks in order: the body, the credential (refusals take from the challenge endpoint's refusal buckets,
/// so scanning keys here costs what it costs there), the token (``TokenConsumption``), then one statement
/// of ``ConsumedTokenStore``. An admitted consumer is not rate-limited: each call spends at most one token
/// the worker signed, so its calls are bounded by the tokens its app was issued.
public struct TokenConsumeEndpoint: Sendable {
    public static let path = "/v1/tokens/consume"
    /// The token and the object around it.
    static let maxBodyBytes = TokenVerifier.maxTokenBytes + 256

    public typealias KeyOwner = @Sendable (_ keyHash: [UInt8]) throws(PGError) -> AppIdentity?
    public typealias Spend = @Sendable (_ spendable: TokenConsumption.Spendable, _ skewSeconds: Int64) throws(PGError) -> ConsumedTokenStore.Outcome

    private let verifier: TokenVerifier
    private let issuer: String
    private let sharedSecretHash: [UInt8]?
    private let keyOwner: KeyOwner
    private let spend: Spend
    private let take: ChallengeEndpoint.Take
    private let refusals = RefusalBuckets()
    private let limits: ChallengeEndpoint.Limits
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let consumed: Counter
    private let refused: Counter

    /// - Parameter verifier: the worker's published key set, its clock, and the skew allowance
    ///   (`ATTEST_MAX_FUTURE_SKEW`) as leeway: the ledger keeps a spent token as long as this accepts it.
    public init(
        verifier: TokenVerifier, issuer: String, sharedSecret: String?, keyOwner: @escaping KeyOwner, spend: @escaping Spend,
        take: @escaping ChallengeEndpoint.Take, limits: ChallengeEndpoint.Limits, metrics: WorkerMetrics, logger: Logger
    ) {
        self.verifier = verifier
        self.issuer = issuer
        sharedSecretHash = sharedSecret.flatMap { $0.isEmpty ? nil : Digest.sha256.hash(Array($0.utf8)) }
        self.keyOwner = keyOwner
        self.spend = spend
        self.take = take
        self.limits = limits
        self.logger = logger
        self.metrics = metrics
        consumed = metrics.registry.counter(
            "attest_tokens_consumed_total", help: "Limited-use tokens spent (POST /v1/tokens/consume answered 200).")
        refused = metrics.registry.counter(
            "attest_token_consume_refused_total",
            help: "Token consumptions refused, by reason: already_consumed, forbidden, not_limited_use, unauthorized, "
                + "the token's (expired, signature_invalid, unknown_kid, …), invalid_request, rate_limited, unavailable.",
            labelNames: ["reason"])
    }

    /// Keys over `reader`'s connection (the usage endpoint's), spending over `store`'s, buckets over `issuer`'s.
    public init(
        verifier: TokenVerifier, issuer tokenIssuer: String, store: ConsumedTokenStore, reader: UsageReader,
        challengeIssuer: ChallengeIssuer, sharedSecret: String?, limits: ChallengeEndpoint.Limits, metrics: WorkerMetrics,
        logger: Logger
    ) {
        self.init(
            verifier: verifier, issuer: tokenIssuer, sharedSecret: sharedSecret,
            keyOwner: { hash throws(PGError) in try reader.keyOwner(hash) },
            spend: { spendable, skew throws(PGError) in
                try store.consume(app: spendable.app, jti: spendable.jti, expiresAt: spendable.expiresAt, skewSeconds: skew)
            },
            take: { bucket, limit throws(PGError) in try challengeIssuer.take(bucket, limit) },
            limits: limits, metrics: metrics, logger: logger)
    }

    public func register(on routes: inout HTTPRoutes) {
        routes.add("POST", Self.path) { request in handle(request) }
    }

    /// Answers one consumption, counting it.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let (response, refusal) = answer(request)
        if let refusal { refused.labels([refusal]).increment() } else { consumed.increment() }
        return response
    }

    /// The response, and the refusal's metric reason (nil: spent).
    private func answer(_ request: HTTPRequest) -> (HTTPResponse, String?) {
        guard request.body.count <= Self.maxBodyBytes else {
            return (HTTPResponse.jsonError(413, "too_large", "the body must be at most \(Self.maxBodyBytes) bytes"), "invalid_request")
        }
        guard let json = JSONValue.parse(request.body, maxDepth: 2), case .object(let members) = json, members.count == 1,
            let token = json["token"]?.stringValue
        else {
            return (HTTPResponse.jsonError(400, "invalid_request", "the body must be a JSON object with exactly token, a string"), "invalid_request")
        }
        do throws(PGError) {
            guard let consumer = try consumer(request.header("Authorization")) else {
                if let retryAfter = try refusals.take(
                    address: ClientAddress.bucketKey(request.clientAddress), perAddress: limits.failuresPerAddress,
                    all: limits.failures, take)
                {
                    return (.rateLimited(retryAfter, "too many refused requests"), "rate_limited")
                }
                var response = HTTPResponse.jsonError(401, "unauthorized", "an API key or the shared secret is required: Authorization: Bearer KEY")
                response.headers.append((name: "WWW-Authenticate", value: #"Bearer realm="attest-worker""#))
                return (response, "unauthorized")
            }
            let spendable: TokenConsumption.Spendable
            do {
                spendable = try TokenConsumption.admit(token, verifier: verifier, issuer: issuer, consumer: consumer)
            } catch {
                return Self.refusal(error)
            }
            switch try spend(spendable, verifier.leewaySeconds) {
            case .consumed:
                let body = JSONValue.object([("claims", spendable.claims)]).serialized()
                return (HTTPResponse(status: 200, contentType: "application/json", body: Array(body.utf8)), nil)
            case .alreadyConsumed:
                return (HTTPResponse.jsonError(409, "token_already_consumed", "this token was consumed before"), "already_consumed")
            case .expired:
                return (Self.invalid(.expired), TokenRejection.expired.rawValue)
            }
        } catch {
            metrics.errors.labels(["db"]).increment()
            logger.error("token consumption failed", [("error", .string(error.description))])
            return (HTTPResponse.jsonError(503, "unavailable", "tokens cannot be consumed right now"), "unavailable")
        }
    }

    /// The shared secret's holder may spend any app's tokens, an unrevoked API key its own app's; nil for
    /// anything else. The secret is compared in constant time over digests, as ``ChallengeAuthenticator`` does.
    private func consumer(_ authorization: String?) throws(PGError) -> TokenConsumption.Consumer? {
        guard let credential = ChallengeAuthenticator.bearer(authorization) else { return nil }
        let presented = Digest.sha256.hash(Array(credential.utf8))
        if let sharedSecretHash, ConstantTime.equal(presented, sharedSecretHash) { return .anyApp }
        guard credential.hasPrefix(APIKeyStore.prefix) else { return nil }
        return try keyOwner(presented).map(TokenConsumption.Consumer.app)
    }

    /// The answer to a token refused before the ledger, and its metric reason.
    static func refusal(_ refusal: TokenConsumption.Refusal) -> (HTTPResponse, String) {
        switch refusal {
        case .invalid(let rejection):
            return (invalid(rejection), rejection.rawValue)
        case .otherApp:
            return (HTTPResponse.jsonError(403, "forbidden", "this token is not one of this API key's app"), "forbidden")
        case .notLimitedUse:
            return (
                HTTPResponse.jsonError(
                    422, "token_not_limited_use", "this token is not limited-use: it cannot be consumed (ask for limitedUse in the job)"),
                "not_limited_use"
            )
        }
    }

    /// 401 `token_invalid` with the verifier's reason.
    static func invalid(_ rejection: TokenRejection) -> HTTPResponse {
        let body = JSONValue.object([
            ("error", .string("token_invalid")), ("reason", .string(rejection.rawValue)),
            ("message", .string("the token is not valid: \(rejection.rawValue)")),
        ]).serialized()
        return HTTPResponse(status: 401, contentType: "application/json", body: Array(body.utf8))
    }
}
