import Durations
import Lifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A whole-request deadline for libmicrohttpd's connections.
///
/// `MHD_OPTION_CONNECTION_TIMEOUT` is an idle timeout: every byte restarts it, so a client trickling a
/// header byte every few seconds (slowloris) would hold a connection and its thread for as long as it likes.
/// Here every connection is stamped when it opens and again whenever one of its requests completes (so
/// keep-alive stays usable); a sweep shuts down the socket of any connection whose current request has
/// taken longer than the deadline, and libmicrohttpd then sees end-of-file and closes it as usual.
///
/// The sweep only calls `shutdown(2)`, never `close(2)`: the descriptor stays libmicrohttpd's. It is safe
/// against descriptor reuse because libmicrohttpd reports a connection closed (``closed(_:)``, which takes
/// the same lock as the sweep) before it closes the socket.
///
/// A ``Service`` that its daemon starts and stops (the sweep must end before libmicrohttpd closes the
/// sockets). `@unchecked Sendable` for the sweeper only, which is set at the end of `init` and not changed
/// after; the table is behind its mutex.
final class ConnectionDeadlines: Service, @unchecked Sendable {
    private struct Entry {
        var socket: Int32
        var since: ContinuousClock.Instant
        var cut = false
    }

    let name = "http deadlines"
    let deadline: Duration
    private let entries = Mutex<[UInt: Entry]>([:])
    /// Counts the connections cut (a metric, so that a slowloris shows on the dashboard).
    private let cuts: CounterSeries
    private var sweeper: PeriodicTask!

    /// Sweeps, once started, at a quarter of the deadline (at most every second, at least every
    /// millisecond), so a request is cut within 1.25 × the deadline.
    init(deadline: Duration, cuts: CounterSeries) {
        self.deadline = deadline
        self.cuts = cuts
        let interval = max(.milliseconds(1), min(.seconds(1), deadline / 4))
        sweeper = PeriodicTask(name: "http-deadlines", every: interval) { [weak self] in self?.sweep(now: .now) }
    }

    /// Starts the sweep on a thread of its own.
    func start() { sweeper.start() }

    func start(failed: @escaping @Sendable (any Error) -> Void) { start() }

    /// Stops the sweep and joins its thread (a sweep in progress finishes first).
    func stop() { sweeper.stop() }

    func stop(deadline: ContinuousClock.Instant) { stop() }

    func opened(_ connection: OpaquePointer, socket: Int32, at now: ContinuousClock.Instant = .now) {
        guard socket >= 0 else { return }
        entries.withLock { $0[Self.key(connection)] = Entry(socket: socket, since: now) }
    }

    /// A request on the connection was answered: the next one gets a whole deadline of its own.
    func requestCompleted(_ connection: OpaquePointer, at now: ContinuousClock.Instant = .now) {
        entries.withLock { $0[Self.key(connection)]?.since = now }
    }

    func closed(_ connection: OpaquePointer) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(connection)) }
    }

    /// Shuts down every connection whose request started more than ``deadline`` before `now`.
    func sweep(now: ContinuousClock.Instant) {
        entries.withLock { entries in
            for (key, entry) in entries where !entry.cut && now - entry.since > deadline {
                // Counted first: the client may see the end before this thread runs on.
                cuts.increment()
                entries[key]?.cut = true
                _ = shutdown(entry.socket, Int32(SHUT_RDWR))
            }
        }
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }
}
