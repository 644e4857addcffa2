/// One request: a POST of `body` with `headers` to `url` (http or https only).
public struct HTTPClientRequest: Sendable {
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The final response (after any `100 Continue`): its status, its header lines and its whole body, which
/// is within the client's limit.
public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header called `name` (case-insensitive, as HTTP field names are).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// Why a request got no response. The texts are libcurl's generic ones and the limits: never the URL's
/// query, a header or a body, so they are safe in logs.
public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connect or the whole-request timeout passed.
    case timedOut
    /// The body passed `limit` bytes (announced or received): the transfer was aborted.
    case responseTooLarge(limit: Int)
    /// The response's header section passed `limit` bytes.
    case headersTooLarge(limit: Int)
    /// The request could not be built (a URL or header with CR, LF or NUL; another scheme).
    case invalidRequest(String)
    /// Any other libcurl failure (resolve, connect, TLS verification, protocol), with its code.
    case transport(code: Int, message: String)

    public var description: String {
        switch self {
        case .timedOut: "timed out"
        case .responseTooLarge(let limit): "response body over \(limit) bytes"
        case .headersTooLarge(let limit): "response headers over \(limit) bytes"
        case .invalidRequest(let why): "invalid request: \(why)"
        case .transport(let code, let message): "transport error \(code): \(message)"
        }
    }
}
