import AppleReceipts
import AttestCore
import AttestCrypto
import AttestMint
import AttestVerifier
import Foundation
import Testing

/// Fixed DeviceCheck keys for the stand-in tests (`openssl ecparam -name prime256v1 -genkey -noout | openssl
/// pkcs8 -topk8 -nocrypt`): the team's, and one the stand-in does not know under the same kid.
enum StandInKeys {
    static let team = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgod7Fb3cVnG54rwbN
        BZxUi9eLNDTg9x/GC8gimfWGvDWhRANCAARGsPcormhMrLmahOX0wrkAFjSHIeEp
        FPFeGgSz9I2kPugjKS1c2yZQwE3SsShuJWRwbqSUZHMr+qYIVSGZINt8
        -----END PRIVATE KEY-----
        """
    static let stranger = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1/UcIbSJ0d2/jNpd
        JylkTLJjHITn7+wmuSqb1E1otp2hRANCAAR058tKfB9JFriu2lkSw1cfrZ3wreS6
        30yC1liXSUFFxN4g9M9x8D0wLfTi9Kp1P2t2RCE4drFTT5fNUulDGMTx
        -----END PRIVATE KEY-----
        """
}

/// A clock standing `offset` seconds away from the system's.
struct OffsetClock: Clock {
    let offset: Int64
    func now() -> Timestamp { SystemClock().now().adding(seconds: offset) }
}

extension LiveStack {
    /// The libcurl client against `attest-bench apple-stand-in` started as a process: every scripted answer
    /// of Apple's endpoint, and the stand-in's own checks of the DeviceCheck JWT.
    @Suite("Receipt refresh client against the Apple stand-in")
    struct AppleStandInIntegrationTests {
        static let team = "TEAMSTAND1"
        static let other = "OTHERSTAND"
        static let keyId = "KEYSTAND01"
        static let otherKeyId = "KEYSTAND02"
        static let bundle = "com.example.standin"

        let pki: TestPKI
        let anchor: TrustAnchor

        init() throws {
            let now = Date()
            pki = try TestPKI.generate(validFrom: now.addingTimeInterval(-30 * 86_400), validUntil: now.addingTimeInterval(365 * 86_400))
            anchor = try TrustAnchor(der: pki.receiptRootDER)
        }

