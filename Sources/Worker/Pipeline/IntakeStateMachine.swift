import KafkaClient

/// Everything the intake knows, as one value: what each partition has received, has in a batch and has
/// finished (so only the contiguous finished prefix is ever stored: nothing before an offset is left
/// without its verdict in PostgreSQL and its publication acknowledged), the lanes' buffers and what they
/// hold in messages and bytes, pause/resume, assignment and shutdown.
///
/// Pure: no librdkafka, no clock (instants are passed in), no locking (``Intake`` holds it under its
/// lock). Each transition returns the ``Action``s its caller carries out after unlocking, so every rule
/// here runs in a unit test. Where the records' flow and the shutdown stand are each one ``Flow`` and one
/// ``Phase``, and a transition the threads can never make legally (polling after the poll thread ended,
/// a lane ending before the shutdown) traps: it would mean a broken worker, not a state to recover from.
struct IntakeStateMachine {
    /// What the threads do for the machine, outside the lock.
    enum Action: Equatable {
        case pause([TopicPartition])
        case resume([TopicPartition])
        /// The next offset to consume, per partition, after its finished prefix.
        case storeOffsets([TopicPartition: Int64])
        /// Lanes waiting for messages, a revocation or the shutdown waiting for jobs, sleeping retries.
        case wakeWaiters
        /// The poll thread waiting for room.
        case wakePoller
    }

    /// What the poll thread does next.
    enum PollStep: Equatable {
        case stop
        case poll(then: [Action])
    }

    /// How many records the next poll may take, or how long to wait for room first.
    enum PollRoom: Equatable {
        case room(Int, then: [Action])
        case wait(until: ContinuousClock.Instant)
    }

    /// What the revoking poll thread does next.
    enum RevokeStep: Equatable {
        /// Jobs of the partitions are still in batches: wait for an acknowledgement, up to the deadline.
        case wait
        /// Given up: the finished prefixes to store; `drained` unless the deadline left jobs in batches
        /// (the next owner redelivers them).
        case revoked(drained: Bool, then: [Action])
    }

    /// How records flow in: one value, so that the pause and the wait for room cannot contradict each other.
    enum Flow: Equatable {
        /// Polling what the buffer has room for.
        case flowing
        /// The buffer was full at `since`: the poll thread waits for room until `since + pauseAfter`, and
        /// wants waking (`wakeWanted`) until an acknowledgement makes room for a batch.
        case full(since: ContinuousClock.Instant, wakeWanted: Bool)
        /// The partitions are paused until the buffer is down to half; `pauseAssigned`: partitions assigned
        /// since are paused before the next poll.
        case paused(pauseAssigned: Bool)
    }

    /// Where the shutdown stands; each phase follows the one before, once.
    enum Phase: Equatable {
        case running
        /// Asked to stop: the poll thread ends at its next step, the lanes still take what is buffered.
        case stopping
        /// The poll thread has ended, so nothing more is buffered: a lane exits once its buffer is empty.
        case draining(lanesRunning: Int)
    }

    /// What a lane backing off after a failed batch does next.
    enum BackoffStep: Equatable {
        /// Sleep until the deadline, or until woken (a stop wakes every waiter).
        case wait(until: ContinuousClock.Instant)
        /// The backoff is over: run the batch again.
        case retry
        /// The worker is stopping: give the batch up.
        case giveUp
    }

    /// What the shutdown, waiting for the intake to drain, does next.
    enum DrainStep: Equatable {
        case wait
        case drained
    }

    /// What a lane does next.
    enum LaneStep {
        case process([KafkaMessage], then: [Action])
        case wait
        case exit
    }

    /// One partition's offsets and jobs in batches.
    private struct Ledger {
        /// Offsets received and not yet finished, in arrival order, from `pendingStart` on.
        var pending: [Int64] = []
        var pendingStart = 0
        var finished: Set<Int64> = []
        /// The next offset to consume after the finished prefix; nil until a first message finishes.
        var committable: Int64?
        /// The last value handed out to be stored.
        var stored: Int64?
        /// Messages taken into a batch and not yet finished or abandoned. Kept across a revocation: the
        /// batch still ends, and the buffer bound counts it until then.
        var inBatch = 0

