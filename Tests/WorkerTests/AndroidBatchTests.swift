import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestTokens
import AttestVerifier
import DeviceIntelligence
import Foundation
import KafkaClient
import PostgresClient
import Store
import Testing
import Worker

/// Android jobs through the batch processor (CONTRACT 9), against the in-memory store: the app found by its
/// package, a key's attestation and requests in order, keys of one platform unknown to the other, single-use
/// challenges, and the stale status list's setting.
@Suite struct AndroidBatchTests {
    static let pki = try! AndroidTestPKI.generate(
        validFrom: Date(timeIntervalSince1970: 1_577_836_800), validUntil: Date(timeIntervalSince1970: 2_366_841_600))
    static let signer = Digest.sha256.hash(Array("signing certificate".utf8))
    static let package = "com.example.batch.android"
    static let app = AppIdentity(teamId: BatchProcessorTests.teamId, bundleId: BatchProcessorTests.bundleId)

    let store = FakeStore()
    var offset: Int64 = 0

    init() {
        var policy = AppPolicy(teamId: Self.app.teamId, bundleId: Self.app.bundleId)
        policy.android = AndroidPolicy(packageName: Self.package, signingCertificateDigests: [Self.signer])
        store.appPolicies[Self.app] = policy
    }

    func processor(androidStatus: AndroidStatusGate? = nil, tokenSigner: TokenSigner? = nil) -> BatchProcessor {
        BatchProcessor(
            verifier: JobVerifier(
                trust: BatchProcessorTests.trust, androidTrust: try! AndroidTrust(rootCertificatesPEM: Self.pki.rootPEM),
                clock: FixedClock(Timestamp(seconds: 1_777_000_000))),
            store: store, devices: DeviceCache(),
            settings: BatchProcessor.Settings(
                verdictsTopic: "verdicts", deadLetterTopic: "dead", tokenSigner: tokenSigner, androidStatus: androidStatus))
    }

    mutating func message(_ value: [UInt8]) -> KafkaMessage {
        offset += 1
        return KafkaMessage(topic: "jobs", partition: 0, offset: offset, key: nil, value: value, headers: [], timestampMs: nil)
    }

    static func attestation(_ key: AndroidDeviceKey, jobId: String, package: String = package, challenge: [UInt8]? = nil) -> [UInt8] {
        var options = AndroidAttestationOptions(challenge: challenge ?? Array(jobId.utf8), deviceKey: key, packageName: package)
        options.signingCertificateDigests = [signer]
        let minted = try! pki.mintAttestation(options: options)
        return Array(JSONValue.object([
            ("jobId", .string(jobId)), ("kind", .string("android_attestation")), ("packageName", .string(package)),
            ("certificateChain", .array(minted.certificateChain.map(JSONValue.string))), ("challenge", .string(minted.challenge)),
            ("receivedAt", .string("2026-04-24T03:06:40Z")),
        ]).serialized().utf8)
    }

    static func assertion(_ key: AndroidDeviceKey, jobId: String, keyId: String? = nil, challenge: String = "c2lnbmVk") -> [UInt8] {
        let clientData = Array("{\"challenge\":\"\(challenge)\"}".utf8)
        return Array(JSONValue.object([
            ("jobId", .string(jobId)), ("kind", .string("android_assertion")), ("packageName", .string(package)),
            ("keyId", .string(keyId ?? key.keyId)), ("signature", .string(Base64.encode(try! key.sign(message: clientData)))),
            ("clientData", .string(Base64.encode(clientData))), ("challenge", .string(challenge)),
            ("receivedAt", .string("2026-04-24T03:06:40Z")),
        ]).serialized().utf8)
    }

    func verdicts(_ outbound: [Outbound]) -> [JSONValue] { outbound.map { JSONValue.parse($0.value)! } }

    @Test mutating func anAttestationAndItsRequestsInOneBatchAreDecidedInOrderUnderTheRegisteredApp() throws {
        let key = try AndroidDeviceKey()
        let out = try processor().process([
            message(Self.attestation(key, jobId: "a-1")), message(Self.assertion(key, jobId: "s-1")),
            message(Self.assertion(key, jobId: "s-2")),
        ])
        let v = verdicts(out)
        #expect(v.map { $0["ok"] } == [.bool(true), .bool(true), .bool(true)], "\(v)")
        #expect(v[0]["keyId"] == .string(key.keyId) && v[0]["packageName"] == .string(Self.package))
        #expect(v.allSatisfy { $0["teamId"] == .string(Self.app.teamId) && $0["bundleId"] == .string(Self.app.bundleId) })
        let stored = try #require(store.devices[Base64.decode(key.keyId)!])
        #expect(stored.environment == "android" && stored.publicKey == key.subjectPublicKeyInfo && stored.counter == 0)
        #expect(store.uses[stored.keyId] == 2, "each accepted request counted on its device")
        #expect(store.verdicts.keys.allSatisfy { $0.app == Self.app })
        // The device counted once for the app's month, whatever its jobs.
        #expect(store.counted.count == 1)
        #expect(store.commits == 1)
    }

