import Dispatch
import Synchronization

/// A connection that survives PostgreSQL restarts: `run` retries its body on a fresh connection after
/// connection loss, waiting between attempts with capped exponential backoff.
///
/// Only connection loss is retried (including failing to reconnect while the server restarts or still
/// refuses logins); any other error is rethrown at once. A retry runs the whole body again, and a body
/// whose connection broke during `COMMIT` may have committed: bodies must be idempotent (upserts keyed by
/// the job id), which is what makes blind retrying safe.
///
/// `@unchecked Sendable`: `run` has one caller at a time, like ``PGConnection`` (it swaps the connection
/// without a lock); `cancel()` may come from any thread (an atomic flag and a semaphore).
public final class PGReconnectingConnection: @unchecked Sendable {
    private let conninfo: String
    private let applicationName: String
    private let connectTimeoutSeconds: Int
    private let initialBackoff: Duration
    private let maxBackoff: Duration
    private let retryTimeout: Duration?
    private let onRetry: (@Sendable (_ error: PGError, _ attempt: Int, _ wait: Duration) -> Void)?

    /// The current connection; nil until the first `run` and after a loss.
    private var connection: PGConnection?
    private let cancelled = Atomic<Bool>(false)
    /// Backoff waits sleep on this so `cancel()` can cut them short.
    private let wakeUp = DispatchSemaphore(value: 0)

    /// Does not connect: the first `run` does, so a worker can start while PostgreSQL is still coming up.
    ///
    /// - Parameters:
    ///   - conninfo, applicationName, connectTimeoutSeconds: as for ``PGConnection``; keep the connect
    ///     timeout well below `retryTimeout`, since one connection attempt is not cut short by it.
    ///   - initialBackoff: the first wait after a loss; each further failed attempt doubles it…
    ///   - maxBackoff: …up to this cap, so recovery is noticed within `maxBackoff` of the server's return.
    ///   - retryTimeout: how long one `run` keeps retrying before rethrowing the connection error; nil
    ///     retries until it succeeds or `cancel()` is called.
    ///   - onRetry: called on `run`'s thread before each wait with the connection error, the attempt that
    ///     failed (1-based) and the wait: where the caller logs and counts outages, which are otherwise
    ///     invisible while retries succeed.
    public init(
        conninfo: String,
        applicationName: String = "attest-worker",
        connectTimeoutSeconds: Int = 10,
        initialBackoff: Duration = .milliseconds(50),
        maxBackoff: Duration = .seconds(2),
        retryTimeout: Duration? = nil,
        onRetry: (@Sendable (_ error: PGError, _ attempt: Int, _ wait: Duration) -> Void)? = nil
    ) {
        precondition(initialBackoff > .zero && maxBackoff >= initialBackoff, "backoff must be positive, cap >= start")
        self.conninfo = conninfo
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.retryTimeout = retryTimeout
        self.onRetry = onRetry
    }

    /// Runs `body` on a healthy connection, reconnecting and retrying after connection loss.
    ///
    /// A connection the previous body left inside a transaction, or broken, is replaced first.
    /// - Throws: the body's non-connection errors at once; the last connection error once `retryTimeout`
    ///   would be exceeded by the next wait; `.cancelled` after `cancel()`.
    @discardableResult
    public func run<T>(_ body: (PGConnection) throws(PGError) -> T) throws(PGError) -> T {
        let deadline = retryTimeout.map { ContinuousClock.now + $0 }
        var backoff = initialBackoff
        var attempt = 0
        while true {
            attempt += 1
            guard !cancelled.load(ordering: .acquiring) else {
                throw PGError(code: .cancelled, message: "reconnecting connection was cancelled")
            }
            do throws(PGError) {
                return try body(try currentConnection())
            } catch where error.isConnectionLost {
                connection = nil
                if let deadline, ContinuousClock.now + backoff > deadline { throw error }
                onRetry?(error, attempt, backoff)
                _ = wakeUp.wait(timeout: .now() + .nanoseconds(Self.nanoseconds(backoff)))
                backoff = min(backoff * 2, maxBackoff)
            }
        }
    }

    /// Stops retrying for good: a `run` waiting out a backoff throws `.cancelled` at once and later runs
    /// throw it before connecting. A statement already executing is not interrupted. For shutdown, so a
    /// writer waiting for a database that does not come back cannot hold the process.
    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        wakeUp.signal()
    }

    private func currentConnection() throws(PGError) -> PGConnection {
        if let connection, connection.isIdle { return connection }
        connection = nil  // Closes a broken one, or one left in a transaction (the server rolls it back).
        let fresh = try PGConnection(
            conninfo: conninfo, applicationName: applicationName, connectTimeoutSeconds: connectTimeoutSeconds)
        connection = fresh
        return fresh
    }

    private static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }
}
