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
/// It also bounds the connections of one client network (``ClientAddress/bucketKey(_:)``: an IPv6 /64, an
/// IPv4 address) to `perNetworkLimit` (0: no bound, as libmicrohttpd's per-IP limit): libmicrohttpd's own per-IP limit counts each IPv6 address apart, so
/// a client rotating through its /64 could take every slot. A connection past the bound is shut down as
/// soon as it opens.
///
/// A ``Service`` that its daemon starts and stops (the sweep must end before libmicrohttpd closes the
/// sockets). `@unchecked Sendable` for the sweeper only, which is set at the end of `init` and not changed
/// after; the table is behind its mutex.
final class ConnectionDeadlines: Service, @unchecked Sendable {
    private struct Entry {
        var socket: Int32
        var since: ContinuousClock.Instant
        var network: String
        var cut = false
    }

    let name = "http deadlines"
    let deadline: Duration
    let perNetworkLimit: Int
    private let entries = Mutex<(byConnection: [UInt: Entry], perNetwork: [String: Int])>(([:], [:]))
    /// Counts the connections cut (a metric, so that a slowloris shows on the dashboard).
    private let cuts: CounterSeries
    private var sweeper: PeriodicTask!

    /// Sweeps, once started, at a quarter of the deadline (at most every second, at least every
    /// millisecond), so a request is cut within 1.25 × the deadline.
    init(deadline: Duration, perNetworkLimit: Int, cuts: CounterSeries) {
        self.deadline = deadline
        self.perNetworkLimit = perNetworkLimit
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

    /// A connection opened from `address`; shut down at once when its network already holds
    /// `perNetworkLimit` connections. Returns whether it may stay.
    @discardableResult
    func opened(_ connection: OpaquePointer, socket: Int32, address: String, at now: ContinuousClock.Instant = .now) -> Bool {
        guard socket >= 0 else { return true }
        let network = ClientAddress.bucketKey(address)
        return entries.withLock { entries in
            let held = entries.perNetwork[network, default: 0]
            entries.perNetwork[network] = held + 1
            var entry = Entry(socket: socket, since: now, network: network)
            guard perNetworkLimit <= 0 || held < perNetworkLimit else {
                entry.cut = true
                entries.byConnection[Self.key(connection)] = entry
                _ = shutdown(socket, Int32(SHUT_RDWR))
                return false
            }
            entries.byConnection[Self.key(connection)] = entry
            return true
        }
    }

    /// A request on the connection was answered: the next one gets a whole deadline of its own.
    func requestCompleted(_ connection: OpaquePointer, at now: ContinuousClock.Instant = .now) {
        entries.withLock { $0.byConnection[Self.key(connection)]?.since = now }
    }

    func closed(_ connection: OpaquePointer) {
        entries.withLock { entries in
            guard let entry = entries.byConnection.removeValue(forKey: Self.key(connection)) else { return }
            let held = entries.perNetwork[entry.network, default: 1] - 1
            entries.perNetwork[entry.network] = held > 0 ? held : nil
        }
    }

    /// Connections open from `address`'s network.
    func held(network address: String) -> Int { entries.withLock { $0.perNetwork[ClientAddress.bucketKey(address)] ?? 0 } }

    /// Shuts down every connection whose request started more than ``deadline`` before `now`.
    func sweep(now: ContinuousClock.Instant) {
        entries.withLock { entries in
            for (key, entry) in entries.byConnection where !entry.cut && now - entry.since > deadline {
                // Counted first: the client may see the end before this thread runs on.
                cuts.increment()
                entries.byConnection[key]?.cut = true
                _ = shutdown(entry.socket, Int32(SHUT_RDWR))
            }
        }
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }
}