    @Test mutating func aKeyIsOnlyItsOwnPlatforms() throws {
        let key = try AndroidDeviceKey()
        let device = try Device()
        let p = processor()
        _ = try p.process([
            message(Self.attestation(key, jobId: "x-a")), message(BatchProcessorTests.attestationJob(device, jobId: "x-i")),
        ])
        // An Apple assertion naming the Android key, an Android request naming the Apple key (signed by the
        // Android key, so only the stored key's platform can turn it away).
        let out = try p.process([
            message(BatchProcessorTests.assertionJob(device, jobId: "x-1", counter: 1).replacing(
                Array(Base64.encode(device.keyId).utf8), with: Array(key.keyId.utf8))),
            message(Self.assertion(key, jobId: "x-2", keyId: Base64.encode(device.keyId))),
        ])
        #expect(verdicts(out).map { $0["reason"] } == [.string("unknown_key"), .string("unknown_key")], "\(verdicts(out))")
    }

    /// An app registered by its package alone is ("android", package) everywhere: its jobIds' scope, its
    /// counts, and its tokens' audience (what `POST /v1/tokens/consume` reads the app from).
    @Test mutating func anAppOfAPackageAloneIsNamedByIt() throws {
        let package = "com.example.only_android"
        let app = AppIdentity(androidPackage: package)
        var policy = AppPolicy(teamId: app.teamId, bundleId: app.bundleId)
        policy.android = AndroidPolicy(packageName: package, signingCertificateDigests: [Self.signer])
        store.appPolicies[app] = policy
        let signer = try TokenSigner(keys: [try ECPrivateKey(pem: TokenConsumeEndpointTests.signingKey)])
        let out = try processor(tokenSigner: signer).process([message(Self.attestation(try AndroidDeviceKey(), jobId: "p-1", package: package))])
        let verdict = verdicts(out)[0]
        #expect(verdict["ok"] == .bool(true) && verdict["teamId"] == .null && verdict["packageName"] == .string(package), "\(verdict)")
        let token = try #require(verdict["token"]?.stringValue)
        let payload = try #require(Base64.decode(String(token.split(separator: ".")[1])).flatMap { JSONValue.parse($0) })
        #expect(payload["aud"] == .string("android.\(package)"))
        #expect(store.verdicts.keys.first?.app == app)
        #expect(store.counted.keys.first?.month.teamId == "android")
    }

    @Test mutating func anUnregisteredPackageIsAnUnknownApp() throws {
        let out = try processor().process([message(Self.attestation(try AndroidDeviceKey(), jobId: "u-1", package: "com.example.nobody"))])
        #expect(verdicts(out)[0]["reason"] == .string("unknown_app"))
        #expect(store.verdicts.keys.first?.app == AppIdentity(androidPackage: "com.example.nobody"))
    }

    @Test mutating func aWorkerIssuedChallengeAcceptsARequestOnceAndRefusesItsReplay() throws {
        store.appPolicies[Self.app]?.challenges = .worker
        let issued = (0..<2).map { _ in try! SecureRandom.bytes(32) }
        for bytes in issued {
            store.challenges[bytes] = (Self.app.appId, Timestamp(seconds: 1_777_000_000 + 300), nil)
        }
        let key = try AndroidDeviceKey()
        let p = processor()
        let request = Self.assertion(key, jobId: "r-1", challenge: Base64.encode(issued[1]))
        let replay = request.replacing(Array("r-1".utf8), with: Array("r-2".utf8))
        let out = try p.process([
            message(Self.attestation(key, jobId: "r-a", challenge: issued[0])), message(request), message(replay), message(request),
        ])
        let v = verdicts(out)
        #expect(v[0]["ok"] == .bool(true) && v[1]["ok"] == .bool(true), "\(v)")
        #expect(v[2]["reason"] == .string("challenge_already_used"))
        #expect(out[3].value == out[1].value, "a redelivery answered with its verdict")
    }

    @Test mutating func aStaleStatusListRefusesAttestationsUnlessSetToWarn() throws {
        let lists = AndroidStatusLists()  // none loaded yet: stale
        let refused = try processor(androidStatus: AndroidStatusGate(lists: lists, maxAgeSeconds: 3600, whenStale: .refuse))
            .process([message(Self.attestation(try AndroidDeviceKey(), jobId: "l-1"))])
        #expect(verdicts(refused)[0]["reason"] == .string("status_list_stale"))
        #expect(verdicts(refused)[0]["code"] == .string("android_validation_failed"))
        let warned = try processor(androidStatus: AndroidStatusGate(lists: lists, maxAgeSeconds: 3600, whenStale: .warn))
            .process([message(Self.attestation(try AndroidDeviceKey(), jobId: "l-2"))])
        #expect(verdicts(warned)[0]["ok"] == .bool(true))
    }
}

extension Array where Element == UInt8 {
    /// The bytes with every occurrence of `old` replaced by `new`.
    fileprivate func replacing(_ old: [UInt8], with new: [UInt8]) -> [UInt8] {
        Array(String(decoding: self, as: UTF8.self).replacingOccurrences(
            of: String(decoding: old, as: UTF8.self), with: String(decoding: new, as: UTF8.self)).utf8)
    }
}