        var inFlight: Int { pending.count - pendingStart }

        /// An offset not pending (finished already, or received before a revocation) changes nothing.
        mutating func finish(_ offset: Int64) {
            guard isPending(offset) else { return }
            finished.insert(offset)
            while pendingStart < pending.count, finished.remove(pending[pendingStart]) != nil {
                // Saturating: an offset is the broker's word, and Int64.max must not trap the worker.
                let (next, overflow) = pending[pendingStart].addingReportingOverflow(1)
                committable = overflow ? .max : next
                pendingStart += 1
            }
            if pendingStart > 1024 && pendingStart * 2 > pending.count {
                pending.removeFirst(pendingStart)
                pendingStart = 0
            }
        }

        /// Offsets arrive in increasing order, so a binary search finds them; a miss (a finish from before a
        /// revocation, or a broker that went back) is confirmed by a scan, so nothing pending is ignored.
        func isPending(_ offset: Int64) -> Bool {
            var (low, high) = (pendingStart, pending.count)
            while low < high {
                let middle = low + (high - low) / 2
                if pending[middle] < offset { low = middle + 1 } else { high = middle }
            }
            return low < pending.count && pending[low] == offset || pending[pendingStart...].contains(offset)
        }

        /// Forgets the offsets (revoked: the next owner redelivers what did not finish).
        mutating func forgetOffsets() { self = Ledger(inBatch: inBatch) }
    }

    let bounds: IntakeBounds
    /// How long the buffer may stay full before the partitions are paused.
    let pauseAfter: Duration
    private var ledgers: [TopicPartition: Ledger] = [:]
    /// Per lane: messages not yet taken, from `bufferStarts[lane]` on.
    private var buffers: [[KafkaMessage]]
    private var bufferStarts: [Int]
    /// `retainedBytes` of the buffered messages.
    private var bufferedBytes = 0
    /// Messages in batches (the ledgers' `inBatch` summed) and their `retainedBytes`.
    private var unacknowledged = 0
    private var unacknowledgedBytes = 0
    private var assignedPartitions: Set<TopicPartition> = []
    /// The lane of each assigned partition, and of a revoked one whose batch may not have ended (so that,
    /// assigned again, its jobs still queue behind that batch).
    private var lanes: [TopicPartition: Int] = [:]
    private var revokingPartitions: Set<TopicPartition> = []
    /// The partitions whose revocation waits for their jobs in batches: from ``revoking(_:)`` to
    /// ``revoked(_:)``. (`revokingPartitions` outlasts that: what is polled for them is dropped until they
    /// are assigned again.)
    private var awaitedRevocations: Set<TopicPartition> = []
    private(set) var flow = Flow.flowing
    private(set) var phase = Phase.running

    init(lanes: Int, bounds: IntakeBounds, pauseAfter: Duration) {
        precondition(lanes > 0, "at least one lane")
        self.bounds = bounds
        self.pauseAfter = pauseAfter
        buffers = Array(repeating: [], count: lanes)
        bufferStarts = Array(repeating: 0, count: lanes)
    }

    // MARK: Poll thread

    /// Before each poll: stop once stopping, else pause what was assigned while paused.
    mutating func nextPoll() -> PollStep {
        guard phase == .running else { return .stop }
        guard case .paused(pauseAssigned: true) = flow else { return .poll(then: []) }
        flow = .paused(pauseAssigned: false)
        return .poll(then: assignedPartitions.isEmpty ? [] : [.pause(sorted(assignedPartitions))])
    }

