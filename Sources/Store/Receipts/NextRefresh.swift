import AttestCore

/// A device's next refresh state, as the refresh planner decides it and the store settles it.
public struct NextRefresh: Sendable, Equatable {
    public var dueAt: Timestamp
    /// Consecutive failures: the backoff's exponent.
    public var attempts: Int
    public var status: RefreshStatus
    /// Why, for the state row and `receipt show` (never the key or the request).
    public var error: String?
    /// Set when the team is to be paused (Apple refused its key): until when, and Apple's status.
    public var pauseTeam: (until: Timestamp, status: Int)?

    public init(dueAt: Timestamp, attempts: Int, status: RefreshStatus, error: String? = nil, pauseTeam: (until: Timestamp, status: Int)? = nil) {
        self.dueAt = dueAt
        self.attempts = attempts
        self.status = status
        self.error = error
        self.pauseTeam = pauseTeam
    }

    public static func == (a: NextRefresh, b: NextRefresh) -> Bool {
        a.dueAt == b.dueAt && a.attempts == b.attempts && a.status == b.status && a.error == b.error
            && a.pauseTeam?.until == b.pauseTeam?.until && a.pauseTeam?.status == b.pauseTeam?.status
    }

    /// The longest error text stored (the column's bound).
    static let maxErrorBytes = 512

    /// Text cut to the stored bound at a character boundary.
    static func bounded(_ text: String) -> String {
        var out = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            if bytes + size > maxErrorBytes { break }
            out.append(character)
            bytes += size
        }
        return out
    }
}
