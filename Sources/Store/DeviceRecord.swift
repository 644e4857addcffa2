import AttestCore

/// A device as stored: the attested key, the last accepted counter, and whether an operator revoked the key.
public struct DeviceRecord: Sendable, Equatable {
    public var keyId: [UInt8]
    public var teamId: String
    public var bundleId: String
    /// App Attest: the X9.62 uncompressed point; Android: the key's SubjectPublicKeyInfo DER.
    public var publicKey: [UInt8]
    public var counter: UInt32
    /// App Attest's environment (`production`, `development`), or ``androidEnvironment``.
    public var environment: String
    public var deviceId: String
    public var fingerprint: String?
    /// When `attest-worker device revoke` revoked the key; nil: not revoked.
    public var revokedAt: Timestamp?

    /// The environment of every Android key: Google's roots have no development twin.
    public static let androidEnvironment = "android"

    public var isAndroid: Bool { environment == Self.androidEnvironment }

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
