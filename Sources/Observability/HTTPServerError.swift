/// Why the HTTP server could not be configured or started.
///
/// `description` names what to fix in one line (it ends up in the one-line start error of CONTRACT 6);
/// `code` is stable for tests and callers.
public struct HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The address is not `HOST:PORT` with an IP literal (or `localhost`) and a port in 0...65535.
        public static let invalidAddress = Code("invalidAddress")
        /// libmicrohttpd refused to start: the address is in use or not local, no threads, no sockets.
        public static let startFailed = Code("startFailed")

        public var description: String { name }
    }

    public let code: Code
    /// Safe to log: addresses and libmicrohttpd's own start diagnostics, never request data.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
