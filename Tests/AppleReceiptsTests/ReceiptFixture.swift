import AttestCore
import AttestCrypto
import AttestMint
import AttestVerifier
import Foundation
import Synchronization
@testable import AppleReceipts

/// One device of one app under a test PKI: its attestation receipt (the request) and refreshed receipts
/// minted as the stand-in of Apple's endpoint would answer.
struct ReceiptFixture: Sendable {
    static let teamId = "TEAM123456"
    static let bundleId = "com.example.app"
    static let appId = teamId + "." + bundleId
    static let created = Date(timeIntervalSince1970: 1_780_000_000)
    static let now = Timestamp(seconds: 1_780_000_000 + 3600)
    /// When the stand-in's refreshed receipts are created: a minute before `now`, inside Apple's five minutes.
    static let refreshedAt = Date(timeIntervalSince1970: 1_780_000_000 + 3600 - 60)
    /// ATTEST_MAX_FUTURE_SKEW's default.
    static let skewSeconds: Int64 = 60
    static let pki = try! TestPKI.generate(validFrom: created.addingTimeInterval(-86_400 * 365), validUntil: created.addingTimeInterval(86_400 * 365))
    static let otherPKI = try! TestPKI.generate(validFrom: created.addingTimeInterval(-86_400 * 365), validUntil: created.addingTimeInterval(86_400 * 365))
    static let anchor = try! TrustAnchor(der: pki.receiptRootDER)

    let device: Device
    let leaf: [UInt8]
    let request: ReceiptRefreshRequest

    init() throws {
        device = try Device()
        let attestation = try Self.pki.mintAttestation(
            device: device, teamId: Self.teamId, bundleId: Self.bundleId, clientDataHash: Array(repeating: 7, count: 32), at: Self.created)
        leaf = attestation.leafDER
        request = ReceiptRefreshRequest(
            teamId: Self.teamId, bundleId: Self.bundleId, environment: .production, receipt: attestation.receipt!,
            attestedKey: device.publicKeyX962)
    }

    /// A refreshed receipt for this device created at `at`: type RECEIPT, the metric, not-before a day after
    /// creation.
    func refreshed(
        _ options: ReceiptOptions = ReceiptOptions(type: "RECEIPT", riskMetric: 3, notBefore: refreshedAt.addingTimeInterval(86_400)),
        at: Date = refreshedAt
    ) throws -> [UInt8] {
        try Self.pki.mintReceipt(appId: Self.appId, credentialCertificate: leaf, environment: .production, at: at, options: options)
    }

    var created: Date { Self.created }

    static var verifier: ReceiptVerifier { ReceiptVerifier(anchor: anchor) }
}

/// Fixed P-256 DeviceCheck keys (`openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt`).
enum DeviceCheckKeys {
    static let team = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOiT/r52+g8arqh1P
        rAWZ/csuRc++VB2+13bUTDDtWH6hRANCAAT2NUQRrbre/2zGRvxxYdBqlyyW/d0U
        gQAocswI537LChA35o1jFpJb+KHBl3Dyqmuh9LN/yvU1y77DVRubNAWC
        -----END PRIVATE KEY-----
        """
    static let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDC7Gn+uU7HR13exhdBF
        ovHvxqEIuO13OynhzHgI8QmTRAL1Sj68TNBxDvu961H+GC+hZANiAAR7cgKSAaoO
        XVAzA5iZfAq4De+j63HAvafk3eA7/sFf2GbKQEwsvAIemN1qc2oJzI9kJHsi8wEh
        Zc6/7SNYchIm2pcWZnXbR8v5LfglTWb9CbnfhXVgoVU3lLE+3rIK8MQ=
        -----END PRIVATE KEY-----
        """

    /// `text` in a new file of this test process's folder; its path.
    static func write(_ text: String) throws -> String {
        let path = folder.appendingPathComponent("\(UUID().uuidString).p8").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// One folder for the process's key files, removed when it exits: runs leave nothing in the temporary
    /// folder.
    private static let folder: URL = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("devicecheck-\(getpid())")
        try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: DeviceCheckKeys.folder) }
        return folder
    }()
}

/// A clock a test moves.
final class SteppedClock: Clock {
    private let instant: Mutex<Timestamp>
    init(_ instant: Timestamp) { self.instant = Mutex(instant) }
    func now() -> Timestamp { instant.withLock { $0 } }
    func advance(seconds: Int64) { instant.withLock { $0 = $0.adding(seconds: seconds) } }
}
