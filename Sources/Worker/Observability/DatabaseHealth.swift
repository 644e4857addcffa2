import Observability
import PostgresClient
import Synchronization

/// The `postgres` readiness condition and the record of database outages, as the writers meet them.
///
/// A writer that retries a transient failure (read-only standby, deadlock, timeout, lost connection) makes
/// the condition unmet with that failure's summary, e.g. `"read-only (25006)"`, until its work goes through
/// again; the probe's `SELECT 1`, which a read-only database still answers, cannot clear it. Retries are
/// counted by SQLSTATE class. Logs want an outage once, with reminders while it lasts, not a line per
/// attempt: `failed` says when to write one (time injected, for tests).
public final class DatabaseHealth: Sendable {
    /// What to log about a retried failure.
    public enum Report: Equatable, Sendable {
        /// The first failure of an outage.
        case started
        /// The outage goes on: retries so far (every writer's) and seconds since it started.
        case ongoing(retries: Int, seconds: Int64)
    }

    /// An outage that ended, for the recovery log line.
    public struct Outage: Equatable, Sendable {
        public let retries: Int
        public let seconds: Int64
    }

    private struct State {
        /// Failing writers and their last failure.
        var failing: [String: Readiness.Reason] = [:]
        /// The idle probe's reason, nil when it succeeds.
        var probe: Readiness.Reason?
        var outageStart: Duration?
        var lastReport: Duration = .zero
        var retries = 0
    }

    private let readiness: Readiness.Conditions
    private let retries: Counter
    private let reminderInterval: Duration
    private let now: @Sendable () -> Duration
    private let state = Mutex(State())

    /// - Parameters:
    ///   - retries: counts every retried failure, labelled by ``PGError/faultClass``.
    ///   - reminderInterval: how often an ongoing outage is logged again.
    ///   - now: a monotonic reading (the time since any fixed origin).
    public init(
        readiness: Readiness.Conditions, retries: Counter, reminderInterval: Duration = .seconds(30),
        now: (@Sendable () -> Duration)? = nil
    ) {
        self.readiness = readiness
        self.retries = retries
        self.reminderInterval = reminderInterval
        let origin = ContinuousClock.now
        self.now = now ?? { ContinuousClock.now - origin }
    }

    /// `writer` is about to retry `error`: the condition becomes unmet, the retry is counted, and the
    /// return value says whether to log (nil: not now).
    public func failed(_ error: PGError, writer: String) -> Report? {
        retries.labels([error.faultClass]).increment()
        let time = now()
        return update { state in
            state.failing[writer] = .writerRetrying(error.summary)
            state.retries += 1
            guard let start = state.outageStart else {
                state.outageStart = time
                state.lastReport = time
                return .started
            }
            guard time - state.lastReport >= reminderInterval else { return nil }
            state.lastReport = time
            return .ongoing(retries: state.retries, seconds: (time - start).components.seconds)
        }
    }

    /// `writer`'s work went through: when no writer fails any more the outage is over and returned.
    @discardableResult
    public func recovered(writer: String) -> Outage? {
        let time = now()
        return update { state in
            guard state.failing.removeValue(forKey: writer) != nil, state.failing.isEmpty,
                let start = state.outageStart
            else { return nil }
            defer { (state.outageStart, state.retries) = (nil, 0) }
            return Outage(retries: state.retries, seconds: (time - start).components.seconds)
        }
    }

    /// The idle probe's finding: nil when the database answers and accepts writes, else why not.
    public func probed(_ reason: Readiness.Reason?) {
        update { $0.probe = reason }
    }

    /// Applies `change`, then sets the readiness condition from the result: a failing writer's reason
    /// first (the lowest-named, so the text is stable), else the probe's.
    private func update<T>(_ change: (inout State) -> T) -> T {
        state.withLock { state in
            let result = change(&state)
            let reason = state.failing.min { $0.key < $1.key }?.value ?? state.probe
            if let reason { readiness.markNotReady(.postgres, reason) } else { readiness.markReady(.postgres) }
            return result
        }
    }
}
