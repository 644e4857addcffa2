import Durations
import Foundation

extension NSCondition {
    /// Waits, locked, until signalled or until `deadline` has passed on the continuous clock; false once
    /// it has. `wait(until: Date)` times out on the wall clock, which can be stepped: forward, it returns
    /// before a deadline given to someone else on the continuous clock; back, long after. This re-arms
    /// until the continuous clock agrees, each wait at most a second so a step back costs at most that.
    public func wait(until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = deadline - .now
            guard left > .zero else { return false }
            if wait(until: Date().addingTimeInterval(min(left, .seconds(1)).timeInterval)) { return true }
        }
    }
}
