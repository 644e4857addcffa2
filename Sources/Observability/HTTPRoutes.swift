/// One request as a route handler sees it: the body is complete (and within the server's limit).
public struct HTTPRequest: Sendable {
    /// As sent, upper case by convention (`GET`, `POST`); a `HEAD` request reaches `GET` handlers.
    public let method: String
    /// The path without the query string, percent-decoded by libmicrohttpd.
    public let path: String
    public let body: [UInt8]
    /// The request's header lines as received (bounded by the server's header memory limit).
    public let headers: [(name: String, value: String)]
    /// The peer's IP address (IPv6 without brackets): the TCP peer, not a forwarded-for header, which any
    /// client could write.
    public let clientAddress: String

    public init(
        method: String, path: String, body: [UInt8] = [], headers: [(name: String, value: String)] = [],
        clientAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.body = body
        self.headers = headers
        self.clientAddress = clientAddress
    }

    /// The first header called `name` (case-insensitive, as HTTP field names are).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// What a route handler answers. libmicrohttpd adds the reason phrase, `Content-Length` and `Date`, and
/// leaves the body out for `HEAD`.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    /// Extra headers; names and values must not contain CR or LF (libmicrohttpd refuses those).
    public var headers: [(name: String, value: String)]

    public init(status: Int, contentType: String, body: [UInt8], headers: [(name: String, value: String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }
}

/// Answers one request. Runs on one of libmicrohttpd's connection threads while that connection waits:
/// keep it short and bounded (read cached state; call a database only on a connection of the handler's own
/// with bounded retries, as challenge issuance does; never a broker), and never stop the server from inside
/// a handler (stopping joins the thread that runs the handler).
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse

/// The routing table: exact paths, one handler per method, then path prefixes (a path with parameters, which
/// its handler parses and answers 400 when malformed). Fixed once the server starts.
public struct HTTPRoutes: Sendable {
    private var table: [String: [String: HTTPHandler]] = [:]
    private var prefixes: [(prefix: String, methods: [String: HTTPHandler])] = []

    public init() {}

    /// Registers `handler` for `method` (upper case) on `path` (exact match, starting with `/`), replacing an
    /// earlier registration of the same pair. A `GET` route also answers `HEAD`.
    public mutating func add(_ method: String, _ path: String, _ handler: @escaping HTTPHandler) {
        table[path, default: [:]][method] = handler
    }

    /// Registers `handler` for `method` on every path that starts with `prefix` and has no exact route; the
    /// longest matching prefix wins.
    public mutating func add(_ method: String, prefix: String, _ handler: @escaping HTTPHandler) {
        if let i = prefixes.firstIndex(where: { $0.prefix == prefix }) {
            prefixes[i].methods[method] = handler
        } else {
            prefixes.append((prefix, [method: handler]))
            prefixes.sort { $0.prefix.utf8.count > $1.prefix.utf8.count }
        }
    }

    enum Resolution {
        case found(HTTPHandler)
        case notFound
        /// The path exists with other methods: the value of the `Allow` header.
        case methodNotAllowed(allow: String)
    }

    func resolve(method: String, path: String) -> Resolution {
        guard let methods = table[path] ?? prefixes.first(where: { path.hasPrefix($0.prefix) })?.methods else { return .notFound }
        if let handler = methods[method] ?? (method == "HEAD" ? methods["GET"] : nil) {
            return .found(handler)
        }
        var allowed = Set(methods.keys)
        if allowed.contains("GET") { allowed.insert("HEAD") }
        return .methodNotAllowed(allow: allowed.sorted().joined(separator: ", "))
    }
}
