import Dispatch
import Durations
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
/// `@unchecked Sendable` for the timer only, which is touched in `init` and `stop()` alone; the table is
/// behind its mutex.
final class ConnectionDeadlines: @unchecked Sendable {
    private struct Entry {
        var socket: Int32
        var since: ContinuousClock.Instant
        var cut = false
    }

    let deadline: Duration
    private let entries = Mutex<[UInt: Entry]>([:])
    /// Counts the connections cut (a metric, so that a slowloris shows on the dashboard).
    private let cuts: CounterSeries
    private let timer: any DispatchSourceTimer
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts sweeping at a quarter of the deadline (at most every second), so a request is cut within
    /// 1.25 × the deadline.
    init(deadline: Duration, cuts: CounterSeries) {
        self.deadline = deadline
        self.cuts = cuts
        let interval = min(Duration.seconds(1), deadline / 4)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "attest.http.deadlines"))
        let nanoseconds = interval.wholeNanoseconds
        timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(max(1_000_000, nanoseconds)))
        timer.setEventHandler { [weak self] in self?.sweep(now: .now) }
        timer.setCancelHandler { [stopped] in stopped.signal() }
        timer.activate()
    }

    /// Stops the sweep and waits until a sweep in progress has finished.
    func stop() {
        timer.cancel()
        stopped.wait()
    }

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
