import AttestCore
import AttestCrypto
import AttestMint
@testable import AttestVerifier
import Foundation
import Testing

/// The Android negative catalogue: a valid minted attestation (or assertion) with exactly one thing broken,
/// one test per rule of docs/CHECK_ORDER.md (Android), each asserting the code and reason.
@Suite struct AndroidAttestationCatalogueTests {
    typealias Options = AndroidAttestationOptions

    /// The verification time (2026-04-24T03:06:40Z), inside every certificate's validity.
    static let date = Date(timeIntervalSince1970: 1_777_000_000)
    static let time = Timestamp(seconds: 1_777_000_000)
    static let validFrom = Date(timeIntervalSince1970: 1_577_836_800)
    static let validUntil = Date(timeIntervalSince1970: 2_366_841_600)

    static let pki = try! AndroidTestPKI.generate(validFrom: validFrom, validUntil: validUntil)
    /// Same names as `pki`, other keys.
    static let otherPKI = try! AndroidTestPKI.generate(validFrom: validFrom, validUntil: validUntil)
    /// Its attestation key certificate is an end entity, as Sony's are.
    static let sonyPKI = try! AndroidTestPKI.generate(validFrom: validFrom, validUntil: validUntil, attestationKeyIsCA: false)
    static let trust = try! AndroidTrust(rootCertificatesPEM: pki.rootPEM)
    static let deviceKey = try! AndroidDeviceKey()
    static let otherDeviceKey = try! AndroidDeviceKey()

    static let packageName = "com.example.catalogue"
    static let policy = AndroidPolicy(packageName: packageName, signingCertificateDigests: [Options.defaultSigningCertificateDigest])

    /// The default options with the suite's device key, changed by `change`.
    static func options(_ change: (inout Options) -> Void = { _ in }) -> Options {
        var options = Options(deviceKey: deviceKey)
        change(&options)
        return options
    }

    static func mint(pki: AndroidTestPKI = pki, _ change: (inout Options) -> Void = { _ in }) -> MintedAndroidAttestation {
        try! pki.mintAttestation(options: options(change))
    }

    static func request(_ minted: MintedAndroidAttestation) -> AndroidAttestationRequest {
        AndroidAttestationRequest(certificateChain: minted.certificateChain, challenge: minted.challenge)
    }

    static func verify(
        _ request: AndroidAttestationRequest, policy: AndroidPolicy = policy, at time: Timestamp = time, trust: AndroidTrust = trust
    ) -> Result<VerifiedAndroidAttestation, VerificationFailure> {
        AndroidAttestationVerifier(trust: trust).verify(request, policy: policy, at: time)
    }

    /// Mints with one change and verifies the untouched request: "ok" or "code/reason".
    static func outcome(
        policy: AndroidPolicy = policy, at time: Timestamp = time, pki: AndroidTestPKI = pki,
        _ change: (inout Options) -> Void = { _ in }
    ) -> String {
        verify(request(mint(pki: pki, change)), policy: policy, at: time).outcome
    }

    static func policy(_ change: (inout AndroidPolicy) -> Void) -> AndroidPolicy {
        var policy = policy
        change(&policy)
        return policy
    }

    typealias F = AndroidAttestationCatalogueTests

