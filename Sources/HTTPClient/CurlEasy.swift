internal import CCurl
import Durations
import Foundation

/// Owns one libcurl easy handle (freed on deinit). Used by one call at a time: ``HTTPClient`` hands it out
/// from its pool exclusively, which is what makes the unchecked Sendable sound.
final class CurlEasy: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer

    /// curl_global_init is not thread-safe and must precede every handle: Swift runs a global's initializer
    /// once, under a lock.
    private static let globalInit: CURLcode = CCurl_globalInit()

    static func initializeLibrary() { _ = globalInit }

    init?() {
        Self.initializeLibrary()
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    /// A GET of `request.url`, or a POST of its body.
    func perform(_ request: HTTPClientRequest, get: Bool, _ configuration: HTTPClient.Configuration) -> Result<HTTPClientResponse, HTTPClientError> {
        // Clears the previous call's options, keeps the connection cache.
        curl_easy_reset(handle)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        // No `Expect: 100-continue` round trip before the body.
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            guard let appended = curl_slist_append(headerList, line) else {
                return .failure(.transport(code: -1, message: "out of memory for headers"))
            }
            headerList = appended
        }
        let sink = TransferSink(maxBodyBytes: configuration.maxResponseBodyBytes, maxHeaderBytes: configuration.maxResponseHeaderBytes)
        let context = Unmanaged.passUnretained(sink).toOpaque()

        var code = CURLE_OK
        func set(_ result: CURLcode) { if code == CURLE_OK { code = result } }
        set(CCurl_setString(handle, CURLOPT_URL, request.url))
        set(CCurl_setString(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(CCurl_setLong(handle, CURLOPT_NOSIGNAL, 1))  // several threads; timeouts without SIGALRM
        set(CCurl_setLong(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(CCurl_setLong(handle, CURLOPT_SSL_VERIFYPEER, 1))
        set(CCurl_setLong(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if let caFile = configuration.caFile { set(CCurl_setString(handle, CURLOPT_CAINFO, caFile)) }
        set(CCurl_setLong(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout)))
        set(CCurl_setLong(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(configuration.requestTimeout)))
        set(CCurl_setOffset(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(configuration.maxResponseBodyBytes)))
        set(CCurl_setString(handle, CURLOPT_USERAGENT, "attest-worker"))
        set(CCurl_setHeaderList(handle, headerList))
        if get {
            set(CCurl_setLong(handle, CURLOPT_HTTPGET, 1))
        } else {
            set(CCurl_setLong(handle, CURLOPT_POST, 1))
            set(CCurl_setOffset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
            // COPYPOSTFIELDS copies the body, so it need not outlive this call's buffer pointer.
            request.body.withUnsafeBytes { bytes in
                let empty: StaticString = ""
                let pointer = bytes.baseAddress ?? UnsafeRawPointer(empty.utf8Start)
                set(CCurl_setPointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: pointer)))
            }
        }
        set(CCurl_setWriteCallback(handle, { data, size, count, context in
            Unmanaged<TransferSink>.fromOpaque(context!).takeUnretainedValue().body(data, size * count)
        }))
        set(CCurl_setPointer(handle, CURLOPT_WRITEDATA, context))
        set(CCurl_setHeaderCallback(handle, { data, size, count, context in
            Unmanaged<TransferSink>.fromOpaque(context!).takeUnretainedValue().header(data, size * count)
        }))
        set(CCurl_setPointer(handle, CURLOPT_HEADERDATA, context))
        guard code == CURLE_OK else { return .failure(Self.error(code)) }

        let performed = withExtendedLifetime(sink) { curl_easy_perform(handle) }
        if sink.bodyOverflow || performed == CURLE_FILESIZE_EXCEEDED {
            return .failure(.responseTooLarge(limit: configuration.maxResponseBodyBytes))
        }
        if sink.headerOverflow { return .failure(.headersTooLarge(limit: configuration.maxResponseHeaderBytes)) }
        guard performed == CURLE_OK else { return .failure(Self.error(performed)) }
        var status = 0
        guard CCurl_responseCode(handle, &status) == CURLE_OK else {
            return .failure(.transport(code: -1, message: "no response code"))
        }
        return .success(HTTPClientResponse(status: status, headers: sink.headers, body: sink.received))
    }

    /// At least 1 ms: 0 means "no timeout" to libcurl.
    private static func milliseconds(_ duration: Duration) -> Int {
        max(1, duration.wholeMilliseconds)
    }

    private static func error(_ code: CURLcode) -> HTTPClientError {
        if code == CURLE_OPERATION_TIMEDOUT { return .timedOut }
        return .transport(code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code)))
    }
}

/// What libcurl's callbacks collect during one transfer, with the limits that abort it.
private final class TransferSink {
    let maxBodyBytes: Int
    let maxHeaderBytes: Int
    var received: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    private var headerBytes = 0
    var bodyOverflow = false
    var headerOverflow = false

    init(maxBodyBytes: Int, maxHeaderBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
    }

    /// Returning less than `count` makes libcurl abort the transfer (CURLE_WRITE_ERROR).
    func body(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard count <= maxBodyBytes - received.count else {
            bodyOverflow = true
            return 0
        }
        if let data, count > 0 {
            received.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        }
        return count
    }

    /// One header line (with its CRLF) per call; a status line starts a new response (after a `100
    /// Continue` or a proxy's CONNECT answer), whose headers replace the ones before.
    func header(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        headerBytes += count
        guard headerBytes <= maxHeaderBytes else {
            headerOverflow = true
            return 0
        }
        guard let data, count > 0 else { return count }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = []
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            headers.append((name, value))
        }
        return count
    }
}
