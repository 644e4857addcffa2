internal import CLibPQ

/// One connection to PostgreSQL, the only owner of its libpq `PGconn`.
///
/// Every call blocks the calling thread until the server answers: use a connection from a thread or queue
/// made for blocking work, never from Swift's cooperative pool (two threads on a 2-core machine).
///
/// `@unchecked Sendable` because libpq lets a `PGconn` move between threads but not serve two at once:
/// the owner hands it over, it is never shared. There is deliberately no lock: a lock would turn the
/// mistake of sharing one connection into silent serialization instead of fixing it.
public final class PGConnection: @unchecked Sendable {
    /// Freed by `PQfinish` in `deinit` and nowhere else. Internal only for this type's extensions.
    let connection: OpaquePointer
    /// What `pipeline` has prepared on this session.
    var prepared = PreparedStatements()

    /// Connects, blocking until the server accepted the login or `connectTimeoutSeconds` passed.
    ///
    /// - Parameters:
    ///   - conninfo: a libpq connection string, `key=value …` or a `postgresql://` URI.
    ///   - applicationName: shown in `pg_stat_activity`; an `application_name` in `conninfo` (or
    ///     `PGAPPNAME`) wins, so operators can tell instances apart without a code change.
    ///   - connectTimeoutSeconds: libpq's `connect_timeout` unless `conninfo` sets one; without it an
    ///     unreachable host blocks for the kernel's TCP timeout (minutes).
    ///   - settings: run-time parameters set for the session (`set_config`, by name), besides
    ///     ``sessionDefaults`` or in place of one of them.
    /// - Throws: `.invalidConnectionString` when `conninfo` does not parse (its text is not repeated: it
    ///   may hold a password); `.connectionFailed` (with `isConnectionLost`) when the server cannot be
    ///   reached or refuses the login, retriable since a restarting server refuses logins for a while.
    public init(
        conninfo: String,
        applicationName: String = "attest-worker",
        connectTimeoutSeconds: Int = 10,
        settings: [String: String] = [:]
    ) throws(PGError) {
        // Parsed once up front because libpq's parse errors quote fragments of the string.
        var parseError: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &parseError) else {
            if let parseError { PQfreemem(parseError) }
            throw PGError(code: .invalidConnectionString, message: "the connection string does not parse")
        }
        PQconninfoFree(options)

        // Later entries win, and `dbname` expands to everything in `conninfo`: the two defaults come first.
        let pairs = [
            ("fallback_application_name", applicationName),
            ("connect_timeout", String(connectTimeoutSeconds)),
            ("dbname", conninfo),
        ]
        let connection = withCStrings(pairs.map(\.0)) { keywords in
            withCStrings(pairs.map(\.1)) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else {
            throw PGError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let error = PGError.from(connection: connection, code: .connectionFailed)
            PQfinish(connection)  // A failed PGconn still has to be freed.
            throw error
        }
        // Notices (e.g. "there is no transaction in progress") would go to stderr and interleave with the
        // worker's JSON logs; errors reach the caller through results, so notices carry nothing needed.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        self.connection = connection
        for (name, value) in Self.sessionDefaults.merging(settings, uniquingKeysWith: { _, given in given })
            .sorted(by: { $0.key < $1.key })
        {
            try execute(SetConfig(name: name, value: value))
        }
    }

    private struct SetConfig: PGCommandStatement {
        let name: String
        let value: String
        var query: PGQuery { "SELECT set_config(\(name), \(value), false)" }
    }

    /// What every session sets before its first statement (`settings` may override them). Every statement
    /// `pipeline` runs is prepared once and executed many times:
    /// - `plan_cache_mode`: left to choose, PostgreSQL plans each execution afresh whenever a statement reads
    ///   a partitioned table by its partition key: a custom plan's cost counts the one partition it pruned
    ///   to, the generic plan's all of them, so the generic one never looks cheaper, and planning cost more
    ///   than executing (0.67 ms against 0.50 ms for the risk upsert under load). A generic plan prunes
    ///   partitions when it executes instead.
    /// - `jit`: JIT compiles a plan's expressions anew at every execution (the code is not kept with a
    ///   prepared statement) once its estimated cost passes `jit_above_cost`, which a short read reaches
    ///   when a session disables a scan type (the planner adds 10¹⁰ to a scan it must still use): the
    ///   worker's read of the whole apps table on a batch lane was compiled each time, 68 ms per read, and
    ///   every job of that lane waited for it.
    static let sessionDefaults = ["jit": "off", "plan_cache_mode": "force_generic_plan"]

