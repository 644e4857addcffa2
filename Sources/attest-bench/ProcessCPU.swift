import Foundation

/// CPU time of processes from /proc/<pid>/stat, for the benchmark's cost per job: what the worker,
/// PostgreSQL and the broker spent over a phase is the difference of two readings.
enum ProcessCPU {
    /// The fields of one /proc/<pid>/stat line the cost needs, in clock ticks.
    struct Stat: Equatable {
        var ppid: Int32
        /// utime + stime: the process's own CPU time.
        var own: UInt64
        /// cutime + cstime: the CPU time of its children that have exited and been waited for.
        var reapedChildren: UInt64
    }

    /// Parses a /proc/<pid>/stat line; nil when it is not one. The command name (field 2, in parentheses)
    /// may hold spaces and parentheses itself, so the fields are counted from the last `)`.
    static func parse(_ line: String) -> Stat? {
        guard let close = line.lastIndex(of: ")") else { return nil }
        // Fields 3… : state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        let fields = line[line.index(after: close)...].split(separator: " ")
        guard fields.count >= 15, let ppid = Int32(fields[1]), let utime = UInt64(fields[11]), let stime = UInt64(fields[12]),
            let cutime = UInt64(fields[13]), let cstime = UInt64(fields[14])
        else { return nil }
        let (own, o1) = utime.addingReportingOverflow(stime)
        let (reaped, o2) = cutime.addingReportingOverflow(cstime)
        guard !o1, !o2 else { return nil }
        return Stat(ppid: ppid, own: own, reapedChildren: reaped)
    }

    /// The CPU seconds of a process tree's root and its direct children: their own time plus the time of
    /// the root's children that have exited. A child that exits between two readings moves from the
    /// second term to the first, so differences of two readings stay right (PostgreSQL's backends are
    /// the postmaster's children; the worker and the broker have none that run long). nil when `root`
    /// is not running.
    static func seconds(tree root: Int32, in stats: [Int32: Stat]) -> Double? {
        guard let rootStat = stats[root] else { return nil }
        var ticks = rootStat.own + rootStat.reapedChildren
        for (pid, stat) in stats where stat.ppid == root && pid != root { ticks += stat.own }
        return Double(ticks) / Double(ticksPerSecond)
    }

    /// The CPU seconds of one process alone; nil when it is not running.
    static func seconds(own pid: Int32, in stats: [Int32: Stat]) -> Double? {
        stats[pid].map { Double($0.own) / Double(ticksPerSecond) }
    }

    /// Every process's stat line now, by pid (processes that exit while they are read are left out).
    static func readAll() -> [Int32: Stat] {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        var stats = [Int32: Stat]()
        for pid in pids {
            if let line = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let stat = parse(line) {
                stats[pid] = stat
            }
        }
        return stats
    }

    /// The kernel's clock ticks per second, the unit of every /proc CPU time.
    static let ticksPerSecond = max(1, sysconf(Int32(_SC_CLK_TCK)))
}
