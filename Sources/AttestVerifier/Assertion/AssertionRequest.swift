import AttestCrypto

/// What a backend sends to have an assertion verified, with fields as they arrived (base64 text).
public struct AssertionRequest: Sendable {
    /// The client data as a job carries it: its SHA-256, or the raw bytes the worker hashes.
    public enum ClientData: Sendable {
        case hash(String)
        case raw(String)
    }

    public var teamId: String
    public var bundleId: String
    public var keyId: String
    public var assertion: String
    public var clientData: ClientData
    /// The challenge, when the job carries one; then the client data must bind it.
    public var challenge: String?

    public init(
        teamId: String, bundleId: String, keyId: String, assertion: String, clientData: ClientData,
        challenge: String? = nil
    ) {
        self.teamId = teamId
        self.bundleId = bundleId
        self.keyId = keyId
        self.assertion = assertion
        self.clientData = clientData
        self.challenge = challenge
    }
}

/// The device state an assertion is checked against: the attested key (parsed once and reusable) and
/// the last accepted counter.
public struct StoredDevice: Sendable {
    public var publicKey: ECPublicKey
    public var counter: UInt32

    public init(publicKey: ECPublicKey, counter: UInt32) {
        self.publicKey = publicKey
        self.counter = counter
    }
}