    /// While the buffer is full, the poll thread waits for acknowledgements to make room for a batch, up
    /// to `pauseAfter`: lanes that freed nothing for that long have stopped (PostgreSQL down, say), and
    /// then the partitions are paused and the room is 0 (polling goes on for the group's sake and serves
    /// events only). Until then librdkafka's bounded prefetch holds what follows, which pausing would
    /// discard.
    mutating func pollRoom(now: ContinuousClock.Instant) -> PollRoom {
        if isPaused { return .room(0, then: []) }
        guard phase == .running && bounds.isFull(messages: count, bytes: bytes) else {
            flow = .flowing
            return .room(bounds.room(messages: count, bytes: bytes), then: [])
        }
        let since = if case .full(let since, _) = flow { since } else { now }
        let deadline = since + pauseAfter
        guard now >= deadline else {
            flow = .full(since: since, wakeWanted: true)
            return .wait(until: deadline)
        }
        flow = .paused(pauseAssigned: false)
        return .room(0, then: assignedPartitions.isEmpty ? [] : [.pause(sorted(assignedPartitions))])
    }

    /// A poll's messages, buffered for their lanes; those of partitions being revoked are dropped (the
    /// next owner gets them).
    mutating func received(_ messages: [KafkaMessage]) -> [Action] {
        precondition(!isDraining, "a poll after the poll thread ended")
        guard !messages.isEmpty else { return [] }
        for message in messages where !revokingPartitions.contains(message.topicPartition) {
            ledgers[message.topicPartition, default: Ledger()].pending.append(message.offset)
            buffers[laneTaking(message.topicPartition)].append(message)
            bufferedBytes += message.retainedBytes
        }
        return [.wakeWaiters]
    }

    mutating func pollStopped() -> [Action] {
        precondition(phase == .stopping, "the poll thread ended while \(phase)")
        phase = .draining(lanesRunning: buffers.count)
        return [.wakeWaiters]
    }

    // MARK: Lanes

    /// The lane serving a partition, fixed while it is assigned so that its jobs stay in order; nil before
    /// its assignment.
    func lane(of partition: TopicPartition) -> Int? { lanes[partition] }

    /// A partition's lane, chosen at its assignment (or its first message, if that came first): the lane
    /// serving the fewest assigned partitions, its number mod the lanes when that one is among them. By
    /// number alone, an assignor that hands a worker every other partition (round-robin, sticky) would put
    /// them all on one lane and leave the others idle.
    private mutating func laneTaking(_ partition: TopicPartition) -> Int {
        if let lane = lanes[partition] { return lane }
        var load = [Int](repeating: 0, count: buffers.count)
        for assigned in assignedPartitions { if let lane = lanes[assigned] { load[lane] += 1 } }
        let preferred = Int(partition.partition.magnitude % UInt32(buffers.count))
        let fewest = load.min()!
        let lane = load[preferred] == fewest ? preferred : load.firstIndex(of: fewest)!
        lanes[partition] = lane
        return lane
    }

    /// Up to `bounds.batchSize` of the lane's buffered messages; exit once stopping and drained.
    mutating func takeBatch(lane: Int) -> LaneStep {
        let start = bufferStarts[lane]
        guard buffers[lane].count > start else { return isDraining ? .exit : .wait }
        let end = min(buffers[lane].count, start + bounds.batchSize)
        let batch = Array(buffers[lane][start..<end])
        bufferStarts[lane] = end
        if end > 4096 && end * 2 > buffers[lane].count {
            buffers[lane].removeFirst(end)
            bufferStarts[lane] = 0
        }
        let batchBytes = batch.reduce(0) { $0 + $1.retainedBytes }
        for message in batch { ledgers[message.topicPartition, default: Ledger()].inBatch += 1 }
        unacknowledged += batch.count
        bufferedBytes -= batchBytes
        unacknowledgedBytes += batchBytes
        return .process(batch, then: resumeIfHalf())
    }

