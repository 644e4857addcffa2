import AttestCore
import Foundation
import Synchronization

/// Structured logs: one JSON object per line on stderr with stable keys (`ts`, `level`, `msg`, then the
/// fields). Messages are constant strings; variable data goes in fields. Never log attestation bytes,
/// receipts, keys or secrets.
public final class Logger: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error

        public init?(name: String) {
            switch name {
            case "debug": self = .debug
            case "info": self = .info
            case "warning": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        var name: String { ["debug", "info", "warning", "error"][rawValue] }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public let level: Level
    private let clock: any Clock
    private let sink: @Sendable (String) -> Void
    private let lock = Mutex(())

    /// - Parameters:
    ///   - clock: what `ts` reads (the wall clock by default; tests pin it).
    ///   - sink: where lines go (stderr by default; tests capture them).
    public init(level: Level, clock: any Clock = SystemClock(), sink: (@Sendable (String) -> Void)? = nil) {
        self.level = level
        self.clock = clock
        self.sink = sink ?? { line in FileHandle.standardError.write(Data(line.utf8)) }
    }

    public func log(_ level: Level, _ message: StaticString, _ fields: [(String, JSONValue)] = []) {
        guard level >= self.level else { return }
        let line = JSONValue.object(
            [("ts", .string(clock.now().rfc3339)), ("level", .string(level.name)), ("msg", .string("\(message)"))] + fields
        ).serialized() + "\n"
        lock.withLock { _ in sink(line) }
    }

    public func debug(_ message: StaticString, _ fields: [(String, JSONValue)] = []) { log(.debug, message, fields) }
    public func info(_ message: StaticString, _ fields: [(String, JSONValue)] = []) { log(.info, message, fields) }
    public func warning(_ message: StaticString, _ fields: [(String, JSONValue)] = []) { log(.warning, message, fields) }
    public func error(_ message: StaticString, _ fields: [(String, JSONValue)] = []) { log(.error, message, fields) }
}
