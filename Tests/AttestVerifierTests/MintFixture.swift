import AttestCore
import AttestCrypto
import AttestMint
import AttestVerifier
import Foundation

/// One test PKI and a few devices shared by the negative catalogues, with helpers that mint a valid object,
/// apply one change and verify it.
enum MintFixture {
    static let teamId = "TEAM123456"
    static let bundleId = "com.example.catalogue"
    static let appId = teamId + "." + bundleId
    /// The attestation time (2026-04-24T03:06:40Z); the leaf is valid from a day before for three days.
    static let date = Date(timeIntervalSince1970: 1_777_000_000)
    static let time = Timestamp(seconds: 1_777_000_000)
    static let challenge = "catalogue-challenge-0001"
    static let clientDataHash = Digest.sha256.hash(Array(challenge.utf8))

    static let pki = try! TestPKI.generate(
        validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
    /// Same names as `pki`, other keys: what a forger who copies Apple's names would hold.
    static let otherPKI = try! TestPKI.generate(
        validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
    static let device = try! Device()
    static let otherDevice = try! Device()

    static let trust = TrustConfiguration(
        attestationAnchor: try! TrustAnchor(pem: pki.attestationRootPEM),
        receiptAnchor: try! TrustAnchor(pem: pki.receiptRootPEM))

    static func mint(_ options: AttestationOptions = AttestationOptions()) -> MintedAttestation {
        try! pki.mintAttestation(
            device: device, teamId: teamId, bundleId: bundleId, clientDataHash: clientDataHash, at: date,
            options: options)
    }

    static func request(
        _ object: [UInt8], keyId: [UInt8] = device.keyId, clientDataHash: [UInt8] = clientDataHash,
        challenge: String? = challenge
    ) -> AttestationRequest {
        AttestationRequest(
            teamId: teamId, bundleId: bundleId, keyId: Base64.encode(keyId), attestationObject: Base64.encode(object),
            clientDataHash: Base64.encode(clientDataHash), challenge: challenge)
    }

    static func verify(
        _ request: AttestationRequest, policy: EnvironmentPolicy = .production, at time: Timestamp = time,
        trust: TrustConfiguration = trust
    ) -> Result<VerifiedAttestation, VerificationFailure> {
        AttestationVerifier(trust: trust).verify(request, policy: policy, at: time)
    }

    /// Mints with `options` and verifies the untouched request.
    static func verify(_ options: AttestationOptions, policy: EnvironmentPolicy = .production, at time: Timestamp = time)
        -> Result<VerifiedAttestation, VerificationFailure>
    {
        verify(request(mint(options).attestationObject), policy: policy, at: time)
    }
}

extension Result where Failure == VerificationFailure {
    /// "code/reason" of a rejection, or "ok".
    var outcome: String {
        switch self {
        case .success: return "ok"
        case .failure(let failure): return "\(failure.code.rawValue)/\(failure.reason.rawValue)"
        }
    }
}
