import Synchronization

/// Named conditions that must all hold for the process to be ready ("broker", "postgres", "migrations"),
/// each set by the component that knows, read by `GET /readyz` through ``check()``.
///
/// Every condition starts unmet with the reason "starting", so a process is not ready before each component
/// has reported once.
public final class ReadinessConditions: Sendable {
    private struct State {
        var order: [String]
        /// nil when the condition holds, else why not.
        var reasons: [String: String]
    }

    private let state: Mutex<State>

    public init(_ names: [String]) {
        state = Mutex(
            State(order: names, reasons: Dictionary(names.map { ($0, "starting") }, uniquingKeysWith: { a, _ in a }))
        )
    }

    /// The condition holds.
    public func markReady(_ name: String) { update(name, reason: nil) }

    /// The condition does not hold, because of `reason` (served on `/readyz`: no secrets).
    public func markNotReady(_ name: String, reason: String) { update(name, reason: reason) }

    private func update(_ name: String, reason: String?) {
        state.withLock { state in
            if !state.order.contains(name) { state.order.append(name) }
            state.reasons[name] = reason
        }
    }

    /// nil when every condition holds, else `name: reason` of each unmet one, in registration order,
    /// joined by "; ". Suitable as the `readiness` closure of ``HealthEndpoints``.
    public func check() -> String? {
        state.withLock { state in
            let unmet = state.order.compactMap { name in state.reasons[name].map { "\(name): \($0)" } }
            return unmet.isEmpty ? nil : unmet.joined(separator: "; ")
        }
    }
}
