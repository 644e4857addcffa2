import AttestCLI
import Foundation

/// Reads text lines from a file or stdin as they arrive (so `verify` can sit at the end of a pipe).
final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>? = nil
    private var capacity = 0

    /// - Parameter path: a file, or nil for stdin.
    init(path: String?) throws {
        guard let file = path.map({ fopen($0, "r") }) ?? fdopen(0, "r") else {
            throw Arguments.UsageError(description: "cannot read \(path ?? "stdin"): \(String(cString: strerror(errno)))")
        }
        self.file = file
    }

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line without its newline, or nil at the end of input.
    func next() throws -> String? {
        let count = getline(&buffer, &capacity, file)
        guard count >= 0, let buffer else {
            if ferror(file) != 0 { throw Arguments.UsageError(description: "error reading input") }
            return nil
        }
        var length = count
        if length > 0 && buffer[length - 1] == 0x0a { length -= 1 }
        if length > 0 && buffer[length - 1] == 0x0d { length -= 1 }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}
