import Synchronization

/// A small HTTP/1.1 server for the operational surface (`/healthz`, `/readyz`, `/metrics`, later challenges
/// and the JWKS), over libmicrohttpd.
///
/// `start()` binds and serves on libmicrohttpd's own threads (one per connection, at most
/// ``Configuration/connectionLimit``); `stop()` closes the socket and every connection and returns once no
/// handler runs any more. Both are idempotent and safe from any thread except a route handler's. Unknown
/// paths answer 404, known paths with another method 405 (with `Allow`), bodies over
/// ``Configuration/maxRequestBodyBytes`` 413.
public final class HTTPServer: Sendable {
    public struct Configuration: Sendable {
        /// Loopback by default; port 0 binds a free port (read it from ``HTTPServer/boundAddress``).
        public var address: HTTPAddress
        /// Larger bodies are answered 413 without reaching a handler.
        public var maxRequestBodyBytes: Int
        /// Concurrent connections (each holds a thread); libmicrohttpd refuses further ones.
        public var connectionLimit: Int
        /// Idle or slow connections are closed after this long (0: never).
        public var connectionTimeoutSeconds: Int

        public init(
            address: HTTPAddress = .loopbackDefault,
            maxRequestBodyBytes: Int = 64 * 1024,
            connectionLimit: Int = 64,
            connectionTimeoutSeconds: Int = 10
        ) {
            self.address = address
            self.maxRequestBodyBytes = maxRequestBodyBytes
            self.connectionLimit = connectionLimit
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
        }
    }

    public let configuration: Configuration
    private let routes: HTTPRoutes
    private let diagnostics: (@Sendable (String) -> Void)?
    /// nil while stopped.
    private let daemon = Mutex<MHDDaemon?>(nil)

    /// - Parameter diagnostics: libmicrohttpd's own error messages (failed accepts, broken connections), from
    ///   its threads; for a debug or warning log. A failed start is reported by the thrown error instead.
    public init(
        configuration: Configuration = Configuration(),
        routes: HTTPRoutes,
        diagnostics: (@Sendable (String) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.routes = routes
        self.diagnostics = diagnostics
    }

    deinit {
        stop()
    }

    /// Binds the configured address and starts serving; does nothing when already running.
    /// - Throws: `.startFailed` with libmicrohttpd's reason (address in use, not a local address, …).
    public func start() throws(HTTPServerError) {
        precondition(
            configuration.maxRequestBodyBytes >= 0 && configuration.connectionLimit >= 1
                && configuration.connectionTimeoutSeconds >= 0,
            "HTTPServer.Configuration: limits must not be negative, connectionLimit at least 1"
        )
        try daemon.withLock { (daemon: inout MHDDaemon?) throws(HTTPServerError) in
            guard daemon == nil else { return }
            daemon = try MHDDaemon(
                address: configuration.address,
                routes: routes,
                limits: .init(
                    maxRequestBodyBytes: configuration.maxRequestBodyBytes,
                    connectionLimit: configuration.connectionLimit,
                    connectionTimeoutSeconds: configuration.connectionTimeoutSeconds
                ),
                diagnostics: diagnostics
            )
        }
    }

    /// Stops listening, closes every connection and waits for running handlers; does nothing when stopped.
    /// Must not be called from a route handler (it would wait for itself).
    public func stop() {
        let running = daemon.withLock { daemon in
            defer { daemon = nil }
            return daemon
        }
        // The daemon is stopped by its deinit, here, outside the lock: `boundAddress` stays answerable.
        _ = consume running
    }

    /// The address being served, with the kernel's port when the configured port is 0; nil while stopped.
    public var boundAddress: HTTPAddress? {
        daemon.withLock { $0?.boundAddress }
    }

    /// The port being served; nil while stopped.
    public var port: Int? { boundAddress?.port }
}