        /// A freshly attested device of `team`'s app: its refresh request and its keyId as the script names it.
        func device(team: String = team, environment: AttestationOptions.Environment = .production) throws -> (ReceiptRefreshRequest, String) {
            let device = try Device()
            let attestation = try pki.mintAttestation(
                device: device, teamId: team, bundleId: Self.bundle, clientDataHash: Array(repeating: 1, count: 32),
                at: Date().addingTimeInterval(-3600), options: AttestationOptions(environment: environment))
            let request = ReceiptRefreshRequest(
                teamId: team, bundleId: Self.bundle, environment: environment == .production ? .production : .development,
                receipt: try #require(attestation.receipt), attestedKey: device.publicKeyX962)
            return (request, Base64.encode(device.keyId))
        }

        func client(_ standIn: AppleStandInProcess, keys: [(String, String, String)], clock: any Clock = SystemClock(), timeout: Duration = .seconds(1)) throws -> AttestationDataClient {
            var loaded = [String: DeviceCheckKey]()
            for (team, keyId, pem) in keys {
                loaded[team] = DeviceCheckKey(teamId: team, keyId: keyId, privateKey: try ECPrivateKey(pem: pem))
            }
            return AttestationDataClient(
                settings: ReceiptRefreshSettings(
                    keys: loaded, productionURL: standIn.url("/v1/attestationData"),
                    developmentURL: standIn.url("/development/v1/attestationData"), connectTimeout: .seconds(1), requestTimeout: timeout),
                receiptAnchor: anchor, skewSeconds: 60, clock: clock)
        }

        @Test("Every scripted answer, in order, for one device: rising metrics, 304, 404, 429 with Retry-After, 500, forged, not base64, too slow")
        func scriptedAnswers() throws {
            let (request, keyId) = try device()
            let script = """
                {"devices": {"\(keyId)": [
                  {"riskMetric": 1}, {"riskMetric": 4}, {"riskMetric": 9, "notBeforeSeconds": 7200},
                  {"status": 304}, {"status": 404}, {"status": 429, "retryAfter": "7"}, {"status": 500},
                  {"forged": true, "riskMetric": 1}, {"body": "this is not base64!"}, {"delaySeconds": 3}
                ]}}
                """
            let standIn = try AppleStandInProcess(pki: pki, keys: [(Self.team, Self.keyId, StandInKeys.team)], script: script)
            let client = try client(standIn, keys: [(Self.team, Self.keyId, StandInKeys.team)])
            let now = { SystemClock().now() }

            var metrics = [Int?]()
            for _ in 0..<3 {
                guard case .refreshed(let receipt) = client.refresh(request, now: now()) else {
                    Issue.record("a scripted 200 was not refreshed")
                    return
                }
                metrics.append(receipt.riskMetric)
                let creation = receipt.creationTime.seconds
                #expect(abs(creation - now().seconds) < 60)
                let expiry = try #require(receipt.expirationTime).seconds, notBefore = try #require(receipt.notBefore).seconds
                #expect(expiry - creation == Int64(30 * 86_400))
                #expect(notBefore - creation == (metrics.count == 3 ? 7200 : 86_400))
            }
            #expect(metrics == [1, 4, 9])
            #expect(client.refresh(request, now: now()) == .notModified)
            #expect(client.refresh(request, now: now()) == .noData)
            #expect(client.refresh(request, now: now()) == .retryLater(retryAfter: .seconds(7), reason: "rate limited (429)"))
            #expect(client.refresh(request, now: now()) == .retryLater(retryAfter: nil, reason: "server error (500)"))
            guard case .rejected(let forged) = client.refresh(request, now: now()) else { Issue.record("forged not rejected"); return }
            #expect(forged.contains("receipt_invalid"))
            guard case .rejected = client.refresh(request, now: now()) else { Issue.record("not base64 not rejected"); return }
            let start = ContinuousClock.now
            guard case .retryLater(nil, let slow) = client.refresh(request, now: now()) else { Issue.record("slow not retryLater"); return }
            #expect(ContinuousClock.now - start < .milliseconds(2500), "\(slow)")

            let counts = try standIn.requests()
            #expect(counts[keyId]?.requests == 10)
            #expect(counts[keyId]?.maxConcurrent == 1)
        }

        @Test("The stand-in checks the JWT: an unknown key under the kid, a token older than allowed, are 401 (misconfigured); a development device uses the development URL")
        func tokenChecks() throws {
            let (request, keyId) = try device()
            let standIn = try AppleStandInProcess(
                pki: pki, keys: [(Self.team, Self.keyId, StandInKeys.team)], script: "{\"default\": [{\"riskMetric\": 2}]}", maxTokenAge: 600)
            let stranger = try client(standIn, keys: [(Self.team, Self.keyId, StandInKeys.stranger)])
            #expect(stranger.refresh(request, now: SystemClock().now()).isMisconfigured(401))
            let unknownKid = try client(standIn, keys: [(Self.team, "UNKNOWNKID", StandInKeys.team)])
            #expect(unknownKid.refresh(request, now: SystemClock().now()).isMisconfigured(401))
            // A clock 20 minutes behind signs an iat the stand-in (600 s) finds too old.
            let late = try client(standIn, keys: [(Self.team, Self.keyId, StandInKeys.team)], clock: OffsetClock(offset: -1200))
            #expect(late.refresh(request, now: SystemClock().now()).isMisconfigured(401))
            #expect(try standIn.requests()[keyId] == nil)

            let good = try client(standIn, keys: [(Self.team, Self.keyId, StandInKeys.team)])
            guard case .refreshed(let receipt) = good.refresh(request, now: SystemClock().now()) else { Issue.record("not refreshed"); return }
            #expect(receipt.riskMetric == 2)
            let (development, _) = try device(environment: .development)
            guard case .refreshed = good.refresh(development, now: SystemClock().now()) else { Issue.record("development not refreshed"); return }
        }

        @Test("A receipt of another team's app is 403, a body that is no receipt 400: both misconfigured, never retried hot")
        func refusedRequests() throws {
            let (request, _) = try device()
            let standIn = try AppleStandInProcess(
                pki: pki, keys: [(Self.team, Self.keyId, StandInKeys.team), (Self.other, Self.otherKeyId, StandInKeys.stranger)],
                script: "{}")
            let client = try client(standIn, keys: [(Self.team, Self.keyId, StandInKeys.team), (Self.other, Self.otherKeyId, StandInKeys.stranger)])
            var foreign = request
            foreign.teamId = Self.other
            #expect(client.refresh(foreign, now: SystemClock().now()).isMisconfigured(403))
            var garbage = request
            garbage.receipt = Array("no receipt".utf8)
            #expect(client.refresh(garbage, now: SystemClock().now()).isMisconfigured(400))
        }
    }
}

extension ReceiptRefreshOutcome {
    func isMisconfigured(_ status: Int) -> Bool {
        if case .misconfigured(status, _) = self { return true }
        return false
    }
}
