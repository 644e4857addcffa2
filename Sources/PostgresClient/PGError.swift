internal import CLibPQ

/// A failure reported by PostgreSQL or by libpq.
///
/// `description` is safe to log: it carries the server's primary message (never its `DETAIL`, which
/// echoes row values), with values cut out of the data-exception messages that quote their input, and
/// libpq's connection messages, which name host, port and user but never the password.
public struct PGError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, bounded identifier of the kind of failure: fit for a metric label or a log key.
    /// Server errors are told apart further by `sqlState`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The server refused a statement; `sqlState` says why.
        public static let server = Code("server")
        /// No connection could be established (server down, starting up, refusing the login…).
        public static let connectionFailed = Code("connection_failed")
        /// The connection broke (or was already broken) during a call.
        public static let connectionLost = Code("connection_lost")
        /// The connection string does not parse. Its text is never repeated: it may hold a password.
        public static let invalidConnectionString = Code("invalid_connection_string")
        /// A parameter cannot be sent as given (text containing U+0000); nothing was sent.
        public static let invalidParameter = Code("invalid_parameter")
        /// The statement produced a result this client does not handle (`COPY … FROM STDIN / TO STDOUT`).
        public static let unsupportedStatement = Code("unsupported_statement")
        /// `transaction` was misused: nested in an open transaction, or its body swallowed a failure.
        public static let transactionMisuse = Code("transaction_misuse")
        /// libpq refused a call or answered out of protocol.
        public static let client = Code("client")
        /// `PGReconnectingConnection.cancel()` stopped the retries.
        public static let cancelled = Code("cancelled")
        /// A statement's result has fewer or more rows than its SQL promises (``PGOneRowStatement``…).
        public static let unexpectedRowCount = Code("unexpected_row_count")
        /// A statement's row has no column of the name its row type reads.
        public static let missingColumn = Code("missing_column")
        /// A column its row type does not allow to be NULL is NULL.
        public static let unexpectedNull = Code("unexpected_null")
        /// A column's type (or value) is not the one its row type reads.
        public static let typeMismatch = Code("type_mismatch")
    }

    /// What kind of failure this is.
    public var code: Code
    /// The SQLSTATE the server sent, e.g. `"23505"`; nil for client and connection errors.
    public var sqlState: String?
    /// The server's primary message, or libpq's message on one line; never parameter values.
    public var message: String
    /// True when the connection is unusable after the failure (PQstatus != CONNECTION_OK): the caller
    /// should open a new connection. Statements sent before the loss may or may not have committed.
    public var isConnectionLost: Bool
    /// The constraint the server named (unique, foreign key, check…), when it named one.
    public var constraint: String?

    public init(
        code: Code,
        sqlState: String? = nil,
        message: String,
        isConnectionLost: Bool = false,
        constraint: String? = nil
    ) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.isConnectionLost = isConnectionLost
        self.constraint = constraint
    }

    public var description: String {
        "PGError(\(code)\(sqlState.map { " \($0)" } ?? "")): \(message)"
    }

    public var debugDescription: String {
        description + (constraint.map { " [constraint \($0)]" } ?? "")
            + (isConnectionLost ? " [connection lost]" : "")
    }
}

extension PGError {
    /// The error carried by a failed result. Connection state is read after the failure, so a server
    /// that sent FATAL and hung up yields both its SQLSTATE (e.g. 57P01) and `isConnectionLost`.
    static func from(result: OpaquePointer, connection: OpaquePointer) -> PGError {
        let lost = PQstatus(connection) != CONNECTION_OK
        let sqlState = field(result, "C")
        let message: String
        if let primary = field(result, "M") {
            message = redactingValues(primary, sqlState: sqlState)
        } else {
            // Produced by libpq itself (no fields): its own text, which never contains values.
            message = oneLine(String(cString: PQresultErrorMessage(result)))
        }
        return PGError(
            code: lost ? .connectionLost : (sqlState == nil ? .client : .server),
            sqlState: sqlState,
            message: message.isEmpty ? "unknown error" : message,
            isConnectionLost: lost,
            constraint: field(result, "n")
        )
    }

    /// The connection's last error (no result to read it from: send failures, a nil result).
    static func from(connection: OpaquePointer, code: Code? = nil) -> PGError {
        let lost = PQstatus(connection) != CONNECTION_OK
        let message = oneLine(String(cString: PQerrorMessage(connection)))
        return PGError(
            code: code ?? (lost ? .connectionLost : .client),
            message: message.isEmpty ? "unknown libpq error" : message,
            isConnectionLost: lost
        )
    }

    /// An error field by its protocol letter (`PG_DIAG_SQLSTATE` is `'C'`, `…_MESSAGE_PRIMARY` `'M'`,
    /// `…_CONSTRAINT_NAME` `'n'`): libpq defines them as character macros, which Swift does not import.
    private static func field(_ result: OpaquePointer, _ code: Unicode.Scalar) -> String? {
        PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) }
    }

    /// libpq's messages span lines ("…\n\tThis probably means…"); logs want one.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingSpaces() }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }

    /// Data exceptions (class 22) are the messages that quote the offending input, such as
    /// `invalid input syntax for type bigint: "…"` or `value "…" is out of range for type integer`:
    /// drop what follows the first ": " and blank quoted text. Other classes name only SQL objects.
    static func redactingValues(_ message: String, sqlState: String?) -> String {
        guard let sqlState, sqlState.hasPrefix("22") else { return message }
        var head = Substring(message)
        if let colon = head.firstRange(of: ": ") { head = head[..<colon.lowerBound] }
        var out = ""
        var quoted = false
        for character in head {
            if character == "\"" {
                out += quoted ? "…\"" : "\""
                quoted.toggle()
            } else if !quoted {
                out.append(character)
            }
        }
        if quoted { out += "…" }
        return out
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
