import Foundation

/// The worker's CPU time by the role of its threads, from /proc/<pid>/task/<tid>/stat: where a job's cost
/// goes inside the worker (its lanes, the deciding threads, the consumer, the publisher, librdkafka's own
/// threads), so that a change's effect shows in the part it touched, in every run.
enum WorkerThreadsCPU {
    /// The worker's threads by what they do, named as the worker and its libraries name them.
    enum Role: String, CaseIterable {
        /// `batch-N`: gather, decide (alone for a small batch), settle, hand over to the producer.
        case lanes
        /// libdispatch's threads (`…qos…`): the checks of a batch's keys beside its lane.
        case deciding
        /// `kafka-poll`: polling, the intake's bookkeeping.
        case consumer
        /// `kafka-delivery` and `publish-retry`: delivery reports, finished offsets, chained publications.
        case publisher
        /// `rdk:…`: librdkafka's broker and main threads (requests, responses, their system calls).
        case librdkafka
        /// Every other thread (HTTP, events, maintenance), and threads that ended between the readings.
        case other

        static func of(_ name: String) -> Role {
            if name.hasPrefix("batch-") { return .lanes }
            if name.hasPrefix("rdk:") { return .librdkafka }
            if name == "kafka-poll" { return .consumer }
            if name == "kafka-delivery" || name == "publish-retry" { return .publisher }
            if name.contains("qos") { return .deciding }
            return .other
        }
    }

    /// One thread's name (its stat line's field 2, the kernel's 15 characters) and CPU ticks.
    struct Thread: Equatable {
        var name: String
        var ticks: UInt64
    }

    /// The name of a /proc stat line, between the first `(` and the last `)`; nil when it has none.
    static func name(_ line: String) -> String? {
        guard let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")"), open < close else { return nil }
        return String(line[line.index(after: open)..<close])
    }

    /// Every thread of `pid` now, by thread id (threads that end while they are read are left out).
    static func read(_ pid: Int32) -> [Int32: Thread] {
        let tids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.compactMap { Int32($0) } ?? []
        var threads = [Int32: Thread]()
        for tid in tids {
            guard let line = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                let name = name(line), let stat = ProcessCPU.parse(line)
            else { continue }
            threads[tid] = Thread(name: name, ticks: stat.own)
        }
        return threads
    }

    /// Seconds by role between two readings of the worker's threads, given its whole CPU time over them
    /// (`processSeconds`): a thread started between them counts from zero, and what the threads read do not
    /// account for (threads that ended) goes to ``Role/other``.
    static func seconds(before: [Int32: Thread], after: [Int32: Thread], processSeconds: Double) -> [Role: Double] {
        var ticks = [Role: UInt64]()
        for (tid, thread) in after {
            let start = before[tid].flatMap { $0.name == thread.name && $0.ticks <= thread.ticks ? $0.ticks : nil } ?? 0
            ticks[Role.of(thread.name), default: 0] += thread.ticks - start
        }
        var seconds = ticks.mapValues { Double($0) / Double(ProcessCPU.ticksPerSecond) }
        let unaccounted = processSeconds - seconds.values.reduce(0, +)
        seconds[.other, default: 0] += max(0, unaccounted)
        return seconds
    }
}
