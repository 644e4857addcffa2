import Lifecycle
import Synchronization

/// A small HTTP/1.1 server for the operational surface (`/healthz`, `/readyz`, `/metrics`, later challenges
/// and the JWKS), over libmicrohttpd.
///
/// `start()` binds and serves on libmicrohttpd's own threads (one per connection, at most
/// ``Configuration/connectionLimit``, at most ``Configuration/perIPConnectionLimit`` from one address, each
/// request within ``Configuration/requestDeadlineSeconds``); `stop()` closes the socket and every connection and returns once no
/// handler runs any more. Both are idempotent and safe from any thread except a route handler's. Unknown
/// paths answer 404, known paths with another method 405 (with `Allow`), bodies over
/// ``Configuration/maxRequestBodyBytes`` 413. As a ``Service`` it is a listener of the worker's group.
public final class HTTPServer: Service {
    public struct Configuration: Sendable {
        /// Loopback by default; port 0 binds a free port (read it from ``HTTPServer/boundAddress``).
        public var address: HTTPAddress
        /// Larger bodies are answered 413 without reaching a handler.
        public var maxRequestBodyBytes: Int
        /// Concurrent connections (each holds a thread); libmicrohttpd refuses further ones.
        public var connectionLimit: Int
        /// Idle connections are closed after this long (0: never). Every byte restarts it, so it does not
        /// bound a slow client: ``requestDeadlineSeconds`` does.
        public var connectionTimeoutSeconds: Int
        /// Concurrent connections from one IP address, so one client cannot take every connection (0: no
        /// limit of its own).
        public var perIPConnectionLimit: Int
        /// A request must arrive whole and be answered within this long from its connection's opening (or
        /// the previous request's answer); a slower connection is cut (``ConnectionDeadlines``).
        public var requestDeadlineSeconds: Int
        /// Memory per connection (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`): the request line and headers must
        /// fit in it, larger ones are answered 431 (or 414) and closed.
        public var maxHeaderBytes: Int

        public init(
            address: HTTPAddress = .loopbackDefault,
            maxRequestBodyBytes: Int = 64 * 1024,
            connectionLimit: Int = 64,
            connectionTimeoutSeconds: Int = 10,
            perIPConnectionLimit: Int = 0,
            requestDeadlineSeconds: Int = 30,
            maxHeaderBytes: Int = 16 * 1024
        ) {
            self.address = address
            self.maxRequestBodyBytes = maxRequestBodyBytes
            self.connectionLimit = connectionLimit
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.perIPConnectionLimit = perIPConnectionLimit
            self.requestDeadlineSeconds = requestDeadlineSeconds
            self.maxHeaderBytes = maxHeaderBytes
        }

        /// The smallest per-connection memory libmicrohttpd works with (its buffers and one short request).
        public static let minimumHeaderBytes = 4096
    }

    /// The listener, in the group's events ("product", "ops").
    public let name: String
    public let configuration: Configuration
    private let routes: HTTPRoutes
    private let diagnostics: (@Sendable (String) -> Void)?
    /// Connections cut by the request deadline (``Configuration/requestDeadlineSeconds``).
    public let deadlineCuts: CounterSeries
    /// nil while stopped.
    private let daemon = Mutex<MHDDaemon?>(nil)

    /// - Parameter diagnostics: libmicrohttpd's own error messages (failed accepts, broken connections), from
    ///   its threads; for a debug or warning log. A failed start is reported by the thrown error instead.
    /// - Parameter deadlineCuts: counts the connections cut by the request deadline (a series of a registry's
    ///   counter to export it).
    public init(
        name: String = "http",
        configuration: Configuration = Configuration(),
        routes: HTTPRoutes,
        diagnostics: (@Sendable (String) -> Void)? = nil,
        deadlineCuts: CounterSeries = CounterSeries()
    ) {
        self.name = name
        self.configuration = configuration
        self.routes = routes
        self.diagnostics = diagnostics
        self.deadlineCuts = deadlineCuts
    }

    deinit {
        stop()
    }

    /// Binds the configured address and starts serving; does nothing when already running.
    /// - Throws: `.startFailed` with libmicrohttpd's reason (address in use, not a local address, …).
    public func start() throws(HTTPServerError) {
        precondition(
            configuration.maxRequestBodyBytes >= 0 && configuration.connectionLimit >= 1
                && configuration.connectionTimeoutSeconds >= 0 && configuration.perIPConnectionLimit >= 0
                && configuration.requestDeadlineSeconds >= 1
                && configuration.maxHeaderBytes >= Configuration.minimumHeaderBytes,
            "HTTPServer.Configuration: limits must not be negative, connectionLimit and requestDeadlineSeconds at least 1, maxHeaderBytes at least \(Configuration.minimumHeaderBytes)"
        )
        try daemon.withLock { (daemon: inout MHDDaemon?) throws(HTTPServerError) in
            guard daemon == nil else { return }
            daemon = try MHDDaemon(
                address: configuration.address,
                routes: routes,
                limits: .init(
                    maxRequestBodyBytes: configuration.maxRequestBodyBytes,
                    connectionLimit: configuration.connectionLimit,
                    connectionTimeoutSeconds: configuration.connectionTimeoutSeconds,
                    perIPConnectionLimit: configuration.perIPConnectionLimit,
                    requestDeadlineSeconds: configuration.requestDeadlineSeconds,
                    maxHeaderBytes: configuration.maxHeaderBytes
                ),
                deadlineCuts: deadlineCuts,
                diagnostics: diagnostics
            )
        }
    }

    /// ``start()``, for the group: a listener that cannot bind ends it.
    public func start(failed: @escaping @Sendable (any Error) -> Void) throws(HTTPServerError) { try start() }

    /// ``stop()``, for the group.
    public func stop(deadline: ContinuousClock.Instant) { stop() }

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
