import AttestCore
import AttestJobs
import PostgresClient

/// What `attest-worker device show|revoke` reads and writes: one device's row, and the operator's revocation
/// of its key (migration 0010), which every worker applies from its next batch (the worker's `DeviceCache`).
public enum DeviceAdministration {
    /// The operator's note on a revocation is at most this long (the column's bound).
    public static let maxReasonBytes = 512

    /// A device as `device show` prints it.
    public struct Shown: Sendable, Equatable {
        public let keyId: [UInt8]
        public let app: AppIdentity
        public let counter: Int64
        public let environment: String
        public let deviceId: String
        public let fingerprint: String?
        public let attestations: Int32
        public let assertions: Int64
        public let attestedAt: String
        public let lastSeenAt: String
        public let revokedAt: String?
        public let revokedReason: String?
        /// The risk state of the device's identity; nil before it was first scored.
        public let riskScore: Int32?
        public let riskCategory: String?

        /// `device show --json`.
        public var json: JSONValue {
            .object([
                ("keyId", .string(Base64.encode(keyId))), ("teamId", .string(app.teamId)), ("bundleId", .string(app.bundleId)),
                ("deviceId", .string(deviceId)), ("fingerprint", fingerprint.map(JSONValue.string) ?? .null),
                ("environment", .string(environment)), ("counter", .int(counter)),
                ("attestations", .int(Int64(attestations))), ("assertions", .int(assertions)),
                ("attestedAt", .string(attestedAt)), ("lastSeenAt", .string(lastSeenAt)),
                ("revokedAt", revokedAt.map(JSONValue.string) ?? .null), ("revokedReason", revokedReason.map(JSONValue.string) ?? .null),
                ("risk", riskScore.map { score in
                    .object([("score", .int(Int64(score))), ("category", riskCategory.map(JSONValue.string) ?? .null)])
                } ?? .null),
            ])
        }
    }

    /// The revocation's event, keyed by the device; one per key (a key is revoked once).
    static func revokedEvent(_ device: DeviceRecord, reason: String?, at: Timestamp) -> OutboxEvent {
        let identity = DeviceIdentity(record: device)
        return OutboxEvent(
            eventId: OutboxEvent.eventId(.deviceRevoked, [device.teamId, device.bundleId, Hex.encode(device.keyId)]),
            kind: .deviceRevoked,
            partitionKey: OutboxEvent.deviceKey(teamId: device.teamId, bundleId: device.bundleId, identity: identity.value),
            teamId: device.teamId, bundleId: device.bundleId, occurredAt: at,
            detail: [
                ("identity", .string(identity.value)), ("deviceId", .string(device.deviceId)),
                ("keyId", .string(Base64.encode(device.keyId))), ("reason", reason.map(JSONValue.string) ?? .null),
            ])
    }

    public enum RevokeOutcome: Sendable, Equatable {
        case revoked
        /// Revoked before, at this time: nothing changed.
        case alreadyRevoked(String)
        /// No such key stored for the app.
        case unknown
    }
}

extension AttestStore {
    /// The device stored under `keyId` (for `app` only, when given).
    public func device(keyId: [UInt8], app: AppIdentity?) throws(PGError) -> DeviceAdministration.Shown? {
        try connection.run { c throws(PGError) in try c.execute(DevicesTable.Show(keyId: keyId, app: app)) }
    }

    /// Revokes the app's key `keyId` at `at`, and writes its `device.revoked` event to the outbox in the same
    /// transaction (so the event exists exactly when the revocation does).
    public func revokeDevice(keyId: [UInt8], app: AppIdentity, reason: String?, at: Timestamp) throws(PGError)
        -> DeviceAdministration.RevokeOutcome
    {
        try connection.run { c throws(PGError) in
            try c.transaction { c throws(PGError) -> DeviceAdministration.RevokeOutcome in
                if let revoked = try c.execute(DevicesTable.Revoke(keyId: keyId, app: app, at: at, reason: reason)) {
                    try c.execute(EventsTable.Insert([DeviceAdministration.revokedEvent(revoked, reason: reason, at: at)]))
                    return .revoked
                }
                guard let shown = try c.execute(DevicesTable.Show(keyId: keyId, app: app)) else { return .unknown }
                return shown.revokedAt.map(DeviceAdministration.RevokeOutcome.alreadyRevoked) ?? .unknown
            }
        }
    }
}
