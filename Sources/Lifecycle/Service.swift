/// A long-running component of the process (a listener, a probe, a poll loop, a producer), run by a
/// ``ServiceGroup``: started in the group's order, stopped in the reverse one.
///
/// Start and stop are separate calls rather than one blocking `run`, because the components are threads
/// around blocking C loops and a start has to finish (a port bound, a group subscribed) before the next
/// component may rely on it.
public protocol Service: AnyObject, Sendable {
    /// Names the component in the group's events and errors.
    var name: String { get }

    /// Starts the work and returns once it is under way; throws when it cannot start. `failed` ends the
    /// group: the component calls it when it can no longer do its work (the group still stops it, so its
    /// threads are joined). Called once.
    func start(failed: @escaping @Sendable (any Error) -> Void) throws

    /// Finishes the work and returns once every thread the component started has ended. Called once, and
    /// only after `start` returned. `deadline` is when the group stops waiting (and the process exits): a
    /// component that can give its work up by then does; one that cannot (a thread blocked in C) holds the
    /// group past it, and the group names it.
    func stop(deadline: ContinuousClock.Instant)
}
