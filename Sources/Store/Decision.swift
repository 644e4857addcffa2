import AttestCore
import AttestJobs

/// One decided job as it is written: the verdict row and the device change the verdict implies. Written
/// together, in one transaction with the rest of its batch.
public struct Decision: Sendable {
    /// What an accepted verdict changes in `devices`.
    public enum DeviceChange: Sendable {
        /// A rejection, or a verdict that changes nothing.
        case none
        /// An accepted attestation: insert the device, or refresh it on re-attestation of the same key (the
        /// counter never moves back).
        case attested(AttestedDevice)
        /// An accepted assertion: the counter moves to `counter` only if it is above the stored one.
        case advanced(keyId: [UInt8], counter: UInt32)
        /// An accepted Android assertion: the device's assertion count and last use move; it has no counter
        /// (its challenge is its freshness), so nothing can conflict.
        case used(keyId: [UInt8])
    }

    public struct AttestedDevice: Sendable {
        public var keyId: [UInt8]
        public var teamId: String
        public var bundleId: String
        public var publicKey: [UInt8]
        public var environment: String
        /// App Attest's receipt; nil for an Android key.
        public var receipt: [UInt8]?
        /// The device's id (the job's, or the one its identity was given); nil: keep the stored one or
        /// generate a UUID.
        public var deviceId: String?
        public var metadata: [String: String]

        public init(
            keyId: [UInt8], teamId: String, bundleId: String, publicKey: [UInt8], environment: String, receipt: [UInt8]?, deviceId: String?,
            metadata: [String: String]
        ) {
            self.keyId = keyId
            self.teamId = teamId
            self.bundleId = bundleId
            self.publicKey = publicKey
            self.environment = environment
            self.receipt = receipt
            self.deviceId = deviceId
            self.metadata = metadata
        }
    }

    /// Where the job came from, stored for support.
    public struct Source: Sendable {
        public var topic: String
        public var partition: Int32
        public var offset: Int64

        public init(topic: String, partition: Int32, offset: Int64) {
            self.topic = topic
            self.partition = partition
            self.offset = offset
        }
    }

    public var jobId: String
    /// The verdict's scope: the job's pair, or ``AppIdentity/none`` when it names no valid one.
    public var app: AppIdentity
    public var kind: String?
    public var keyId: String?
    public var ok: Bool
    public var code: String?
    public var reason: String?
    /// Exactly what is published; republished unchanged on redelivery.
    public var verdictJSON: String
    public var receivedAt: Timestamp?
    public var decidedAt: Timestamp
    public var source: Source?
    public var change: DeviceChange
    /// The month's count and the device's risk (jobs that could be read); its category is the verdict's.
    public var intelligence: IntelligenceChange?
    /// SHA-256 of the job message, stored so a later message reusing the jobId is recognised.
    public var jobDigest: [UInt8]? = nil
    /// The time the verdict's partition is chosen by (migration 0011), the same for every redelivery of the
    /// job so that its primary key meets them: the job's receivedAt when within the time bounds; nil, the
    /// decision's time (a job without a usable receivedAt, whose rejection changes nothing).
    public var partitionAt: Timestamp? = nil

    public init(
        jobId: String, app: AppIdentity, kind: String?, keyId: String?, ok: Bool, code: String?, reason: String?, verdictJSON: String,
        receivedAt: Timestamp?, decidedAt: Timestamp, source: Source?, change: DeviceChange, intelligence: IntelligenceChange?,
        jobDigest: [UInt8]? = nil, partitionAt: Timestamp? = nil
    ) {
        self.jobId = jobId
        self.app = app
        self.kind = kind
        self.keyId = keyId
        self.ok = ok
        self.code = code
        self.reason = reason
        self.verdictJSON = verdictJSON
        self.receivedAt = receivedAt
        self.decidedAt = decidedAt
        self.source = source
        self.change = change
        self.intelligence = intelligence
        self.jobDigest = jobDigest
        self.partitionAt = partitionAt
    }

    /// The partition time the verdict is stored under.
    var storedPartitionAt: Timestamp { partitionAt ?? decidedAt }

    /// A decision's `partitionAt`: its job's receivedAt when the job's time bounds admit it at `decidedAt`
    /// (the receivedAt check passed), else nil.
    public static func partitionTime(receivedAt: Timestamp?, decidedAt: Timestamp, bounds: JobVerifier.TimeBounds) -> Timestamp? {
        guard let receivedAt else { return nil }
        let (received, now) = (Int128(receivedAt.microseconds), Int128(decidedAt.microseconds))
        guard received >= now - Int128(bounds.maxAgeSeconds) * 1_000_000,
            received <= now + Int128(bounds.maxFutureSkewSeconds) * 1_000_000
        else { return nil }
        return receivedAt
    }

    /// The device an accepted attestation brings; nil for every other decision.
    var attestedDevice: AttestedDevice? {
        if case .attested(let device) = change { device } else { nil }
    }
}

/// What happened to a decision in the database.
public enum CommitOutcome: Sendable, Equatable {
    /// Stored as decided.
    case stored
    /// The jobId had already been decided in the app (by this or another worker): the stored verdict is
    /// this job's answer if its digest is this job's, else the jobId was reused.
    case alreadyDecided(StoredVerdict)
    /// The counter had already reached this assertion's: decide again against the stored state.
    case counterConflict
}
