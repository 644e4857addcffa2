internal import CLibPQ

extension PGConnection {
    /// Sends several statements as one round trip in pipeline mode and returns their rows in order.
    ///
    /// All statements go out back to back followed by one sync, then every result is read: 1000 inserts
    /// cost one network round trip instead of 1000. Each distinct statement is prepared once per connection
    /// (in the same round trip, the first time it is seen) and executed by name afterwards, so the server
    /// parses and plans it once rather than once per row. libpq reads incoming results while its writes
    /// block, so large batches cannot deadlock.
    ///
    /// When a statement fails the server skips the rest up to the sync, and the first error is thrown.
    /// Outside an explicit transaction the statements up to the sync form one implicit transaction, so a
    /// failure rolls all of them back; `BEGIN` first and `COMMIT` last say the same explicitly. A failed
    /// explicit transaction outlives the sync, though: when this call began it (the connection was idle
    /// before), it is rolled back here; a transaction opened earlier (say by ``transaction(_:)``) is left
    /// to its owner.
    /// - Throws: the first statement error; `.invalidParameter` before anything is sent.
    public func pipeline(_ statements: [(sql: String, params: [PGValue])]) throws(PGError) -> [PGRows] {
        guard !statements.isEmpty else { return [] }
        // Encoding everything first means a bad parameter fails the batch before any statement runs.
        var encoded: [PGParameters] = []
        encoded.reserveCapacity(statements.count)
        for statement in statements {
            encoded.append(try PGParameters(statement.params))
        }
        let beganIdle = PQtransactionStatus(connection) == PQTRANS_IDLE
        do throws(PGError) {
            return try runPipeline(statements.map(\.sql), encoded)
        } catch {
            if beganIdle { rollbackIfOpen() }
            throw error
        }
    }

    /// What went out, in order: each statement, preceded by its prepare when this pipeline prepares it.
    private enum Sent {
        case prepare(PreparedStatements.Key, name: String)
        case statement
    }

    private func runPipeline(_ sqls: [String], _ parameters: [PGParameters]) throws(PGError) -> [PGRows] {
        guard PQenterPipelineMode(connection) == 1 else { throw PGError.from(connection: connection) }
        var sent: [Sent] = []
        // Statements prepared earlier in this same pipeline: the server handles them in order, so later
        // uses may name them before their confirmation is read.
        var pending: [PreparedStatements.Key: String] = [:]
        for (sql, parameters) in zip(sqls, parameters) {
            let key = PreparedStatements.Key(sql: sql, types: parameters.types)
            var name = prepared.name(for: key) ?? pending[key]
            if name == nil, prepared.hasRoom(besides: pending.count) {
                let fresh = prepared.reserveName()
                let accepted = parameters.withPointers { count, types, _, _, _ in
                    PQsendPrepare(connection, fresh, sql, count, types)
                }
                guard accepted == 1 else { throw PGError.from(connection: connection) }
                pending[key] = fresh
                sent.append(.prepare(key, name: fresh))
                name = fresh
            }
            let accepted = parameters.withPointers { count, types, values, lengths, formats in
                if let name {
                    PQsendQueryPrepared(connection, name, count, values, lengths, formats, 0)
                } else {
                    PQsendQueryParams(connection, sql, count, types, values, lengths, formats, 0)
                }
            }
            // libpq refuses a send only when the connection broke or memory ran out (parameters were
            // checked): either way this connection is done for, and `isHealthy` says so.
            guard accepted == 1 else { throw PGError.from(connection: connection) }
            sent.append(.statement)
        }
        guard PQpipelineSync(connection) == 1 else { throw PGError.from(connection: connection) }

        var rows: [PGRows] = []
        rows.reserveCapacity(sqls.count)
        var firstError: PGError?
        for entry in sent {
            // Each statement's results end with a NULL; a broken connection also ends in NULLs.
            while let raw = PQgetResult(connection) {
                let result = PGResult(taking: raw)
                switch PQresultStatus(raw) {
                case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                    if case .prepare(let key, let name) = entry {
                        prepared.add(key, name: name)
                    } else {
                        rows.append(PGRows(result))
                    }
                case PGRES_PIPELINE_ABORTED:
                    break  // Skipped because an earlier statement failed; that failure is the one reported.
                default:
                    if firstError == nil { firstError = PGError.from(result: raw, connection: connection) }
                }
            }
            // After a loss the outcome of the whole batch is unknown: that, not an earlier statement's
            // error, is what the caller must act on.
            if PQstatus(connection) != CONNECTION_OK { throw PGError.from(connection: connection) }
        }
        guard let raw = PQgetResult(connection) else {
            throw PGError.from(connection: connection)
        }
        let syncStatus = PQresultStatus(raw)
        PQclear(raw)
        guard syncStatus == PGRES_PIPELINE_SYNC, PQexitPipelineMode(connection) == 1 else {
            throw PGError(
                code: .client, message: "pipeline out of step: expected the sync point after the last result",
                isConnectionLost: PQstatus(connection) != CONNECTION_OK)
        }
        if let firstError { throw firstError }
        return rows
    }
}
