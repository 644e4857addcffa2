import AttestCore
import AttestJobs
import PostgresClient

/// A device leased for a refresh (or named by `attest-worker receipt refresh`): its refresh state's
/// attempts and the device columns the request and the planner need. The device columns are nil when the
/// device row is gone (the refresh state outlived it).
public struct ClaimedRefresh: Sendable, Equatable {
    public var keyId: [UInt8]
    public var attempts: Int
    public var teamId: String?
    public var bundleId: String?
    public var environment: String?
    public var receipt: [UInt8]?
    public var publicKey: [UInt8]?
    public var deviceId: String?
    public var fingerprint: String?
    public var lastSeenAt: Timestamp?
    public var revoked: Bool

    public init(
        keyId: [UInt8], attempts: Int, teamId: String?, bundleId: String?, environment: String?, receipt: [UInt8]?,
        publicKey: [UInt8]?, deviceId: String?, fingerprint: String?, lastSeenAt: Timestamp?, revoked: Bool
    ) {
        self.keyId = keyId
        self.attempts = attempts
        self.teamId = teamId
        self.bundleId = bundleId
        self.environment = environment
        self.receipt = receipt
        self.publicKey = publicKey
        self.deviceId = deviceId
        self.fingerprint = fingerprint
        self.lastSeenAt = lastSeenAt
        self.revoked = revoked
    }

    /// The device's app and identity in the risk tables (``DeviceIdentity``'s rule for a stored key).
    var appDevice: AppDevice? {
        guard let teamId, let bundleId else { return nil }
        let identity = fingerprint.map { DeviceIdentity(fingerprint: $0) } ?? DeviceIdentity(stored: "key:" + Hex.encode(keyId))
        return AppDevice(teamId: teamId, bundleId: bundleId, identity: identity)
    }

    /// The stored receipt's not-before (field 19), read without verifying: it was verified when stored,
    /// and it only decides when to ask Apple. Nil when absent or unreadable (then Apple is asked).
    public var storedNotBefore: Timestamp? {
        guard let receipt, let signed = try? SignedData(ber: receipt), let payload = try? ReceiptPayload(der: signed.content) else {
            return nil
        }
        return payload.text(.notBefore).flatMap { Timestamp(rfc3339: $0) }
    }
}

extension ClaimedRefresh: PGRowDecodable {
    public init(row: PGRow) throws(PGError) {
        let lastSeen: Int64? = try row.decode("last_seen_at_us")
        let revoked: Bool? = try row.decode("revoked")
        self.init(
            keyId: try row.decode("key_id"), attempts: try row.decode("attempts"), teamId: try row.decode("team_id"),
            bundleId: try row.decode("bundle_id"), environment: try row.decode("environment"), receipt: try row.decode("receipt"),
            publicKey: try row.decode("public_key"), deviceId: try row.decode("device_id"), fingerprint: try row.decode("fingerprint"),
            lastSeenAt: lastSeen.map(Timestamp.init(microseconds:)), revoked: revoked ?? false)
    }
}
