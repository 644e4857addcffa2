import AttestCore
import Observability

/// The product listener's error answers: JSON `{"error", "message"}` with a stable code.
extension HTTPResponse {
    static func jsonError(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        let body = JSONValue.object([("error", .string(code)), ("message", .string(message))]).serialized()
        return HTTPResponse(status: status, contentType: "application/json", body: Array(body.utf8))
    }

    /// 429 with `Retry-After`.
    static func rateLimited(_ retryAfter: Int, _ message: String) -> HTTPResponse {
        var response = jsonError(429, "rate_limited", "\(message); retry in \(retryAfter) s")
        response.headers.append((name: "Retry-After", value: String(retryAfter)))
        return response
    }
}
