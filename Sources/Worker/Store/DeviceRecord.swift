import AttestCore

/// A device as stored: the attested key, the last accepted counter, and whether an operator revoked the key.
public struct DeviceRecord: Sendable, Equatable {
    public var keyId: [UInt8]
    public var teamId: String
    public var bundleId: String
    /// X9.62 uncompressed point.
    public var publicKey: [UInt8]
    public var counter: UInt32
    public var environment: String
    public var deviceId: String
    public var fingerprint: String?
    /// When `attest-worker device revoke` revoked the key; nil: not revoked.
    public var revokedAt: Timestamp?

    public init(
        keyId: [UInt8], teamId: String, bundleId: String, publicKey: [UInt8], counter: UInt32, environment: String,
        deviceId: String, fingerprint: String?, revokedAt: Timestamp? = nil
    ) {
        self.revokedAt = revokedAt
        self.keyId = keyId
        self.teamId = teamId
        self.bundleId = bundleId
        self.publicKey = publicKey
        self.counter = counter
        self.environment = environment
        self.deviceId = deviceId
        self.fingerprint = fingerprint
    }
}
