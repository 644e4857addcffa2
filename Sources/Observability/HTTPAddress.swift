#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the HTTP server listens: `HOST:PORT` with an IPv4 literal, a bracketed IPv6 literal or
/// `localhost` (127.0.0.1), and a port in 0...65535 (0: the kernel picks a free one).
///
/// Host names other than `localhost` are refused rather than resolved: resolving at start would make the
/// bind address depend on DNS, and `0.0.0.0` / `[::]` say "every interface" explicitly.
public struct HTTPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The IP literal, IPv6 without brackets (`localhost` already replaced by `127.0.0.1`).
    public let host: String
    public let port: Int
    public let isIPv6: Bool

    /// Loopback, port 8080: the default of `ATTEST_HTTP_ADDRESS`.
    public static let loopbackDefault = HTTPAddress(host: "127.0.0.1", port: 8080, isIPv6: false)

    private init(host: String, port: Int, isIPv6: Bool) {
        self.host = host
        self.port = port
        self.isIPv6 = isIPv6
    }

    /// - Throws: `.invalidAddress` with a message naming the expected form.
    public init(parsing text: String) throws(HTTPServerError) {
        func invalid(_ why: String) -> HTTPServerError {
            HTTPServerError(
                code: .invalidAddress,
                message:
                    "HTTP address \"\(text)\" \(why): expected HOST:PORT, e.g. 127.0.0.1:8080, 0.0.0.0:8080, [::1]:8080"
            )
        }
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid("has no closing bracket") }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw invalid("has no port") }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw invalid("has no port") }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { throw invalid("has an IPv6 host without brackets") }
        }
        guard !portPart.isEmpty, portPart.allSatisfy({ $0.isASCII && $0.isNumber }), portPart.count <= 5,
            let port = Int(portPart), (0...65535).contains(port)
        else { throw invalid("has no port in 0...65535") }
        guard !hostPart.isEmpty else { throw invalid("has no host") }

        let host = hostPart == "localhost" ? "127.0.0.1" : String(hostPart)
        // Brackets hold IPv6 literals only; an IPv6 literal needs them (the port would be ambiguous).
        var probe = in6_addr()
        if text.hasPrefix("[") {
            guard inet_pton(AF_INET6, host, &probe) == 1 else { throw invalid("has no IPv6 literal in brackets") }
            self.init(host: host, port: port, isIPv6: true)
        } else {
            guard inet_pton(AF_INET, host, &probe) == 1 else {
                throw invalid("has a host that is not an IP literal or localhost")
            }
            self.init(host: host, port: port, isIPv6: false)
        }
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The same host with another port (the one the kernel bound for port 0).
    func withPort(_ port: Int) -> HTTPAddress { HTTPAddress(host: host, port: port, isIPv6: isIPv6) }

    /// Calls `body` with a `sockaddr_in` / `sockaddr_in6` valid only during the call.
    func withSocketAddress<T>(_ body: (UnsafeRawPointer) -> T) -> T {
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port)).bigEndian
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            return withUnsafeBytes(of: &address) { body($0.baseAddress!) }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port)).bigEndian
            _ = inet_pton(AF_INET, host, &address.sin_addr)
            return withUnsafeBytes(of: &address) { body($0.baseAddress!) }
        }
    }
}
