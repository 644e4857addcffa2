import Foundation
import Glibc
import PostgresClient

/// What one phase of the benchmark cost the processes that ran it, from a reading before and one after:
/// CPU seconds of the worker, of PostgreSQL (the postmaster and its backends), of the broker and of the
/// benchmark's own clients (its producer and verdict reader), the worker's by the role of its threads, and
/// the WAL bytes written.
struct PhaseCost {
    /// The processes to account: the worker's pid, the postmaster's and the broker's (nil: not measured),
    /// and this process (its own time only: the worker is its child).
    struct Processes {
        var worker: Int32
        var postgres: Int32?
        var broker: Int32?
        var bench: Int32 = getpid()
    }

    /// One reading of the counters.
    struct Reading {
        var worker: Double?
        var postgres: Double?
        var broker: Double?
        var bench: Double?
        var workerThreads: [Int32: WorkerThreadsCPU.Thread]
        var lsn: String

        static func now(_ processes: Processes, connection: PGReconnectingConnection) throws -> Reading {
            let threads = WorkerThreadsCPU.read(processes.worker)
            let stats = ProcessCPU.readAll()
            let lsn = try connection.run { c throws(PGError) in try c.execute(DatabaseCost.WALPosition()).lsn }
            return Reading(
                worker: ProcessCPU.seconds(tree: processes.worker, in: stats),
                postgres: processes.postgres.flatMap { ProcessCPU.seconds(tree: $0, in: stats) },
                broker: processes.broker.flatMap { ProcessCPU.seconds(tree: $0, in: stats) },
                bench: ProcessCPU.seconds(own: processes.bench, in: stats), workerThreads: threads, lsn: lsn)
        }
    }

    var workerSeconds: Double?
    var postgresSeconds: Double?
    var brokerSeconds: Double?
    var benchSeconds: Double?
    /// The worker's seconds by thread role; nil when its own were not measured.
    var workerThreadSeconds: [WorkerThreadsCPU.Role: Double]?
    var walBytes: Int64

    /// The cost of the next `seconds`, waited out here (the idle window: nothing in flight).
    static func over(seconds: Double, _ processes: Processes, connection: PGReconnectingConnection) throws -> PhaseCost {
        try during(processes, connection: connection) { Thread.sleep(forTimeInterval: seconds) }
    }

    /// The cost of running `work`.
    static func during(_ processes: Processes, connection: PGReconnectingConnection, _ work: () throws -> Void) throws -> PhaseCost {
        let before = try Reading.now(processes, connection: connection)
        try work()
        return try since(before, processes, connection: connection)
    }

    /// The cost between `before` and now.
    static func since(_ before: Reading, _ processes: Processes, connection: PGReconnectingConnection) throws -> PhaseCost {
        let after = try Reading.now(processes, connection: connection)
        let wal = try connection.run { c throws(PGError) in try c.execute(DatabaseCost.WALBytesSince(lsn: before.lsn)).bytes }
        let worker = difference(before.worker, after.worker)
        return PhaseCost(
            workerSeconds: worker, postgresSeconds: difference(before.postgres, after.postgres),
            brokerSeconds: difference(before.broker, after.broker), benchSeconds: difference(before.bench, after.bench),
            workerThreadSeconds: worker.map {
                WorkerThreadsCPU.seconds(before: before.workerThreads, after: after.workerThreads, processSeconds: $0)
            }, walBytes: wal)
    }

    /// after − before, nil when either is missing (the process was not running at one of them, a restarted
    /// one would count from zero).
    static func difference(_ before: Double?, _ after: Double?) -> Double? {
        guard let before, let after, after >= before else { return nil }
        return after - before
    }
}
