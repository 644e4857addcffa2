internal import CCurl
import Durations
import Synchronization

/// A blocking HTTP/1.1 client over libcurl, for calls to outside services (Apple's attestation-data
/// endpoint, Google's certificate status list): POST with headers and a body, or GET, connect and
/// whole-request timeouts, TLS peer and host
/// verification always on (``Configuration/caFile`` only adds the roots to trust, for tests), redirects never
/// followed, the response body bounded in bytes (the transfer is aborted past it).
///
/// Proxies are libcurl's defaults: `https_proxy` / `HTTPS_PROXY` for https URLs, `http_proxy` (lower case
/// only) for http ones, `all_proxy`, and `no_proxy` for exceptions.
///
/// Each call takes an easy handle from a small pool (kept between calls, so connections are reused) and
/// holds it alone until it returns: calls from several threads run in parallel, one handle each.
public final class HTTPClient: Sendable {
    public struct Configuration: Sendable {
        public var connectTimeout: Duration
        /// The whole request: connect, send, wait, receive.
        public var requestTimeout: Duration
        public var maxResponseBodyBytes: Int
        public var maxResponseHeaderBytes: Int
        /// A PEM file of CA certificates to verify servers against instead of the system's (tests).
        public var caFile: String?
        /// Idle handles kept for reuse; more concurrent calls create (and then free) handles of their own.
        public var idleHandles: Int

        public init(
            connectTimeout: Duration = .seconds(5), requestTimeout: Duration = .seconds(30),
            maxResponseBodyBytes: Int = 64 * 1024, maxResponseHeaderBytes: Int = 16 * 1024, caFile: String? = nil,
            idleHandles: Int = 4
        ) {
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.maxResponseHeaderBytes = maxResponseHeaderBytes
            self.caFile = caFile
            self.idleHandles = idleHandles
        }
    }

    public let configuration: Configuration
    private let idle = Mutex<[CurlEasy]>([])

    public init(configuration: Configuration = Configuration()) {
        CurlEasy.initializeLibrary()
        self.configuration = configuration
    }

    /// POSTs `request` and returns the final response, whatever its status; an error only when there was
    /// no complete response within the limits.
    public func post(_ request: HTTPClientRequest) -> Result<HTTPClientResponse, HTTPClientError> {
        perform(request, get: false)
    }

    /// GETs `url` with `headers` (a request's body is not sent) and returns the final response, as ``post(_:)``.
    public func get(_ request: HTTPClientRequest) -> Result<HTTPClientResponse, HTTPClientError> {
        perform(request, get: true)
    }

    private func perform(_ request: HTTPClientRequest, get: Bool) -> Result<HTTPClientResponse, HTTPClientError> {
        if let problem = Self.problem(in: request) { return .failure(.invalidRequest(problem)) }
        guard let handle = idle.withLock({ $0.popLast() }) ?? CurlEasy() else {
            return .failure(.transport(code: -1, message: "curl_easy_init failed"))
        }
        let result = handle.perform(request, get: get, configuration)
        idle.withLock { handles in
            if handles.count < configuration.idleHandles { handles.append(handle) }
        }
        return result
    }

    /// Why libcurl must not see `request`: a scheme other than http(s), or CR, LF or NUL where they would
    /// split or cut a header line.
    static func problem(in request: HTTPClientRequest) -> String? {
        let url = request.url.lowercased()
        guard url.hasPrefix("https://") || url.hasPrefix("http://") else { return "the URL is not http or https" }
        let forbidden: Set<UInt8> = [0x00, 0x0A, 0x0D]
        if request.url.utf8.contains(where: forbidden.contains) { return "the URL holds a control character" }
        for header in request.headers {
            guard !header.name.isEmpty, !header.name.utf8.contains(where: { forbidden.contains($0) || $0 == UInt8(ascii: ":") })
            else { return "a header name is empty or holds ':' or a control character" }
            if header.value.utf8.contains(where: forbidden.contains) { return "a header value holds a control character" }
        }
        return nil
    }
}