    deinit {
        PQfinish(connection)
    }

    /// True while libpq considers the connection usable: connected, not inside a failed transaction, not
    /// left in pipeline mode. A server that went away unnoticed is only detected by the next call.
    public var isHealthy: Bool {
        guard PQstatus(connection) == CONNECTION_OK, PQpipelineStatus(connection) == PQ_PIPELINE_OFF else {
            return false
        }
        let status = PQtransactionStatus(connection)
        return status == PQTRANS_IDLE || status == PQTRANS_INTRANS
    }

    /// Healthy and outside any transaction: safe to hand to a new unit of work.
    var isIdle: Bool {
        isHealthy && PQtransactionStatus(connection) == PQTRANS_IDLE
    }

    /// Runs one statement (`PQexecParams`): parameters `$1…` travel apart from the SQL, text results.
    ///
    /// One statement only: the extended protocol refuses `;`-separated lists.
    /// - Throws: `.server` with the SQLSTATE; `isConnectionLost` when the connection broke;
    ///   `.invalidParameter` before sending; `.unsupportedStatement` for `COPY … STDIN/STDOUT` (the copy
    ///   is abandoned and the connection stays usable).
    @discardableResult
    public func execute(_ sql: String, _ params: [PGValue] = []) throws(PGError) -> PGRows {
        let parameters = try PGParameters(params)
        let raw = parameters.withPointers { count, types, values, lengths, formats in
            PQexecParams(connection, sql, count, types, values, lengths, formats, 0)
        }
        guard let raw else { throw PGError.from(connection: connection) }
        return try rows(from: PGResult(taking: raw))
    }

    /// Runs a script of `;`-separated statements without parameters (`PQexec`, the simple protocol), as
    /// migrations are written. Never for anything built from input.
    public func executeScript(_ sql: String) throws(PGError) {
        guard let raw = PQexec(connection, sql) else { throw PGError.from(connection: connection) }
        _ = try rows(from: PGResult(taking: raw))
    }

    /// The rows of a successful result, or the error a failed one carries.
    private func rows(from result: PGResult) throws(PGError) -> PGRows {
        let status = PQresultStatus(result.pointer)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PGRows(result)
        case PGRES_COPY_IN, PGRES_COPY_OUT:
            abandonCopy(status)
            throw PGError(
                code: .unsupportedStatement,
                message: "COPY FROM STDIN / TO STDOUT is not supported; the copy was abandoned",
                isConnectionLost: PQstatus(connection) != CONNECTION_OK)
        default:
            throw PGError.from(result: result.pointer, connection: connection)
        }
    }

    /// Brings the connection out of a COPY state so it can run statements again.
    private func abandonCopy(_ status: ExecStatusType) {
        if status == PGRES_COPY_IN {
            _ = PQputCopyEnd(connection, "COPY is not supported by this client")
        } else {
            var buffer: UnsafeMutablePointer<CChar>?
            while PQgetCopyData(connection, &buffer, 0) > 0 {
                PQfreemem(buffer)
            }
        }
        while let raw = PQgetResult(connection) {
            PQclear(raw)
        }
    }
}

/// Calls `body` with a NULL-terminated array of C strings (the shape of `PQconnectdbParams`' arguments),
/// valid only during the call.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var storage: [CChar] = []
    var offsets: [Int] = []
    for string in strings {
        offsets.append(storage.count)
        storage += string.utf8CString
    }
    return storage.withUnsafeBufferPointer { buffer in
        let pointers = offsets.map { Optional(buffer.baseAddress! + $0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
