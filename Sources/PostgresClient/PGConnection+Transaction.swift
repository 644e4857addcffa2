internal import CLibPQ

extension PGConnection {
    /// Runs `body` between `BEGIN` and `COMMIT`; on any error rolls back and rethrows that error.
    ///
    /// The transaction state is checked before `COMMIT`, because PostgreSQL answers `COMMIT` in a failed
    /// transaction with a silent rollback: a body that caught a statement error and returned normally
    /// would otherwise look committed.
    /// - Throws: the body's error (after `ROLLBACK`); the `COMMIT` error (the server has then rolled back,
    ///   unless `isConnectionLost`, when the outcome is unknown: make the work idempotent);
    ///   `.transactionMisuse` when called inside an open transaction (`BEGIN` would only warn and this
    ///   `COMMIT` would end the outer transaction), or when the body swallowed a failure or ended the
    ///   transaction itself.
    @discardableResult
    public func transaction<T>(_ body: (PGConnection) throws(PGError) -> T) throws(PGError) -> T {
        // A broken connection reports PQTRANS_UNKNOWN: let BEGIN fail with the connection error instead.
        let status = PQtransactionStatus(connection)
        guard status == PQTRANS_IDLE || status == PQTRANS_UNKNOWN else {
            throw PGError(code: .transactionMisuse, message: "transaction() called inside an open transaction")
        }
        try execute(PGBegin())
        let value: T
        do throws(PGError) {
            value = try body(self)
        } catch {
            rollbackIfOpen()
            throw error
        }
        switch PQtransactionStatus(connection) {
        case PQTRANS_INERROR:
            rollbackIfOpen()
            throw PGError(
                code: .transactionMisuse,
                message: "a statement in the transaction failed and the body carried on; rolled back")
        case PQTRANS_IDLE:
            throw PGError(code: .transactionMisuse, message: "the body ended the transaction itself")
        default:
            try execute(PGCommit())
            return value
        }
    }

    /// `ROLLBACK` when a transaction is open; its own failure is dropped because the caller is already
    /// reporting the error that made the rollback necessary, and a broken connection shows in `isHealthy`.
    public func rollbackIfOpen() {
        guard PQstatus(connection) == CONNECTION_OK,
            PQtransactionStatus(connection) != PQTRANS_IDLE
        else { return }
        _ = try? execute(PGRollback())
    }
}
