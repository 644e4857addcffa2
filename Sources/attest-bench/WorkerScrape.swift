import Foundation

/// The child worker's operations listener, as the benchmark reaches it: a loopback port chosen here (the
/// worker logs its own only at info level, which the benchmark's worker does not), scraped with curl.
enum WorkerScrape {
    /// A loopback TCP port free right now: bound to port 0, read back, released for the worker to bind.
    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkFailure("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw BenchmarkFailure("cannot bind a loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// GET http://127.0.0.1:PORT/metrics, within 5 s.
    static func metrics(port: Int) throws -> String {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sf", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchmarkFailure("GET /metrics on port \(port): curl exit \(process.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }
}