    /// The broker acknowledged what was published for this offset: it finishes, the finished prefix is
    /// stored, and the room it frees may resume the partitions or wake the poll thread (once there is
    /// room for a batch, not for every acknowledgement). The waiters are woken only while one of them waits
    /// for acknowledgements (``awaitsAcknowledgements``).
    mutating func finished(_ partition: TopicPartition, offset: Int64, retainedBytes: Int) -> [Action] {
        ledgers[partition]?.finish(offset)
        leaveBatch(partition, count: 1, bytes: retainedBytes)
        var actions: [Action] = awaitsAcknowledgements ? [.wakeWaiters] : []
        if case .full(let since, wakeWanted: true) = flow, bounds.wakes(messages: count, bytes: bytes) {
            flow = .full(since: since, wakeWanted: false)
            actions.append(.wakePoller)
        }
        actions += resumeIfHalf()
        if let next = takeCommittable(partition) { actions.append(.storeOffsets([partition: next])) }
        return actions
    }

    /// The outbound messages of a decided batch hold `bytes` more until their offsets finish (``Outbound``'s
    /// charge): counted with the unacknowledged bytes, so the byte bound covers what is published too, and
    /// released by ``finished(_:offset:retainedBytes:)``.
    mutating func charged(_ bytes: Int) -> [Action] {
        unacknowledgedBytes += max(0, bytes)
        return []
    }

    /// A batch given up at shutdown: no longer in flight, its offsets unfinished (the next owner
    /// redelivers).
    mutating func abandoned(_ batch: [KafkaMessage]) -> [Action] {
        for message in batch { leaveBatch(message.topicPartition, count: 1, bytes: message.retainedBytes) }
        return [.wakeWaiters]
    }

    mutating func laneStopped() -> [Action] {
        guard case .draining(let lanesRunning) = phase, lanesRunning > 0 else {
            preconditionFailure("a lane ended while \(phase)")
        }
        phase = .draining(lanesRunning: lanesRunning - 1)
        return [.wakeWaiters]
    }

    private mutating func leaveBatch(_ partition: TopicPartition, count: Int, bytes: Int) {
        if let inBatch = ledgers[partition]?.inBatch {
            ledgers[partition]!.inBatch = max(0, inBatch - count)
        }
        unacknowledged = max(0, unacknowledged - count)
        unacknowledgedBytes = max(0, unacknowledgedBytes - bytes)
    }

    /// Once paused and the buffered plus unacknowledged jobs are down to half the limit, unpauses.
    /// Checked both when a batch is taken and when a job is acknowledged: the jobs in flight may be what
    /// keeps the count high after the buffers have emptied, and then only an acknowledgement can bring
    /// it down.
    private mutating func resumeIfHalf() -> [Action] {
        guard isPaused && bounds.resumes(messages: count, bytes: bytes) else { return [] }
        flow = .flowing
        return assignedPartitions.isEmpty ? [] : [.resume(sorted(assignedPartitions))]
    }

    // MARK: Rebalance

    mutating func assigned(_ partitions: [TopicPartition]) {
        assignedPartitions.formUnion(partitions)
        for partition in sorted(Set(partitions)) { _ = laneTaking(partition) }
        revokingPartitions.subtract(partitions)
        if isPaused { flow = .paused(pauseAssigned: true) }
    }

    /// First step of a revocation: the partitions' buffered messages are dropped (the next owner gets
    /// them) and what they poll from now on is; their jobs in batches are waited for (`hasInBatch`).
    mutating func revoking(_ partitions: [TopicPartition]) {
        let set = Set(partitions)
        revokingPartitions.formUnion(set)
        awaitedRevocations.formUnion(set)
        for lane in buffers.indices {
            buffers[lane] = buffers[lane][bufferStarts[lane]...].filter { !set.contains($0.topicPartition) }
            bufferStarts[lane] = 0
        }
        bufferedBytes = buffers.reduce(0) { $0 + $1.reduce(0) { $0 + $1.retainedBytes } }
    }

    /// While revoking: wait as long as the partitions have jobs in batches and `timedOut` is false, then revoke.
    mutating func revocation(of partitions: [TopicPartition], timedOut: Bool) -> RevokeStep {
        let drained = !hasInBatch(partitions)
        guard drained || timedOut else { return .wait }
        return .revoked(drained: drained, then: revoked(partitions))
    }

