import Dispatch
import Durations
import Synchronization

/// A connection that survives database faults: `run` retries its body on a fresh connection after every
/// transient failure (``PGError/Fault``: connection loss, a read-only standby, a deadlock, a timeout…),
/// waiting between attempts with capped exponential backoff.
///
/// The connection is replaced after every transient failure, not only after a loss, because the cure is
/// often a new session: a promoted standby, a lifted read-only flag or a changed role setting applies to
/// sessions opened afterwards. Permanent failures (the statement's own values are refused) are rethrown
/// at once. A retry runs the whole body again, and a body whose connection broke during `COMMIT` may have
/// committed: bodies must be idempotent (upserts keyed by the job id), which is what makes blind retrying
/// safe.
///
/// `@unchecked Sendable`: `run` has one caller at a time, like ``PGConnection`` (it swaps the connection
/// without a lock); `cancel()` may come from any thread (an atomic flag and a semaphore).
public final class PGReconnectingConnection: @unchecked Sendable {
    private let conninfo: String
    private let applicationName: String
    private let connectTimeoutSeconds: Int
    private let settings: [String: String]
    private let backoff: Backoff
    private let retryTimeout: Duration?
    private let onRetry: (@Sendable (_ error: PGError, _ attempt: Int, _ wait: Duration) -> Void)?
    private let onRecovered: (@Sendable (_ retries: Int) -> Void)?

    /// The current connection; nil until the first `run` and after a transient failure.
    private var connection: PGConnection?
    /// Retries since the last success, across runs (one that ends in a permanent error leaves them owed).
    private var retriesSinceSuccess = 0
    /// Time spent in `run` since ``takeElapsed()`` last read it.
    private var elapsed = Duration.zero
    private let cancelled = Atomic<Bool>(false)
    /// Backoff waits sleep on this so `cancel()` can cut them short.
    private let wakeUp = DispatchSemaphore(value: 0)

    /// Does not connect: the first `run` does, so a worker can start while PostgreSQL is still coming up.
    ///
    /// - Parameters:
    ///   - conninfo, applicationName, connectTimeoutSeconds, settings: as for ``PGConnection``, for every
    ///     connection made; keep the connect timeout well below `retryTimeout`, since one connection attempt
    ///     is not cut short by it.
    ///   - initialBackoff: the first wait after a loss; each further failed attempt doubles it…
    ///   - maxBackoff: …up to this cap, so recovery is noticed within `maxBackoff` of the server's return.
    ///   - retryTimeout: how long one `run` keeps retrying before rethrowing the transient error; nil
    ///     retries until it succeeds or `cancel()` is called.
    ///   - onRetry: called on `run`'s thread before each wait with the transient error, the attempt that
    ///     failed (1-based) and the wait: where the caller logs and counts outages, which are otherwise
    ///     invisible while retries succeed.
    ///   - onRecovered: called on `run`'s thread when a body succeeds after retries (of this run or of
    ///     earlier ones), with their number: where the caller ends the outage it reported.
    public init(
        conninfo: String,
        applicationName: String = "attest-worker",
        connectTimeoutSeconds: Int = 10,
        settings: [String: String] = [:],
        initialBackoff: Duration = .milliseconds(50),
        maxBackoff: Duration = .seconds(2),
        retryTimeout: Duration? = nil,
        onRetry: (@Sendable (_ error: PGError, _ attempt: Int, _ wait: Duration) -> Void)? = nil,
        onRecovered: (@Sendable (_ retries: Int) -> Void)? = nil
    ) {
        self.conninfo = conninfo
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.settings = settings
        backoff = Backoff(initial: initialBackoff, cap: maxBackoff)
        self.retryTimeout = retryTimeout
        self.onRetry = onRetry
        self.onRecovered = onRecovered
    }

    /// Runs `body` on a healthy connection, reconnecting and retrying after transient failures.
    ///
    /// A connection the previous body left inside a transaction, or broken, is replaced first.
    /// - Throws: permanent errors at once; the last transient error once `retryTimeout` would be exceeded
    ///   by the next wait; `.cancelled` after `cancel()` instead of a retry or a new connection.
    @discardableResult
    public func run<T>(_ body: (PGConnection) throws(PGError) -> T) throws(PGError) -> T {
        let started = ContinuousClock.now
        defer { elapsed += ContinuousClock.now - started }
        let deadline = retryTimeout.map { started + $0 }
        var backoff = self.backoff
        var attempt = 0
        while true {
            attempt += 1
            // After cancel() a healthy connection still serves, so shutdown finishes what the database takes.
            guard !cancelled.load(ordering: .acquiring) || connection?.isIdle == true else { throw Self.cancelledError }
            do throws(PGError) {
                let value = try body(try currentConnection())
                if retriesSinceSuccess > 0 {
                    onRecovered?(retriesSinceSuccess)
                    retriesSinceSuccess = 0
                }
                return value
            } catch where error.fault == .transient {
                connection = nil
                let wait = backoff.next()
                if let deadline, ContinuousClock.now + wait > deadline { throw error }
                guard !cancelled.load(ordering: .acquiring) else { throw Self.cancelledError }
                retriesSinceSuccess += 1
                onRetry?(error, attempt, wait)
                _ = wakeUp.wait(timeout: .now() + .nanoseconds(wait.wholeNanoseconds))
            }
        }
    }

    /// The time spent in `run` (connecting, the bodies, the retries and their waits) since the last call,
    /// and starts counting again: what a caller's unit of work (a batch) spent in the database. From
    /// `run`'s thread, like `run`.
    public func takeElapsed() -> Duration {
        defer { elapsed = .zero }
        return elapsed
    }

    private static let cancelledError = PGError(code: .cancelled, message: "reconnecting connection was cancelled")

    /// Stops retrying for good: a `run` waiting out a backoff throws `.cancelled` at once, a later failure
    /// throws it instead of retrying, and a later run without a healthy connection throws it before
    /// connecting. Work the database accepts still succeeds, and a statement already executing is not
    /// interrupted. For shutdown, so a writer waiting for a database that does not come back cannot hold
    /// the process, while one whose database is up finishes its batch.
    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        wakeUp.signal()
    }

    private func currentConnection() throws(PGError) -> PGConnection {
        if let connection, connection.isIdle { return connection }
        connection = nil  // Closes a broken one, or one left in a transaction (the server rolls it back).
        let fresh = try PGConnection(
            conninfo: conninfo, applicationName: applicationName, connectTimeoutSeconds: connectTimeoutSeconds,
            settings: settings)
        connection = fresh
        return fresh
    }
}
