import AttestCore
import AttestCrypto
import AttestVerifier
import Foundation
import Testing

/// Real chains from Google's `android/keyattestation` (Tests/Fixtures/android/PROVENANCE.md): every
/// certificate parses, every signature verifies under its issuer's key (RSA and EC, P-256 and P-384; RSA keys under 2048 bits refused), the
/// roots carry one of Google's two root keys, and the leaf's KeyDescription parses to Google's expected
/// values.
@Suite struct AndroidRealChainTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/android")

    static func chain(_ name: String) -> [Certificate] {
        let text = try! String(contentsOf: directory.appendingPathComponent(name + ".pem"), encoding: .utf8)
        return PEM.decodeAll(text)!.map { try! Certificate(der: $0) }
    }

    /// Google's JSON without its `//` comment lines.
    static func expected(_ name: String) -> JSONValue? {
        guard let text = try? String(contentsOf: directory.appendingPathComponent(name + ".json"), encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
        return JSONValue.parse(Array(lines.joined(separator: "\n").utf8))
    }

    static func items(_ value: JSONValue?) -> [JSONValue] {
        if case .array(let items)? = value { return items }
        return []
    }

    static func bool(_ value: JSONValue?) -> Bool? {
        if case .bool(let flag)? = value { return flag }
        return nil
    }

    static let devices = try! FileManager.default.contentsOfDirectory(atPath: directory.path)
        .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()

    /// SHA-256 of the SubjectPublicKeyInfo of Google's RSA root key and of its ECDSA P-384 root of 2025.
    static let googleRootKeys: Set<String> = [
        "feb2ea7551ee316ed4bb443c8293b884dbfdea40b603ee3e4f4a897e4580fbae",
        "3ee44512a1af2beb39c889490c60ea3f82e43f5d5a5532f5ab9419f676cd07ec",
    ]

    @Test(arguments: devices) func chainSignaturesVerify(_ name: String) throws {
        let certificates = Self.chain(name)
        for (certificate, issuer) in zip(certificates, certificates.dropFirst()) {
            #expect(certificate.issuer == issuer.subject)
            guard let key = SignatureKey(subjectPublicKeyInfo: issuer.subjectPublicKeyInfo, algorithm: issuer.keyAlgorithm) else {
                // Only the 1024-bit RSA keys of Android's software attestation root (marlin's userdebug
                // chain) have no key here: RSA below 2048 bits is refused as forgeable.
                #expect(name == "marlin_sdk29_TEE_RSA_NONE" && issuer.keyAlgorithm == .rsaEncryption)
                continue
            }
            #expect(key.verify(certificateSignature: certificate.signature, over: certificate.tbsBytes, algorithm: certificate.signatureAlgorithm))
            // One byte of the TBS changed: refused.
            var tampered = Array(certificate.tbsBytes)
            tampered[tampered.count - 1] ^= 1
            #expect(!key.verify(certificateSignature: certificate.signature, over: tampered, algorithm: certificate.signatureAlgorithm))
        }
        let rootKey = Hex.encode(Digest.sha256.hash(certificates.last!.subjectPublicKeyInfo))
        #expect(Self.googleRootKeys.contains(rootKey) == !name.hasPrefix("marlin"), "software roots are no Google hardware root")
    }

    @Test(arguments: devices) func keyDescriptionMatchesGoogle(_ name: String) throws {
        let expected = try #require(Self.expected(name))
        let leaf = Self.chain(name)[0]
        let ext = try #require(leaf.extension(.androidKeyDescription))
        let description = try KeyDescription(der: ext.value)
        #expect(String(description.attestationVersion) == expected["attestationVersion"]?.stringValue)
        #expect(String(description.keyMintVersion) == expected["keyMintVersion"]?.stringValue)
        #expect(description.attestationSecurityLevel.name.replacingOccurrences(of: "_", with: "")
            == expected["attestationSecurityLevel"]?.stringValue?.replacingOccurrences(of: "_", with: ""))
        #expect(Base64.encode(description.attestationChallenge) == expected["attestationChallenge"]?.stringValue)
        let hardware = try #require(expected["hardwareEnforced"])
        let software = try #require(expected["softwareEnforced"])
        for (list, json) in [(description.hardwareEnforced, hardware), (description.softwareEnforced, software)] {
            for tag in [AuthorizationList.Tag.osVersion, .osPatchLevel, .vendorPatchLevel, .bootPatchLevel, .keySize, .algorithm, .ecCurve] {
                #expect(list.integer(tag).map(String.init) == json[tag.name]?.stringValue, "\(tag)")
            }
        }
        if let rootOfTrust = hardware["rootOfTrust"] {
            let parsed = try #require(description.hardwareEnforced.rootOfTrust)
            #expect(Self.bool(rootOfTrust["deviceLocked"]) == parsed.deviceLocked)
            #expect(parsed.verifiedBootState.name == rootOfTrust["verifiedBootState"]?.stringValue)
            #expect(Base64.encode(parsed.verifiedBootKey) == rootOfTrust["verifiedBootKey"]?.stringValue)
        }
        if hardware["origin"]?.stringValue == "GENERATED" {
            #expect(description.hardwareEnforced.integer(.origin) == AuthorizationList.originGenerated)
        }
        if let application = software["attestationApplicationId"] {
            let parsed = try #require(description.softwareEnforced.attestationApplicationId)
            #expect(parsed.packages.first?.name == Self.items(application["packages"]).first?["name"]?.stringValue)
            #expect(parsed.signatureDigests.map { Base64.encode($0) } == Self.items(application["signatures"]).compactMap(\.stringValue))
        }
    }

    /// The device's chain as a job carries it, with the policy Google's expected values imply (the package
    /// and signers the leaf names) and a verification time inside the validity of every certificate between
    /// the leaf and the root (the latest notBefore there: remote-provisioned intermediates last a month).
    static func request(_ name: String) throws -> (AndroidAttestationRequest, AndroidPolicy, Timestamp, JSONValue) {
        let expected = try #require(Self.expected(name))
        let certificates = Self.chain(name)
        let application = try #require(expected["softwareEnforced"]?["attestationApplicationId"])
        let digests = Set(Self.items(application["signatures"]).compactMap { $0.stringValue.flatMap(Base64.decode) })
        // The system packages' attestations (AndroidSystem) list no signers: nothing to register.
        let policy = AndroidPolicy(
            packageName: try #require(Self.items(application["packages"]).first?["name"]?.stringValue),
            signingCertificateDigests: digests.isEmpty ? nil : digests)
        let time = certificates.dropFirst().dropLast().map(\.notBefore).max()!
        let request = AndroidAttestationRequest(
            certificateChain: certificates.map { Base64.encode($0.der) }, challenge: try #require(expected["attestationChallenge"]?.stringValue))
        return (request, policy, time, expected)
    }

    /// Every hardware-rooted device chain is accepted under Google's pinned roots (RSA and EC, 2016 to 2026
    /// root certificates, factory and remote-provisioned intermediates, RSA, EC and ML-DSA leaves), its keyId
    /// the leaf's key and its facts Google's.
    @Test(arguments: devices.filter { !$0.hasPrefix("marlin") }) func realChainsAreAccepted(_ name: String) throws {
        let (request, policy, time, expected) = try Self.request(name)
        let verified = try AndroidAttestationVerifier(trust: .google).verify(request, policy: policy, at: time).get()
        let leaf = Self.chain(name)[0]
        #expect(verified.keyId == Base64.encode(Digest.sha256.hash(leaf.subjectPublicKeyInfo)))
        #expect(verified.subjectPublicKeyInfo == leaf.subjectPublicKeyInfo)
        #expect(verified.keyDescription.attestationSecurityLevel.name.replacingOccurrences(of: "_", with: "")
            == expected["attestationSecurityLevel"]?.stringValue?.replacingOccurrences(of: "_", with: ""))
        #expect(Self.bool(expected["hardwareEnforced"]?["rootOfTrust"]?["deviceLocked"])
            == verified.keyDescription.hardwareEnforced.rootOfTrust?.deviceLocked)
        // One second before the youngest certificate between the leaf and the root was issued: not yet valid.
        let early = AndroidAttestationVerifier(trust: .google).verify(request, policy: policy, at: time.adding(seconds: -1))
        #expect(early.failure?.reason == .certificateExpired)
    }

    /// Android's software attestation roots (a userdebug Pixel) are no hardware root: refused as untrusted.
    @Test(arguments: devices.filter { $0.hasPrefix("marlin") }) func softwareRootsAreUntrusted(_ name: String) throws {
        let (request, policy, time, _) = try Self.request(name)
        #expect(AndroidAttestationVerifier(trust: .google).verify(request, policy: policy, at: time).failure?.reason == .untrustedRoot)
    }

    /// Google's sample with its tags out of order parses (devices do write them so); its leaf was re-encoded
    /// without being signed again, so the chain itself is refused (OpenSSL agrees).
    @Test func tagsOutOfOrderAreAccepted() throws {
        let certificates = Self.chain("invalid_tags_not_in_ascending_order")
        let description = try KeyDescription(der: certificates[0].extension(.androidKeyDescription)!.value)
        #expect(!description.hardwareEnforced.tagsInOrder || !description.softwareEnforced.tagsInOrder)
        let request = AndroidAttestationRequest(
            certificateChain: certificates.map { Base64.encode($0.der) }, challenge: Base64.encode(description.attestationChallenge))
        let policy = AndroidPolicy(packageName: "any.package", signingCertificateDigests: nil)
        let failure = AndroidAttestationVerifier(trust: .google).verify(request, policy: policy, at: certificates[1].notBefore).failure
        #expect(failure?.reason == .certificateChainInvalid)
    }

    @Test func malformedRootOfTrustIsRefused() {
        let leaf = Self.chain("invalid_malformed_rot_device_locked")[0]
        #expect(throws: ASN1Error.self) { try KeyDescription(der: leaf.extension(.androidKeyDescription)!.value) }
    }

    /// Every truncation of a real KeyDescription is refused, never accepted or crashing.
    @Test func truncationsAreRefused() {
        let value = Self.chain("tegu_sdk37_TEE_MAX_USAGE_COUNT")[0].extension(.androidKeyDescription)!.value
        for length in 0..<value.count {
            #expect(throws: ASN1Error.self) { try KeyDescription(der: Array(value.prefix(length))) }
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
