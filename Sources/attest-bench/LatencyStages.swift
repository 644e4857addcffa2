/// A paced job's latency split at the one timestamp the benchmark sees between its ends without asking
/// the worker: the verdict's create time, which the worker's producer stamps when the worker hands the
/// verdict over, after storing it. Before it: the job in the broker, in the worker's buffer, decided and
/// stored; after it: publishing (until the broker acknowledges) and the verdict's trip to the reader.
/// Inside the first part, the job's own acknowledgement tells the benchmark's producer (its linger, the
/// produce request, the broker appending it) from the rest. All clocks are this machine's wall clock, in
/// milliseconds.
struct LatencyStages {
    /// Job handed to the producer → verdict handed to the worker's producer, sorted.
    var toVerdictMs: [Double] = []
    /// Job handed to the producer → the broker acknowledged it, sorted.
    var producingMs: [Double] = []
    /// Verdict handed to the worker's producer → verdict read by the benchmark, sorted.
    var verdictTripMs: [Double] = []

    /// One job's times; a verdict without a create time is left out (the broker did not keep one).
    struct Sample {
        var sentMs: Int64
        /// When the producer's delivery report arrived; nil when none did.
        var acknowledgedMs: Int64?
        var createdMs: Int64?
        var readMs: Int64
    }

    init(_ samples: [Sample]) {
        for sample in samples {
            if let acknowledged = sample.acknowledgedMs { producingMs.append(Double(max(0, acknowledged &- sample.sentMs))) }
            guard let created = sample.createdMs else { continue }
            // Each clock reading is truncated to the millisecond: a stage shorter than one can read −1.
            toVerdictMs.append(Double(max(0, created &- sample.sentMs)))
            verdictTripMs.append(Double(max(0, sample.readMs &- created)))
        }
        toVerdictMs.sort()
        producingMs.sort()
        verdictTripMs.sort()
    }
}
