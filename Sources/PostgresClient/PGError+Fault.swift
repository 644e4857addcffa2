extension PGError {
    /// What a failure says about the work that met it: the one place SQLSTATEs are classified.
    public enum Fault: Sendable, Equatable {
        /// The database cannot do the work now, through no fault of the work: connection loss, a server
        /// shutting down or still starting, a read-only standby (25006), a serialization failure or deadlock
        /// (class 40), exhausted resources (53), a lock or statement timeout (55P03, 57014), an I/O error
        /// (58), a transaction or session timeout (25P03, 25P04, 57P05), and every failure not foreseen
        /// below. The same work succeeds once the cause is gone: retry it on a fresh connection. Unknown
        /// failures count here on purpose, since retrying a batch that cannot succeed stalls it visibly
        /// (readiness, metrics, logs) while giving up on it would lose its jobs.
        case transient
        /// The work's own values are refused, and would be again: a cardinality violation (21000, an upsert
        /// told to change one row twice), a data exception (class 22: out of range, bad encoding…), an
        /// integrity violation (23: check, not-null, unique, foreign key beyond the conflicts the
        /// statements handle), a program limit (54: an index row too large), or a parameter that cannot be
        /// sent (text with NUL). Retrying cannot help; isolate the job that brought the values. So is a
        /// result that does not have the shape its statement promises (a missing row, a NULL, a missing
        /// column, another type): the same statement would get the same answer, and isolating the job
        /// that meets it keeps the rest of the batch moving instead of retrying it for good.
        case permanent
        /// `PGReconnectingConnection.cancel()` stopped the retries: the process is shutting down.
        case cancelled
    }

    /// How to treat this failure; see ``Fault``.
    public var fault: Fault {
        if code == .cancelled { return .cancelled }
        if isConnectionLost { return .transient }
        if Self.permanentCodes.contains(code) { return .permanent }
        guard code == .server, let sqlClass else { return .transient }
        switch sqlClass {
        case "21", "22", "23", "54": return .permanent
        default: return .transient
        }
    }

    private static let permanentCodes: Set<Code> = [
        .invalidParameter, .unexpectedRowCount, .missingColumn, .unexpectedNull, .typeMismatch,
    ]

    /// A bounded label for metrics: the SQLSTATE's class (`"25"`, `"40"`…), `"connection"` for a lost or
    /// refused connection without one, else the client-side code.
    public var faultClass: String {
        if let sqlClass { return sqlClass }
        return isConnectionLost ? "connection" : code.rawValue
    }

    /// A short reason fit for `/readyz` and logs, e.g. `"read-only (25006)"`: a name for the SQLSTATEs an
    /// operator meets in outages, the bare SQLSTATE otherwise; never the server's message.
    public var summary: String {
        guard let sqlState = validSQLState else {
            return isConnectionLost ? "unreachable" : code.rawValue
        }
        let name = Self.names[sqlState] ?? Self.classNames[String(sqlState.prefix(2))] ?? "error"
        return "\(name) (\(sqlState))"
    }

    /// The SQLSTATE when it has the standard shape (five digits or capitals); a bounded label needs that.
    private var validSQLState: String? {
        guard let sqlState, sqlState.utf8.count == 5,
            sqlState.utf8.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) })
        else { return nil }
        return sqlState
    }

    private var sqlClass: String? { validSQLState.map { String($0.prefix(2)) } }

    private static let names: [String: String] = [
        "25006": "read-only", "25P03": "idle in transaction timeout", "25P04": "transaction timeout",
        "40001": "serialization failure", "40P01": "deadlock", "53100": "disk full", "53200": "out of memory",
        "53300": "too many connections", "55P03": "lock not available", "57014": "statement timeout or cancel",
        "57P01": "admin shutdown", "57P02": "crash shutdown", "57P03": "cannot connect now",
        "57P05": "idle session timeout", "0A000": "feature not supported",
    ]

    private static let classNames: [String: String] = [
        "08": "connection failure", "21": "cardinality violation", "22": "data exception",
        "23": "integrity violation", "25": "invalid transaction state", "40": "transaction rollback",
        "42": "syntax error or undefined object", "53": "insufficient resources", "54": "program limit exceeded",
        "55": "object not in prerequisite state", "57": "operator intervention", "58": "system error",
        "XX": "internal error",
    ]
}