    /// The catalogue covers these steps; a new check must bring its cases here.
    @Test func catalogueCoversEveryCheck() {
        #expect(AndroidAttestationVerifier.checks.map { String(describing: type(of: $0)) } == [
            "AndroidChainCheck", "AndroidRevocationCheck", "KeyDescriptionCheck", "AndroidChallengeCheck", "SecurityLevelCheck",
            "KeyOriginCheck", "ApplicationIdCheck", "RootOfTrustCheck", "OSLevelCheck",
        ])
    }

    // MARK: The valid attestation and the encoder

    @Test func validAttestationIsAccepted() throws {
        let minted = F.mint()
        #expect(minted.certificateChain.count == 4)
        let verified = try F.verify(F.request(minted)).get()
        #expect(verified.keyId == Base64.encode(Digest.sha256.hash(F.deviceKey.subjectPublicKeyInfo)))
        #expect(verified.keyId == minted.keyId)
        #expect(verified.subjectPublicKeyInfo == F.deviceKey.subjectPublicKeyInfo)
        #expect(verified.verificationTime == F.time)
        let description = verified.keyDescription
        #expect(description.attestationVersion == 300)
        #expect(description.keyMintVersion == 300)
        #expect(description.attestationSecurityLevel == .trustedEnvironment)
        #expect(description.keyMintSecurityLevel == .trustedEnvironment)
        #expect(description.attestationChallenge == Array("android-catalogue-challenge".utf8))
        let application = try #require(description.softwareEnforced.attestationApplicationId)
        #expect(application.packages.map(\.name) == [F.packageName] && application.packages.map(\.version) == [1])
        #expect(application.signatureDigests == [Options.defaultSigningCertificateDigest])
        let hardware = description.hardwareEnforced
        #expect(hardware.integer(.origin) == 0)
        #expect(hardware.integer(.osVersion) == 140000)
        #expect(hardware.integer(.osPatchLevel) == 202401)
        let root = try #require(hardware.rootOfTrust)
        #expect(root.deviceLocked && root.verifiedBootState == .verified)
        #expect(hardware.tagsInOrder && description.softwareEnforced.tagsInOrder)
    }

    @Test func sonyShapedChainIsAccepted() {
        #expect(F.outcome(pki: F.sonyPKI) == "android_validation_failed/untrusted_root")
        let trust = try! AndroidTrust(rootCertificatesPEM: F.sonyPKI.rootPEM)
        #expect(F.verify(F.request(F.mint(pki: F.sonyPKI)), trust: trust).outcome == "ok")
        let attestationKey = try! Certificate(der: F.sonyPKI.attestationKeyDER)
        #expect(try! BasicConstraints(der: attestationKey.extension(.basicConstraints)!.value).isCA == false)
        // Only the leaf's own issuer may be an end entity.
        #expect(F.verify(F.request(F.mint(pki: F.sonyPKI) { $0.intermediate = .init(isCA: false) }), trust: trust).outcome
            == "android_validation_failed/certificate_chain_invalid")
    }

    /// The encoder against the real parser: every field as given, in the lists real devices use.
    @Test func mintedKeyDescriptionParsesToTheOptions() throws {
        let key = try AndroidDeviceKey(curve: .p384)
        let digests: [[UInt8]] = [[UInt8](repeating: 0x22, count: 32), [UInt8](repeating: 0x11, count: 32)]
        let options = Options(
            challenge: Array(0..<128), attestationVersion: 200, keyMintVersion: 200, attestationSecurityLevel: .strongBox,
            keyMintSecurityLevel: .strongBox, uniqueId: [1, 2, 3], deviceKey: key, packageName: "org.example.parsed",
            packageVersion: 3_000_000_000, signingCertificateDigests: digests,
            creationDateTime: Date(timeIntervalSince1970: 1_700_000_000.123), origin: 0,
            rootOfTrust: .init(
                verifiedBootKey: [UInt8](repeating: 0, count: 32), deviceLocked: false, verifiedBootState: .selfSigned, verifiedBootHash: nil),
            osVersion: 150000, osPatchLevel: 202512, vendorPatchLevel: 20251205, bootPatchLevel: 20251201,
            extraAuthorizations: [.init(tag: 9999, value: [0x05, 0x00]), .init(tag: 600, value: [0x05, 0x00])])
        let minted = try F.pki.mintAttestation(options: options)
        let der = try #require(minted.keyDescription)
        #expect(der.starts(with: [0x30]))
        #expect(der.indices.contains { der[$0...].starts(with: [0xBF, 0x85, 0x45]) }, "[709] in the high-tag-number form")
        let parsed = try KeyDescription(der: der)
        #expect(parsed == (try KeyDescription(der: Certificate(der: minted.der(.leaf)).extension(.androidKeyDescription)!.value)))
        #expect(parsed.attestationVersion == 200 && parsed.keyMintVersion == 200)
        #expect(parsed.attestationSecurityLevel == .strongBox && parsed.keyMintSecurityLevel == .strongBox)
        #expect(parsed.attestationChallenge == Array(0..<128))
        #expect(parsed.uniqueId == [1, 2, 3])

        let software = parsed.softwareEnforced
        #expect(software.entries.map(\.tag) == [.creationDateTime, .attestationApplicationId])
        #expect(software.integer(.creationDateTime) == 1_700_000_000_123)
        let application = try #require(software.attestationApplicationId)
        #expect(application.packages.map(\.name) == ["org.example.parsed"] && application.packages.map(\.version) == [3_000_000_000])
        #expect(Set(application.signatureDigests) == Set(digests))
        #expect(application.signatureDigests == digests.sorted { $0.lexicographicallyPrecedes($1) }, "a DER SET OF is sorted")

        let hardware = parsed.hardwareEnforced
        #expect(hardware.entries.map(\.tag) == [
            .purpose, .algorithm, .keySize, .digest, .ecCurve, .noAuthRequired, .allApplications, .origin, .rootOfTrust, .osVersion,
            .osPatchLevel, .vendorPatchLevel, .bootPatchLevel,
        ])
        #expect(hardware.unknownTags == [9999])
        #expect(hardware.tagsInOrder && software.tagsInOrder)
        #expect(hardware[.purpose] == .integers([2]))
        #expect(hardware.integer(.algorithm) == 3)
        #expect(hardware.integer(.keySize) == 384)
        #expect(hardware[.digest] == .integers([4]))
        #expect(hardware.integer(.ecCurve) == 2)
        #expect(hardware[.noAuthRequired] == .flag)
        #expect(hardware.integer(.origin) == 0)
        let root = try #require(hardware.rootOfTrust)
        #expect(root.verifiedBootKey == [UInt8](repeating: 0, count: 32))
        #expect(!root.deviceLocked && root.verifiedBootState == .selfSigned && root.verifiedBootHash == nil)
        #expect(hardware.integer(.osVersion) == 150000)
        #expect(hardware.integer(.osPatchLevel) == 202512)
        #expect(hardware.integer(.vendorPatchLevel) == 20251205)
        #expect(hardware.integer(.bootPatchLevel) == 20251201)

        let defaults = try KeyDescription(der: #require(F.mint().keyDescription))
        #expect(defaults.hardwareEnforced.integer(.keySize) == 256 && defaults.hardwareEnforced.integer(.ecCurve) == 1)
        #expect(defaults.hardwareEnforced.rootOfTrust?.verifiedBootHash == [UInt8](repeating: 0xB1, count: 32))
        #expect(defaults.uniqueId.isEmpty)
    }

    // MARK: Step 1: decoding

    @Test func challengeMustBeBase64WithinBounds() {
        var r = F.request(F.mint())
        r.challenge = "not base64!"
        #expect(F.verify(r).outcome == "challenge_invalid/malformed_base64")
        r.challenge = String(repeating: "A", count: 516)
        #expect(F.verify(r).outcome == "challenge_invalid/too_large")
    }

    @Test func chainHoldsTwoToTenCertificates() {
        let minted = F.mint()
        for chain in [[], [minted.certificateChain[0]]] {
            #expect(F.verify(AndroidAttestationRequest(certificateChain: chain, challenge: minted.challenge)).outcome
                == "attestation_object_invalid/missing_certificates")
        }
        let eleven = Array(repeating: minted.certificateChain[0], count: 11)
        #expect(F.verify(AndroidAttestationRequest(certificateChain: eleven, challenge: minted.challenge)).outcome
            == "attestation_object_invalid/too_large")
    }

    @Test func certificatesMustBeBase64DER() {
        let minted = F.mint()
        for position in Options.Position.allCases {
            var r = F.request(minted)
            r.certificateChain[position.rawValue] = "not base64!"
            #expect(F.verify(r).outcome == "attestation_object_invalid/malformed_base64", "\(position)")
            let der = minted.der(position)
            for garbage in [[0x30, 0x03, 0x02, 0x01, 0x01], Array(der.dropLast()), der + [0], [UInt8](repeating: 0xAB, count: 40)] {
                r.certificateChain[position.rawValue] = Base64.encode(garbage)
                #expect(F.verify(r).outcome == "attestation_object_invalid/malformed_certificate", "\(position)")
            }
        }
        var r = F.request(minted)
        r.certificateChain[1] = Base64.encode([UInt8](repeating: 0x30, count: AndroidAttestationVerifier.maxCertificateBytes + 3))
        #expect(F.verify(r).outcome == "attestation_object_invalid/too_large")
    }

    // MARK: Step 2: the chain

    @Test func anotherRootWithTheSameNamesIsUntrusted() {
        #expect(F.outcome(pki: F.otherPKI) == "android_validation_failed/untrusted_root")
        #expect(F.verify(F.request(F.mint()), trust: .google).outcome == "android_validation_failed/untrusted_root")
    }

    @Test func tamperedSignatureAtEveryPosition() {
        for position in Options.Position.allCases {
            #expect(F.outcome { $0.tamperedSignature = position } == "android_validation_failed/certificate_chain_invalid", "\(position)")
        }
    }

    @Test func certificatesMustBeInOrder() {
        let orders: [[Options.Position]] = [
            [.attestationKey, .leaf, .intermediate, .root], [.leaf, .intermediate, .attestationKey, .root],
            [.root, .intermediate, .attestationKey, .leaf], [.leaf, .attestationKey, .root, .intermediate],
            [.leaf, .attestationKey, .intermediate, .intermediate, .root],
            // The root right after the leaf: names do not link.
            [.leaf, .root],
        ]
        for order in orders {
            #expect(F.outcome { $0.chainOrder = order } == "android_validation_failed/certificate_chain_invalid", "\(order)")
        }
        // Stopping below the root: the last certificate's key is not pinned.
        #expect(F.outcome { $0.chainOrder = [.leaf, .attestationKey, .intermediate] } == "android_validation_failed/untrusted_root")
        // A pinned key in a certificate that is not self-issued is no root.
        let pinnedIntermediate = try! AndroidTrust(rootCertificatesPEM: PEM.encode(F.pki.intermediateDER))
        #expect(F.verify(F.request(F.mint { $0.chainOrder = [.leaf, .attestationKey, .intermediate] }), trust: pinnedIntermediate).outcome
            == "android_validation_failed/certificate_chain_invalid")
    }

    static let unknownCritical = RawExtension(oid: "1.2.3.4.5", critical: true, value: [0x05, 0x00])
    static let unknownNonCritical = RawExtension(oid: "1.2.3.4.5", critical: false, value: [0x05, 0x00])

    @Test func unknownCriticalExtensionOnAnyCertificate() {
        let invalid = "android_validation_failed/certificate_chain_invalid"
        #expect(F.outcome { $0.leafExtraExtensions = [F.unknownCritical] } == invalid)
        #expect(F.outcome { $0.attestationKeyCertificate = .init(extraExtensions: [F.unknownCritical]) } == invalid)
        #expect(F.outcome { $0.intermediate = .init(extraExtensions: [F.unknownCritical]) } == invalid)
        #expect(F.outcome { $0.root = .init(extraExtensions: [F.unknownCritical]) } == invalid)
        // Not critical: ignored, wherever it is.
        #expect(F.outcome {
            $0.leafExtraExtensions = [F.unknownNonCritical]
            $0.attestationKeyCertificate = .init(extraExtensions: [F.unknownNonCritical])
            $0.intermediate = .init(extraExtensions: [F.unknownNonCritical])
            $0.root = .init(extraExtensions: [F.unknownNonCritical])
        } == "ok")
    }

    @Test func authoritiesAboveTheAttestationKeyMustBeCAs() {
        #expect(F.outcome { $0.intermediate = .init(isCA: false) } == "android_validation_failed/certificate_chain_invalid")
        #expect(F.outcome { $0.root = .init(isCA: false) } == "android_validation_failed/certificate_chain_invalid")
        // The attestation key certificate itself may be an end entity (Sony).
        #expect(F.outcome { $0.attestationKeyCertificate = .init(isCA: false) } == "ok")
        // A CA without keyCertSign may not sign certificates (digitalSignature | cRLSign).
        let noCertSign: [UInt8] = [0x01, 0x82]
        #expect(F.outcome { $0.intermediate = .init(keyUsage: noCertSign) } == "android_validation_failed/certificate_chain_invalid")
        #expect(F.outcome { $0.root = .init(keyUsage: noCertSign) } == "android_validation_failed/certificate_chain_invalid")
        // A keyUsage that is no BIT STRING of 1 or 2 octets.
        #expect(F.outcome { $0.intermediate = .init(keyUsage: [0x00]) } == "android_validation_failed/certificate_chain_invalid")
        // Path lengths count the attestation key certificate below the intermediate.
        #expect(F.outcome { $0.intermediate = .init(pathLength: 0) } == "android_validation_failed/certificate_chain_invalid")
        #expect(F.outcome { $0.intermediate = .init(pathLength: 1) } == "ok")
        #expect(F.outcome { $0.root = .init(pathLength: 1) } == "android_validation_failed/certificate_chain_invalid")
        #expect(F.outcome { $0.root = .init(pathLength: 2) } == "ok")
    }

    @Test func expiredLeafOrAuthorities() {
        let expired = "android_validation_failed/certificate_expired"
        let before = F.date.addingTimeInterval(-1), after = F.date.addingTimeInterval(1)
        // The leaf's validity is the device's (its app chooses it): not checked.
        #expect(F.outcome { $0.leafNotAfter = before } == "ok")
        #expect(F.outcome { $0.leafNotBefore = after } == "ok")
        #expect(F.outcome { $0.attestationKeyCertificate = .init(notAfter: before) } == expired)
        #expect(F.outcome { $0.attestationKeyCertificate = .init(notBefore: after) } == expired)
        #expect(F.outcome { $0.intermediate = .init(notAfter: before) } == expired)
        #expect(F.outcome { $0.intermediate = .init(notBefore: after) } == expired)
        // The pinned root is a trust anchor: its certificate's validity is not checked.
        #expect(F.outcome { $0.root = .init(notAfter: before) } == "ok")
        // Structure and signatures come before validity.
        #expect(F.outcome {
            $0.intermediate = .init(notAfter: before)
            $0.tamperedSignature = .leaf
        } == "android_validation_failed/certificate_chain_invalid")
    }

    @Test func validityIsInclusiveAtBothEnds() {
        for position in [Options.Position.attestationKey, .intermediate] {
            func at(_ time: Timestamp, notBefore: Date, notAfter: Date) -> String {
                F.outcome(at: time) {
                    switch position {
                    case .attestationKey: $0.attestationKeyCertificate = .init(notBefore: notBefore, notAfter: notAfter)
                    default: $0.intermediate = .init(notBefore: notBefore, notAfter: notAfter)
                    }
                }
            }
            let end = F.date.addingTimeInterval(3600)
            #expect(at(F.time, notBefore: F.date, notAfter: end) == "ok", "\(position) notBefore")
            #expect(at(F.time.adding(seconds: -1), notBefore: F.date, notAfter: end) == "android_validation_failed/certificate_expired")
            #expect(at(F.time.adding(seconds: 3600), notBefore: F.date, notAfter: end) == "ok", "\(position) notAfter")
            #expect(at(F.time.adding(seconds: 3601), notBefore: F.date, notAfter: end) == "android_validation_failed/certificate_expired")
            #expect(at(Timestamp(microseconds: F.time.adding(seconds: 3600).microseconds + 1), notBefore: F.date, notAfter: end)
                == "android_validation_failed/certificate_expired")
        }
    }

    // MARK: Step 3: the status list

    @Test func listedSerialIsRevoked() throws {
        let minted = F.mint()
        for position in Options.Position.allCases {
            let serial = try Certificate(der: minted.der(position)).serialNumber
            var trust = F.trust
            trust.statusList = AndroidStatusList(entries: [AndroidStatusList.canonical(Hex.encode(serial)): "REVOKED"])
            #expect(F.verify(F.request(minted), trust: trust).outcome == "android_validation_failed/certificate_revoked", "\(position)")
            // As Google writes it: upper-case hex with a leading zero, and any status at all.
            let json = "{\"entries\": {\"0\(Hex.encode(serial).uppercased())\": {\"status\": \"SUSPENDED\"}}}"
            trust.statusList = try AndroidStatusList(json: Array(json.utf8))
            #expect(F.verify(F.request(minted), trust: trust).outcome == "android_validation_failed/certificate_revoked", "\(position)")
        }
        var trust = F.trust
        trust.statusList = AndroidStatusList(entries: ["1": "REVOKED", "abcdef": "SUSPENDED"])
        #expect(F.verify(F.request(minted), trust: trust).outcome == "ok")
    }

    // MARK: Step 4: the KeyDescription

    @Test func keyDescriptionMustBePresentAndStrictDER() {
        let invalid = "android_validation_failed/key_description_invalid"
        #expect(F.outcome { $0.keyDescription = .absent } == invalid)
        #expect(F.outcome { $0.keyDescription = .value([0x05, 0x00]) } == invalid)
        #expect(F.outcome { $0.keyDescription = .value([]) } == invalid)
        #expect(F.outcome { $0.keyDescription = .transformed { Array($0.dropLast()) } } == invalid)
        #expect(F.outcome { $0.keyDescription = .transformed { $0 + [0x00] } } == invalid)
        #expect(F.outcome { $0.keyDescription = .transformed { [0x31] + $0.dropFirst() } } == invalid)
        // A non-minimal length, which BER allows and DER does not.
        #expect(F.outcome {
            $0.keyDescription = .transformed { der in
                // 30 81 LL or 30 82 LL LL, rewritten as 30 83 00 LL LL.
                let contents = der[1] == 0x81 ? 3 : 4
                let length = der[1] == 0x81 ? Int(der[2]) : Int(der[2]) << 8 | Int(der[3])
                return [0x30, 0x83, 0x00, UInt8(length >> 8), UInt8(length & 0xFF)] + der[contents...]
            }
        } == invalid)
    }

    @Test func duplicateTagIsMalformed() {
        for tag in [AuthorizationList.Tag.purpose, .origin, .rootOfTrust, .osPatchLevel, .attestationApplicationId, .creationDateTime] {
            #expect(F.outcome { $0.duplicateTag = tag } == "android_validation_failed/key_description_invalid", "\(tag)")
        }
    }

    @Test func tagsOutOfOrderAreAccepted() throws {
        let minted = F.mint { $0.tagsOutOfOrder = true }
        let verified = try F.verify(F.request(minted)).get()
        #expect(!verified.keyDescription.hardwareEnforced.tagsInOrder && !verified.keyDescription.softwareEnforced.tagsInOrder)
        // An unknown tag is skipped and listed, not refused.
        #expect(F.outcome { $0.extraAuthorizations = [.init(tag: 4242, value: [0x02, 0x01, 0x07])] } == "ok")
    }

    @Test func fieldsMustHaveTheSchemaTypesAndRanges() {
        let invalid = "android_validation_failed/key_description_invalid"
        #expect(F.outcome { $0.rootOfTrust = nil } == invalid)
        #expect(F.outcome { $0.osVersion = -1 } == invalid)
        #expect(F.outcome { $0.attestationVersion = 0 } == invalid)
        #expect(F.outcome { $0.challenge = [UInt8](repeating: 7, count: 129) } == invalid)
        // deviceLocked as a one-octet BOOLEAN other than 00 or FF (Google's invalid_malformed_rot sample).
        #expect(F.outcome {
            $0.rootOfTrust = nil
            $0.extraAuthorizations = [.init(tag: 704, value: [0x30, 0x0A, 0x04, 0x00, 0x01, 0x01, 0x01, 0x0A, 0x01, 0x00, 0x04, 0x00])]
        } == invalid)
        // A known tag of the wrong type: origin as an OCTET STRING.
        #expect(F.outcome {
            $0.origin = nil
            $0.extraAuthorizations = [.init(tag: 702, value: [0x04, 0x01, 0x00])]
        } == invalid)
        // attestationApplicationId that is no AttestationApplicationId.
        #expect(F.outcome {
            $0.includesApplicationId = false
            $0.extraAuthorizations = [.init(tag: 709, value: [0x04, 0x02, 0x05, 0x00], hardwareEnforced: false)]
        } == invalid)
        // A SOFTWARE attestation has no root of trust: not malformed, refused at the security level step.
        #expect(F.outcome {
            $0.rootOfTrust = nil
            $0.attestationSecurityLevel = .software
            $0.keyMintSecurityLevel = .software
        } == "android_validation_failed/security_level_insufficient")
    }

    // MARK: Step 5: the challenge

    @Test func challengeMustMatch() {
        var r = F.request(F.mint())
        r.challenge = Base64.encode(Array("another-challenge".utf8))
        #expect(F.verify(r).outcome == "android_validation_failed/challenge_mismatch")
        r.challenge = Base64.encode(Array("android-catalogue-challeng".utf8))
        #expect(F.verify(r).outcome == "android_validation_failed/challenge_mismatch")
        r = F.request(F.mint { $0.challenge = [] })
        r.challenge = Base64.encode(Array("android-catalogue-challenge".utf8))
        #expect(F.verify(r).outcome == "android_validation_failed/challenge_mismatch")
    }

    // MARK: Step 6: security levels

    @Test func securityLevels() {
        let insufficient = "android_validation_failed/security_level_insufficient"
        #expect(F.outcome { $0.attestationSecurityLevel = .software } == insufficient)
        #expect(F.outcome { $0.keyMintSecurityLevel = .software } == insufficient)
        let strongBox = F.policy { $0.requireStrongBox = true }
        #expect(F.outcome(policy: strongBox) == insufficient)
        #expect(F.outcome(policy: strongBox) { $0.attestationSecurityLevel = .strongBox } == insufficient)
        #expect(F.outcome(policy: strongBox) { $0.keyMintSecurityLevel = .strongBox } == insufficient)
        let both: (inout Options) -> Void = {
            $0.attestationSecurityLevel = .strongBox
            $0.keyMintSecurityLevel = .strongBox
        }
        #expect(F.outcome(policy: strongBox, both) == "ok")
        #expect(F.outcome(both) == "ok")
    }

    // MARK: Step 7: origin

    @Test func keyMustBeGeneratedInHardware() {
        for origin in [1, 2, 4, nil] as [Int?] {
            #expect(
                F.outcome { $0.origin = origin } == "android_validation_failed/key_not_hardware_generated", "\(String(describing: origin))")
        }
        // GENERATED in the software-enforced list only is no hardware statement.
        #expect(F.outcome {
            $0.origin = nil
            $0.extraAuthorizations = [.init(tag: 702, value: [0x02, 0x01, 0x00], hardwareEnforced: false)]
        } == "android_validation_failed/key_not_hardware_generated")
    }

    // MARK: Step 8: the application

    @Test func applicationIdMustNameThePackageAndRegisteredSigners() {
        #expect(F.outcome { $0.includesApplicationId = false } == "android_validation_failed/key_description_invalid")
        #expect(F.outcome { $0.packageName = "com.example.other" } == "android_validation_failed/package_name_mismatch")
        #expect(F.outcome { $0.packageName = "com.example.Catalogue" } == "android_validation_failed/package_name_mismatch")
        #expect(F.outcome { $0.packageName = "com.example.catalogue.evil" } == "android_validation_failed/package_name_mismatch")
        let mismatch = "android_validation_failed/signing_certificate_mismatch"
        let other = [UInt8](repeating: 0x77, count: 32)
        #expect(F.outcome { $0.signingCertificateDigests = [other] } == mismatch)
        #expect(F.outcome { $0.signingCertificateDigests = [Options.defaultSigningCertificateDigest, other] } == mismatch)
        #expect(F.outcome { $0.signingCertificateDigests = [] } == mismatch)
        // nil registration: not checked.
        let unchecked = F.policy { $0.signingCertificateDigests = nil }
        #expect(F.outcome(policy: unchecked) { $0.signingCertificateDigests = [other] } == "ok")
        #expect(F.outcome(policy: unchecked) { $0.signingCertificateDigests = [] } == "ok")
        // Registering more signers than the app lists (a key rotation) is fine.
        #expect(F.outcome(policy: F.policy { $0.signingCertificateDigests?.insert(other) }) == "ok")
    }

    // MARK: Step 9: root of trust

    @Test func bootStateIsReportedUnlessRequired() {
        let states: [(locked: Bool, state: RootOfTrust.VerifiedBootState, required: String)] = [
            (false, .verified, "android_validation_failed/device_unlocked"),
            (true, .selfSigned, "android_validation_failed/boot_state_unverified"),
            (false, .selfSigned, "android_validation_failed/boot_state_unverified"),
            (false, .unverified, "android_validation_failed/boot_state_unverified"),
            (true, .failed, "android_validation_failed/boot_state_unverified"),
        ]
        let required = F.policy { $0.requireVerifiedBoot = true }
        for (locked, state, expected) in states {
            let change: (inout Options) -> Void = { $0.rootOfTrust = .init(deviceLocked: locked, verifiedBootState: state) }
            #expect(F.outcome(change) == "ok", "\(locked) \(state)")
            #expect(F.outcome(policy: required, change) == expected, "\(locked) \(state)")
        }
        #expect(F.outcome(policy: required) == "ok")
    }

    // MARK: Step 10: OS levels

    @Test func osLevelsMustMeetTheMinimums() {
        let outdated = "android_validation_failed/os_outdated"
        let version = F.policy { $0.minimumOSVersion = 140000 }
        #expect(F.outcome(policy: version) == "ok")
        #expect(F.outcome(policy: version) { $0.osVersion = 139999 } == outdated)
        #expect(F.outcome(policy: version) { $0.osVersion = nil } == outdated)
        let patch = F.policy { $0.minimumOSPatchLevel = 202401 }
        #expect(F.outcome(policy: patch) == "ok")
        #expect(F.outcome(policy: patch) { $0.osPatchLevel = 202312 } == outdated)
        #expect(F.outcome(policy: patch) { $0.osPatchLevel = nil } == outdated)
        // No minimum: anything, even nothing.
        #expect(F.outcome {
            $0.osVersion = nil
            $0.osPatchLevel = nil
        } == "ok")
    }

    /// Several faults at once: the earliest step in docs/CHECK_ORDER.md decides.
    @Test func firstFailingStepDecides() throws {
        #expect(F.outcome {
            $0.keyDescription = .absent
            $0.tamperedSignature = .leaf
        } == "android_validation_failed/certificate_chain_invalid")
        let minted = F.mint { $0.keyDescription = .absent }
        var trust = F.trust
        trust.statusList = AndroidStatusList(entries: [Hex.encode(try Certificate(der: minted.der(.leaf)).serialNumber): "REVOKED"])
        #expect(F.verify(F.request(minted), trust: trust).outcome == "android_validation_failed/certificate_revoked")
        var r = F.request(F.mint { $0.attestationSecurityLevel = .software })
        r.challenge = Base64.encode([1, 2, 3])
        #expect(F.verify(r).outcome == "android_validation_failed/challenge_mismatch")
        #expect(F.outcome {
            $0.keyMintSecurityLevel = .software
            $0.origin = 2
        } == "android_validation_failed/security_level_insufficient")
        #expect(F.outcome {
            $0.origin = 2
            $0.packageName = "com.example.other"
        } == "android_validation_failed/key_not_hardware_generated")
        #expect(F.outcome(policy: F.policy { $0.requireVerifiedBoot = true; $0.minimumOSVersion = 150000 }) {
            $0.signingCertificateDigests = [[UInt8](repeating: 1, count: 32)]
            $0.rootOfTrust = .init(deviceLocked: false)
        } == "android_validation_failed/signing_certificate_mismatch")
        #expect(F.outcome(policy: F.policy { $0.requireVerifiedBoot = true; $0.minimumOSVersion = 150000 }) {
            $0.rootOfTrust = .init(deviceLocked: false)
        } == "android_validation_failed/device_unlocked")
    }

    // MARK: Android assertions

    static let clientData = Array("{\"action\":\"transfer\",\"challenge\":\"assertion-challenge-0001\"}".utf8)

    static func assertion(
        clientData: [UInt8] = clientData, signedBy key: AndroidDeviceKey = deviceKey, challenge: String? = "assertion-challenge-0001"
    ) -> AndroidAssertionRequest {
        AndroidAssertionRequest(
            keyId: key.keyId, signature: Base64.encode(try! key.sign(message: clientData)), clientData: Base64.encode(clientData),
            challenge: challenge)
    }

    static func outcome(_ request: AndroidAssertionRequest, storedKey: [UInt8]? = deviceKey.subjectPublicKeyInfo) -> String {
        AndroidAssertionVerifier().verify(request, storedKey: storedKey.map(AttestedAndroidKey.init)).map { "\($0.code.rawValue)/\($0.reason.rawValue)" } ?? "ok"
    }

    /// An Ed25519 SubjectPublicKeyInfo (RFC 8410): well formed, but no algorithm Android signatures verify with here.
    static let ed25519SPKI: [UInt8] =
        [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00] + [UInt8](repeating: 0x42, count: 32)

    @Test func assertionWithTheAttestedKeyIsAccepted() throws {
        let verified = try F.verify(F.request(F.mint())).get()
        #expect(F.outcome(F.assertion(), storedKey: verified.subjectPublicKeyInfo) == "ok")
        #expect(F.outcome(F.assertion(challenge: nil)) == "ok")
        // The challenge as base64 of bytes the client data holds.
        #expect(F.outcome(F.assertion(challenge: Base64.encode(Array("assertion-challenge-0001".utf8)))) == "ok")
        let p384 = try AndroidDeviceKey(curve: .p384)
        let attested = try F.verify(F.request(F.mint { $0.deviceKey = p384 })).get()
        #expect(F.outcome(F.assertion(signedBy: p384), storedKey: attested.subjectPublicKeyInfo) == "ok")
    }

    @Test func assertionCatalogue() {
        var changed = F.clientData
        changed[3] ^= 0x01
        var r = F.assertion()
        r.clientData = Base64.encode(changed)
        #expect(F.outcome(r) == "assertion_invalid/signature_invalid")
        #expect(F.outcome(F.assertion(signedBy: F.otherDeviceKey), storedKey: F.otherDeviceKey.subjectPublicKeyInfo) == "ok")
        r = F.assertion(signedBy: F.otherDeviceKey)
        r.keyId = F.deviceKey.keyId
        #expect(F.outcome(r) == "assertion_invalid/signature_invalid")

        #expect(F.outcome(F.assertion(challenge: "another-challenge")) == "client_data_hash_invalid/challenge_mismatch")
        #expect(F.outcome(F.assertion(clientData: Array("{}".utf8))) == "client_data_hash_invalid/challenge_mismatch")
        #expect(F.outcome(F.assertion(), storedKey: nil) == "reattest_required/unknown_key")
        #expect(F.outcome(F.assertion(), storedKey: F.otherDeviceKey.subjectPublicKeyInfo) == "key_id_invalid/key_id_mismatch")
        r = F.assertion()
        r.keyId = Base64.encode(Digest.sha256.hash(F.ed25519SPKI))
        #expect(F.outcome(r, storedKey: F.ed25519SPKI) == "android_validation_failed/unsupported_key_algorithm")

        r = F.assertion()
        r.keyId = "%%%"
        #expect(F.outcome(r) == "key_id_invalid/malformed_base64")
        r.keyId = Base64.encode([UInt8](repeating: 1, count: 31))
        #expect(F.outcome(r) == "key_id_invalid/key_id_mismatch")
        r = F.assertion()
        r.signature = "not base64!"
        #expect(F.outcome(r) == "assertion_invalid/malformed_base64")
        r.signature = Base64.encode([UInt8](repeating: 0x30, count: AndroidAssertionVerifier.maxSignatureBytes + 3))
        #expect(F.outcome(r) == "assertion_invalid/too_large")
        r = F.assertion()
        r.clientData = "not base64!"
        #expect(F.outcome(r) == "client_data_hash_invalid/malformed_base64")
        r.clientData = Base64.encode([UInt8](repeating: 0x20, count: AndroidAssertionVerifier.maxClientDataBytes + 3))
        #expect(F.outcome(r) == "client_data_hash_invalid/too_large")
        r = F.assertion()
        r.challenge = String(repeating: "c", count: 513)
        #expect(F.outcome(r) == "challenge_invalid/too_large")
    }
}
