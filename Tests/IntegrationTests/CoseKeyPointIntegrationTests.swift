import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import Testing

extension LiveStack {
    /// Issue 15 item 2 against a real worker: an attestation whose COSE key is no P-256 point is answered
    /// attestation_object_invalid/malformed_cbor, whether the leaf's nonce covers the bad key (otherwise
    /// public_key_mismatch) or not (otherwise nonce_mismatch); nothing of it is stored, and the same device's
    /// real attestation and assertion behind them on the partition are accepted.
    @Suite struct CoseKeyPointIntegrationTests {
        /// {1: 2, 3: -7, -1: 1, -2: x, -3: y}.
        static func coseKey(x: [UInt8], y: [UInt8]) -> CBORItem {
            .map([(1, 2), (3, -7), (-1, 1), (-2, .bytes(x)), (-3, .bytes(y))])
        }

        /// An attestation job carrying `object` for `device`, bound to SHA-256 of the jobId as Jobs' are.
        static func job(_ object: [UInt8], device: Device, bundleId: String, jobId: String, receivedAt: Date) -> (key: [UInt8]?, value: [UInt8]) {
            let keyId = Base64.encode(device.keyId)
            let json = JSONValue.object([
                ("jobId", .string(jobId)), ("kind", .string("attestation")), ("teamId", .string(Jobs.teamId)),
                ("bundleId", .string(bundleId)), ("keyId", .string(keyId)), ("attestationObject", .string(Base64.encode(object))),
                ("clientDataHash", .string(Base64.encode(Digest.sha256.hash(Array(jobId.utf8))))),
                ("receivedAt", .string(Jobs.timestamp(receivedAt))),
            ])
            return (Array(keyId.utf8), Array(json.serialized().utf8))
        }

        @Test func coseKeysOffP256AreMalformedAndTheDeviceStillAttests() throws {
            let topics = try Stack.topics("cose", partitions: 1)
            let bundleId = "com.example.cose.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let device = try Device()
            let x = Array(device.publicKeyX962[1...32])
            let y = Array(device.publicKeyX962[33...64])
            var nudged = x
            nudged[0] ^= 0x80
            let prime = Hex.decode("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")!
            let zero = [UInt8](repeating: 0, count: 32)
            let coordinates: [(name: String, x: [UInt8], y: [UInt8])] = [
                ("off-curve", nudged, y), ("x-is-p", prime, y), ("y-is-p", x, prime), ("infinity", zero, zero),
                ("all-ones", [UInt8](repeating: 0xff, count: 32), [UInt8](repeating: 0xff, count: 32)),
            ]
            let key = Self.coseKey(x: x, y: y).encoded
            let now = Date()
            var messages = [(key: [UInt8]?, value: [UInt8])]()
            var bad = [String]()
            for (name, badX, badY) in coordinates {
                // The leaf's nonce covers the bad key: only the key comparison would have caught it.
                let covered = "cose-\(name)-covered-\(bundleId)"
                let minted = try Jobs.pki.mintAttestation(
                    device: device, teamId: Jobs.teamId, bundleId: bundleId, clientDataHash: Digest.sha256.hash(Array(covered.utf8)),
                    at: now, options: AttestationOptions(coseKey: Self.coseKey(x: badX, y: badY)))
                messages.append(Self.job(minted.attestationObject, device: device, bundleId: bundleId, jobId: covered, receivedAt: now))
                // The bad key swapped into a valid object after minting: the nonce no longer matches either.
                let swapped = "cose-\(name)-swapped-\(bundleId)"
                let valid = try Jobs.pki.mintAttestation(
                    device: device, teamId: Jobs.teamId, bundleId: bundleId, clientDataHash: Digest.sha256.hash(Array(swapped.utf8)), at: now)
                var authData = valid.authData
                let start = try #require(authData.firstRange(of: key)).lowerBound
                authData.replaceSubrange(start..<start + key.count, with: Self.coseKey(x: badX, y: badY).encoded)
                let object = MintedAttestation.encodeObject(
                    x5c: [valid.leafDER, valid.intermediateDER], receipt: valid.receipt, authData: authData)
                messages.append(Self.job(object, device: device, bundleId: bundleId, jobId: swapped, receivedAt: now))
                bad += [covered, swapped]
            }
            let attested = "cose-real-\(bundleId)"
            let asserted = "cose-assert-\(bundleId)"
            messages.append((Array(Base64.encode(device.keyId).utf8), Jobs.attestation(device, bundleId: bundleId, jobId: attested)))
            messages.append((Array(Base64.encode(device.keyId).utf8), Jobs.assertion(device, bundleId: bundleId, jobId: asserted, counter: 1)))

            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            try produce(topics.jobs, messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= messages.count }, "\(worker.log.suffix(2000))")
            let outcomes = HardeningTimeTests.outcomes(verdicts)
            #expect(outcomes.count == messages.count)
            for jobId in bad {
                let outcome = outcomes[jobId]
                #expect(outcome?.ok == false, "\(jobId)")
                #expect(outcome?.code == "attestation_object_invalid" && outcome?.reason == "malformed_cbor",
                    "\(jobId): \(outcome?.code ?? "-")/\(outcome?.reason ?? "-")")
            }
            #expect(outcomes[attested]?.ok == true, "\(outcomes[attested].map { "\($0.code ?? "-")/\($0.reason ?? "-")" } ?? "no verdict")")
            #expect(outcomes[asserted]?.ok == true, "\(outcomes[asserted].map { "\($0.code ?? "-")/\($0.reason ?? "-")" } ?? "no verdict")")
        }
    }
}
