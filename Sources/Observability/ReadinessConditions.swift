import Synchronization

/// A condition the process must meet to be ready (the broker, the database, …). The cases, in their
/// declaration order, are the order `/readyz` lists the unmet ones in.
public protocol ReadinessCondition: CaseIterable, Hashable, Sendable {
    /// Its name on `/readyz` and in the metric.
    var name: String { get }
}

/// Why a condition is unmet: a closed set, so `/readyz` and the metric say the same few things.
public protocol ReadinessReason: Equatable, Sendable {
    /// Every condition's reason until the component that knows has reported once.
    static var starting: Self { get }
    /// Served on `/readyz` after the condition's name: short, stable, no secrets.
    var text: String { get }
    /// The metric's label: a fixed word per case, never free text.
    var label: String { get }
}

/// A note `/readyz` serves beside the conditions without changing its status: something an operator must
/// fix that does not stop the process from doing its work (a refused key of a background task).
public protocol ReadinessAdvisory: Sendable {
    /// What a later note replaces or a withdrawal names: one note per key.
    var key: String { get }
    /// Served on `/readyz` after the conditions: short, stable, no secrets.
    var text: String { get }
}

/// The conditions that must all hold for the process to be ready, each set by the component that knows,
/// read by `GET /readyz` through ``check()``.
///
/// Every condition starts unmet with the reason ``ReadinessReason/starting``, so a process is not ready
/// before each component has reported once. Beside them it keeps advisories, set and withdrawn by the
/// component that knows: served on `/readyz`, never part of ``check()``'s verdict.
public final class ReadinessConditions<Condition: ReadinessCondition, Reason: ReadinessReason, Advisory: ReadinessAdvisory>: Sendable {
    /// nil when the condition holds, else why not.
    private let reasons = Mutex<[Condition: Reason]>(Dictionary(uniqueKeysWithValues: Condition.allCases.map { ($0, .starting) }))
    private let notes = Mutex<[String: Advisory]>([:])
    /// The most advisories kept: the body of `/readyz` stays small whatever the components report.
    public let advisoryLimit: Int

    public init(advisoryLimit: Int = 16) { self.advisoryLimit = max(advisoryLimit, 0) }

    /// The condition holds.
    public func markReady(_ condition: Condition) { update(condition, reason: nil) }

    /// The condition does not hold, because of `reason`.
    public func markNotReady(_ condition: Condition, _ reason: Reason) { update(condition, reason: reason) }

    private func update(_ condition: Condition, reason: Reason?) {
        reasons.withLock { $0[condition] = reason }
    }

    /// The unmet conditions and their reasons, in declaration order.
    public var unmet: [(condition: Condition, reason: Reason)] {
        reasons.withLock { reasons in Condition.allCases.compactMap { c in reasons[c].map { (c, $0) } } }
    }

    /// nil when every condition holds, else `name: text` of each unmet one, in declaration order, joined
    /// by "; ". Suitable as the `readiness` closure of ``HealthEndpoints``.
    public func check() -> String? {
        let unmet = self.unmet
        return unmet.isEmpty ? nil : unmet.map { "\($0.condition.name): \($0.reason.text)" }.joined(separator: "; ")
    }

    /// Sets the note of `advisory`'s key, replacing the one before. A new key beyond ``advisoryLimit``
    /// is dropped (the component's own metric still counts it).
    public func advise(_ advisory: Advisory) {
        notes.withLock { notes in
            if notes[advisory.key] != nil || notes.count < advisoryLimit { notes[advisory.key] = advisory }
        }
    }

    /// Removes the notes `matching` selects.
    public func withdraw(where matching: (Advisory) -> Bool) {
        notes.withLock { notes in notes = notes.filter { !matching($0.value) } }
    }

    /// The current advisories, ordered by key.
    public var advisories: [Advisory] {
        notes.withLock { notes in notes.sorted { $0.key < $1.key }.map(\.value) }
    }

    /// The texts of ``advisories``: the `advisories` closure of ``HealthEndpoints``.
    public func advisoryTexts() -> [String] { advisories.map(\.text) }
}
