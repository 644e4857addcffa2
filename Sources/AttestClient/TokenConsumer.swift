import AttestCore
import Durations
import HTTPClient

/// A backend's side of limited-use tokens (CONTRACT 6, `POST /v1/tokens/consume`): before it honours a
/// request carrying a limited-use token, it spends the token at the worker, which answers yes exactly once
/// across every worker. A 200 means the token verified and this call spent it; anything else means the
/// request must be refused. Calls from several threads run in parallel.
public final class TokenConsumer: Sendable {
    /// What the worker said of one token.
    public enum Outcome: Sendable, Equatable {
        /// Valid, and spent by this call: the token's claims.
        case consumed(JSONValue)
        /// Valid, but spent before (409): a replay, or a second consumer of the same request.
        case alreadyConsumed
        /// Refused: the HTTP status, the error code (`token_invalid`, `forbidden`, `token_not_limited_use`,
        /// `unauthorized`, …) and, for an invalid token, the reason (`expired`, `signature_invalid`, …).
        case refused(status: Int, error: String, reason: String?)

        /// Reads a response of the endpoint.
        public init(status: Int, body: [UInt8]) {
            let json = JSONValue.parse(body, maxDepth: 16)
            switch status {
            case 200 where json?["claims"] != nil: self = .consumed(json?["claims"] ?? .null)
            case 409: self = .alreadyConsumed
            default:
                self = .refused(
                    status: status, error: json?["error"]?.stringValue ?? "unexpected_response",
                    reason: json?["reason"]?.stringValue)
            }
        }
    }

    /// The request never got an answer (the worker unreachable, a timeout): the token's fate is unknown,
    /// so the caller must refuse its request as it would a spent token. Retrying is safe, but a call that
    /// was spent before its answer was lost then reads as already consumed.
    public struct Unanswered: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let url: String
    private let credential: String
    private let client: HTTPClient

    /// - Parameters:
    ///   - baseURL: the worker's product listener, e.g. `http://attest-worker:8080`.
    ///   - credential: an API key of the app (`attest-worker app key add`) or the shared secret.
    public init(baseURL: String, credential: String, timeout: Duration = .seconds(5)) {
        url = (baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL) + "/v1/tokens/consume"
        self.credential = credential
        client = HTTPClient(
            configuration: HTTPClient.Configuration(connectTimeout: timeout, requestTimeout: timeout, maxResponseBodyBytes: 64 * 1024))
    }

    /// Spends `token`: one POST, never retried here.
    public func consume(_ token: String) throws(Unanswered) -> Outcome {
        let body = JSONValue.object([("token", .string(token))]).serialized()
        let request = HTTPClientRequest(
            url: url, headers: [("Authorization", "Bearer " + credential), ("Content-Type", "application/json")],
            body: Array(body.utf8))
        switch client.post(request) {
        case .success(let response): return Outcome(status: response.status, body: response.body)
        case .failure(let error): throw Unanswered(description: error.description)
        }
    }
}