    func hasInBatch(_ partitions: [TopicPartition]) -> Bool {
        partitions.contains { (ledgers[$0]?.inBatch ?? 0) > 0 }
    }

    /// Last step of a revocation: the finished prefixes are stored (the consumer commits them before
    /// giving the partitions up), then the partitions' offsets are forgotten.
    mutating func revoked(_ partitions: [TopicPartition]) -> [Action] {
        awaitedRevocations.subtract(partitions)
        let offsets = takeCommittable()
        for partition in partitions {
            if ledgers[partition]?.inBatch ?? 0 > 0 {
                ledgers[partition]!.forgetOffsets()
            } else {
                ledgers[partition] = nil
                lanes[partition] = nil
            }
            assignedPartitions.remove(partition)
        }
        return offsets.isEmpty ? [] : [.storeOffsets(offsets)]
    }

    // MARK: Shutdown

    mutating func stop() -> [Action] {
        precondition(phase == .running, "a second stop")
        phase = .stopping
        return [.wakeWaiters, .wakePoller]
    }

    /// A lane's backoff until `deadline`, at `now`: the stop cuts it short.
    func backoff(until deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) -> BackoffStep {
        if phase != .running { return .giveUp }
        return now < deadline ? .wait(until: deadline) : .retry
    }

    /// Drained once polling and the lanes have stopped and every job taken is acknowledged or abandoned.
    func drainStep() -> DrainStep {
        phase == .draining(lanesRunning: 0) && unacknowledged == 0 ? .drained : .wait
    }

    private var isDraining: Bool {
        if case .draining = phase { true } else { false }
    }

    /// Whether a thread may be waiting for jobs to finish: a revocation for its partitions' batches, or the
    /// shutdown for every job taken. The lanes wait for messages, not for acknowledgements: woken for every
    /// verdict the broker acknowledged, an idle lane woke and slept again for nothing (at 1,000 jobs/s the
    /// lanes' waiting took 1.93% of the worker's samples, 0.77% once only those waiters were woken).
    private var awaitsAcknowledgements: Bool {
        !awaitedRevocations.isEmpty || phase != .running
    }

    /// The final offsets, stored before the last commit.
    mutating func finalOffsets() -> [Action] {
        let offsets = takeCommittable()
        return offsets.isEmpty ? [] : [.storeOffsets(offsets)]
    }

    // MARK: Accounting

    /// Messages received and not finished, all partitions.
    var inFlight: Int { ledgers.values.reduce(0) { $0 + $1.inFlight } }

    /// Buffered plus unacknowledged messages: what the buffer limit bounds.
    var count: Int { zip(buffers, bufferStarts).reduce(0) { $0 + $1.0.count - $1.1 } + unacknowledged }
    /// The same in bytes.
    var bytes: Int { bufferedBytes + unacknowledgedBytes }
    var isPaused: Bool {
        if case .paused = flow { true } else { false }
    }

    /// `partition`'s committable offset when it moved since it was last handed out. An acknowledgement
    /// moves only its own partition's, so it looks at that one, not at every partition the worker holds:
    /// each verdict's delivery report comes here.
    private mutating func takeCommittable(_ partition: TopicPartition) -> Int64? {
        guard let ledger = ledgers[partition], let next = ledger.committable, next != ledger.stored else { return nil }
        ledgers[partition]!.stored = next
        return next
    }

    /// Per partition, the next offset after the finished prefix, when it moved since it was last taken.
    private mutating func takeCommittable() -> [TopicPartition: Int64] {
        var result = [TopicPartition: Int64]()
        for partition in Array(ledgers.keys) {
            if let next = takeCommittable(partition) { result[partition] = next }
        }
        return result
    }

    /// Assignment order is a set's; sorted so actions compare and log the same every time.
    private func sorted(_ partitions: Set<TopicPartition>) -> [TopicPartition] {
        partitions.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
    }
}
