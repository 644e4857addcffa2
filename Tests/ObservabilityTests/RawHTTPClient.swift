import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failure of the test client itself (connect refused, timeout), as opposed to an HTTP answer.
struct ClientError: Error, CustomStringConvertible {
    let description: String
    var errnoCode: Int32 = 0
}

struct RawResponse {
    let status: Int
    let headers: [(name: String, value: String)]
    let body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A tiny blocking HTTP/1.1 client over a loopback socket: one request per connection (`Connection: close`),
/// bounded by socket timeouts, so a broken server fails a test instead of hanging it. Raw requests let
/// the tests send what URLSession would not (lying Content-Length, chunked bodies, Expect).
enum RawHTTP {
    static func connect(port: Int, host: String = "127.0.0.1", timeoutSeconds: Int = 5) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw ClientError(description: "connect to \(host):\(port): errno \(code)", errnoCode: code)
        }
        return fd
    }

    /// Whether a GET of `path` came to what `wanted` takes (nil: no answer) within `seconds`, asked every
    /// 50 ms. For limits libmicrohttpd applies when its thread gets to it (accepting held connections,
    /// cleaning up closed ones), which no fixed sleep can wait for on a loaded machine.
    static func eventuallyGet(port: Int, _ path: String, seconds: Double = 10, _ wanted: (RawResponse?) -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        repeat {
            if wanted(try? get(port: port, path)) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < end
        return false
    }

    /// The socket ("socket:[inode]") of this process listening on the port, from the kernel's tables
    /// (IPv4 and IPv6 unless told). The tests check that a stopped server's own socket is closed: a connect
    /// attempt cannot tell, since another process or test may bind the freed ephemeral port, or a client whose
    /// ephemeral source port equals it connects to itself.
    static func listeningSocket(port: Int, tables: [String] = ["/proc/net/tcp", "/proc/net/tcp6"]) -> String? {
        let ours = openSockets()
        for table in tables {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[3] == "0A",
                    let local = fields[1].split(separator: ":").last, Int(local, radix: 16) == port
                else { continue }
                if ours.contains("socket:[\(fields[9])]") { return "socket:[\(fields[9])]" }
            }
        }
        return nil
    }

    /// What this process's file descriptors refer to ("socket:[inode]", paths).
    static func openSockets() -> Set<String> {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") })
    }

    /// Sends `head` (request line and headers, without the final blank line: it is added along with
    /// `Connection: close`) and `body`, then reads the whole answer.
    static func exchange(port: Int, head: String, body: [UInt8] = []) throws -> RawResponse {
        let fd = try connect(port: port)
        defer { close(fd) }
        let request = Array((head + "\r\nConnection: close\r\n\r\n").utf8) + body
        // The server may answer early (404, 413) and close without reading the body: a failed send is then
        // expected, and the answer is still there to read.
        _ = send(fd: fd, request)
        return try readResponse(fd: fd, isHead: head.hasPrefix("HEAD "))
    }

    static func get(port: Int, _ path: String, method: String = "GET") throws -> RawResponse {
        try exchange(port: port, head: "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1")
    }

    static func post(port: Int, _ path: String, body: [UInt8]) throws -> RawResponse {
        try exchange(
            port: port,
            head: "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)",
            body: body
        )
    }

    @discardableResult
    static func send(fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Reads until the server closes (or resets after answering), then parses status, headers and body.
    static func readResponse(fd: Int32, isHead: Bool) throws -> RawResponse {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[0..<count]
            } else if count == 0 || errno == ECONNRESET {
                break
            } else {
                throw ClientError(description: "recv: errno \(errno) after \(received.count) bytes", errnoCode: errno)
            }
        }
        return try parse(received, isHead: isHead)
    }

    /// A HEAD answer carries the Content-Length of the GET it stands for, and no body.
    static func parse(_ bytes: [UInt8], isHead: Bool) throws -> RawResponse {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.firstRange(of: separator) else {
            throw ClientError(description: "no complete response head in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw ClientError(description: "bad status line \(lines[0])")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw ClientError(description: "bad header \(line)") }
            headers.append(
                (
                    name: String(line[..<colon]),
                    value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                )
            )
        }
        var body = Array(bytes[end.upperBound...])
        if isHead {
            guard body.isEmpty else { throw ClientError(description: "HEAD answered with a body") }
        } else if let length = headers.first(where: { $0.name.lowercased() == "content-length" }).flatMap({
            Int($0.value)
        }) {
            guard body.count >= length else { throw ClientError(description: "body cut at \(body.count) of \(length)") }
            body = Array(body.prefix(length))
        }
        return RawResponse(status: status, headers: headers, body: body)
    }
}

/// Runs `body` on `count` threads at once and returns their results in order. Real threads (not the
/// cooperative pool, not Dispatch's width of one per core) so that the server sees that many connections.
func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = LockedBox([T?](repeating: nil, count: count))
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            let value = body(index)
            results.withLock { $0[index] = value }
            group.leave()
        }
    }
    group.wait()
    return results.withLock { $0.map { $0! } }
}

/// A value behind a lock, for collecting results from threads in tests.
final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        mutex.withLock { body(&$0) }
    }
}

extension RawHTTP {
    /// Whether this machine can bind ::1 (containers sometimes run without IPv6).
    static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }()
}
