import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import ConcurrentMap
import Dispatch
import Foundation

/// The job stream of `bench pipeline`, minted under a test PKI for one app.
///
/// Each device sends one attestation and then nine assertions (10% attestations, 90% assertions); every
/// other device sends one invalid assertion among its nine (5% of all jobs: half signed by another key,
/// half replaying the counter already stored). The devices' sequences are merged at random from a window
/// of active devices, so the mix is the same all along the stream while each device's jobs stay in order.
/// With an Android app, a share of the devices are Android devices, spread evenly among the others: each
/// sends one key attestation then nine signed requests, every other one with one invalid request among
/// them (signed by another key, or its client data not carrying the challenge it presents).
struct PipelineWorkload: Sendable {
    /// One job message, ready to produce but for its receivedAt.
    struct Message: Sendable {
        let jobId: String
        /// The Kafka key: the keyId in base64, as backends key jobs so that a device's jobs stay in order.
        let key: [UInt8]
        /// The job's JSON object without its closing brace; `line(receivedAt:)` completes it.
        let head: [UInt8]
        let expectedOK: Bool
        /// An Android job (its kind `android_attestation` or `android_assertion`).
        let android: Bool

        /// The job whose JSON object holds `jobId` then `members`, keyed by `keyId`.
        init(jobId: String, keyId: String, expectedOK: Bool, _ members: [(String, JSONValue)]) {
            self.jobId = jobId
            key = Array(keyId.utf8)
            head = Array(JSONValue.object([("jobId", .string(jobId))] + members).serialized().utf8.dropLast())
            self.expectedOK = expectedOK
            android = members.contains { $0.0 == "kind" && ($0.1.stringValue?.hasPrefix("android_") ?? false) }
        }

        /// The job as produced: `head` followed by `"receivedAt"` and the closing brace.
        func line(receivedAt: String) -> [UInt8] {
            head + Array(",\"receivedAt\":\"\(receivedAt)\"}".utf8)
        }
    }

    /// How an invalid assertion is broken.
    private enum Fault {
        /// Signed by another device's key.
        case otherSigner
        /// The counter the previous assertion (or the attestation) left, which is not greater.
        case replayedCounter
    }

    static let assertionsPerDevice = 9
    /// How many devices are interleaved at any point of the stream.
    static let window = 64

    let jobs: [Message]
    /// The indices into `jobs` of each device's jobs, in order.
    let devices: [[Int]]

    /// Mints `count` fresh devices' jobs on `threads` threads: `androidDevices` of them (at most `count`)
    /// Android devices of `android`, the others Apple devices. jobIds are `<prefix>-<device>-<n>` for Apple
    /// devices and `<prefix>-a<device>-<n>` for Android ones, each platform's devices numbered from 0.
    static func mint(
        pki: TestPKI, teamId: String, bundleId: String, devices count: Int, prefix: String, threads: Int,
        android: BenchAndroidApp? = nil, androidDevices: Int = 0
    ) throws -> PipelineWorkload {
        let androidCount = android == nil ? 0 : min(max(0, androidDevices), count)
        let appleCount = count - androidCount
        let stranger = try Device()
        let androidStranger = try AndroidDeviceKey()
        let sequences = try concurrentMap(count, threads: threads) { s -> [Message] in
            switch slot(s, of: count, android: androidCount) {
            case .apple(let d):
                return try mintDevice(d, pki: pki, teamId: teamId, bundleId: bundleId, prefix: prefix, stranger: stranger)
            case .android(let d):
                return try mintAndroidDevice(d, app: android!, prefix: prefix, stranger: androidStranger)
            }
        }
        precondition(sequences.count == appleCount + androidCount)
        return interleave(sequences)
    }

    /// How many of `devices` devices are Android ones at `share` (0…1) of them.
    static func androidDevices(_ devices: Int, share: Double) -> Int {
        min(devices, max(0, Int((Double(devices) * share).rounded())))
    }

    private enum Slot { case apple(Int), android(Int) }

    /// The platform and per-platform number of the device in slot `s`: the `android` Android devices spread
    /// evenly over the `count` slots.
    private static func slot(_ s: Int, of count: Int, android: Int) -> Slot {
        let before = s * android / count
        let through = (s + 1) * android / count
        return through > before ? .android(before) : .apple(s - before)
    }

    /// One device's attestation and assertions. Odd devices carry one invalid assertion, at a position
    /// and of a kind that vary from device to device.
    private static func mintDevice(
        _ d: Int, pki: TestPKI, teamId: String, bundleId: String, prefix: String, stranger: Device
    ) throws -> [Message] {
        let device = try Device()
        let keyId = Base64.encode(device.keyId)
        let invalidAt = d % 2 == 1 ? 1 + (d / 2) % assertionsPerDevice : nil
        let fault = (d / 2) % 2 == 1 ? Fault.replayedCounter : .otherSigner
        var sequence = [Message]()
        func job(_ n: Int, _ members: [(String, JSONValue)], ok: Bool) {
            sequence.append(Message(jobId: "\(prefix)-\(d)-\(n)", keyId: keyId, expectedOK: ok, members))
        }
        let common: [(String, JSONValue)] = [
            ("teamId", .string(teamId)), ("bundleId", .string(bundleId)), ("keyId", .string(keyId)),
        ]

        let attestationHash = Digest.sha256.hash(Array("\(prefix)-\(d)-0".utf8))
        let attestation = try pki.mintAttestation(
            device: device, teamId: teamId, bundleId: bundleId, clientDataHash: attestationHash, at: Date())
        job(0, [("kind", .string("attestation"))] + common + [
            ("attestationObject", .string(Base64.encode(attestation.attestationObject))),
            ("clientDataHash", .string(Base64.encode(attestationHash))),
        ], ok: true)

        var counter: UInt32 = 0
        for n in 1...assertionsPerDevice {
            let clientDataHash = Digest.sha256.hash(Array("\(prefix)-\(d)-\(n)".utf8))
            let valid = n != invalidAt
            let assertion = try device.mintAssertion(
                teamId: teamId, bundleId: bundleId, clientDataHash: clientDataHash,
                counter: !valid && fault == .replayedCounter ? counter : counter + 1,
                options: AssertionOptions(signingDevice: !valid && fault == .otherSigner ? stranger : nil))
            if valid { counter += 1 }
            job(n, [("kind", .string("assertion"))] + common + [
                ("assertion", .string(Base64.encode(assertion.assertion))),
                ("clientDataHash", .string(Base64.encode(clientDataHash))),
            ], ok: valid)
        }
        return sequence
    }

    /// One Android device's key attestation and signed requests. Odd devices carry one invalid request, at
    /// a position that varies from device to device: signed by another key, or its client data carrying
    /// another challenge than the one it presents.
    private static func mintAndroidDevice(
        _ d: Int, app: BenchAndroidApp, prefix: String, stranger: AndroidDeviceKey
    ) throws -> [Message] {
        let key = try AndroidDeviceKey()
        let invalidAt = d % 2 == 1 ? 1 + (d / 2) % assertionsPerDevice : nil
        let otherSigner = (d / 2) % 2 == 0
        var sequence = [try app.attestation(key, jobId: "\(prefix)-a\(d)-0", expectedOK: true)]
        for n in 1...assertionsPerDevice {
            let jobId = "\(prefix)-a\(d)-\(n)"
            guard n == invalidAt else {
                sequence.append(try app.assertion(key, jobId: jobId, expectedOK: true))
                continue
            }
            sequence.append(try otherSigner
                ? app.assertion(key, jobId: jobId, signer: stranger, expectedOK: false)
                : app.assertion(key, jobId: jobId, presented: Base64.encode(Digest.sha256.hash(Array("\(jobId)-other".utf8))), expectedOK: false))
        }
        return sequence
    }

    /// Merges the devices' sequences: a random pick among up to `window` devices in progress each time.
    private static func interleave(_ sequences: [[Message]]) -> PipelineWorkload {
        var jobs = [Message]()
        jobs.reserveCapacity(sequences.reduce(0) { $0 + $1.count })
        var devices = [[Int]](repeating: [], count: sequences.count)
        var active = [(device: Int, next: Int)]()
        var started = 0
        while started < sequences.count || !active.isEmpty {
            while active.count < window && started < sequences.count {
                active.append((started, 0))
                started += 1
            }
            let pick = Int.random(in: 0..<active.count)
            let (device, next) = active[pick]
            devices[device].append(jobs.count)
            jobs.append(sequences[device][next])
            if next + 1 < sequences[device].count {
                active[pick].next = next + 1
            } else {
                active.swapAt(pick, active.count - 1)
                active.removeLast()
            }
        }
        return PipelineWorkload(jobs: jobs, devices: devices)
    }

    /// Verifies the jobs of the devices in `range` in this process, as the worker's deciding step does but
    /// with no broker and no database: parse the line, decide against the device state kept in memory (the
    /// key an attestation verified, the counter the last accepted assertion left), serialize the verdict.
    /// The devices are spread over `threads` threads, each device's jobs in order. Returns how many jobs,
    /// how long it took, the calling thread's CPU time over the same span (every job's with one thread,
    /// which runs them on the caller) and how many verdicts disagreed with the expected outcome.
    /// `app`: the app's rules, its Android policy among them when the stream has Android devices.
    func verifyInProcess(
        _ range: Range<Int>, verifier: JobVerifier, app: AppRules, threads: Int
    ) -> (jobs: Int, seconds: Double, callerCPUSeconds: Double, unexpected: Int) {
        let receivedAt = verifier.clock.now().rfc3339
        let groups = devices[range]
        let lines = groups.map { $0.map { jobs[$0].line(receivedAt: receivedAt) } }
        let start = DispatchTime.now().uptimeNanoseconds
        let cpuStart = CoreBenchmark.threadCPUNanoseconds()
        let unexpected = concurrentMap(lines.count, threads: threads) { g in
            var device = DeviceState()
            return zip(groups[groups.startIndex + g], lines[g]).count { i, line in
                Self.decide(line, verifier: verifier, app: app, device: &device).ok != jobs[i].expectedOK
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpuSeconds = Double(CoreBenchmark.threadCPUNanoseconds() - cpuStart) / 1e9
        return (lines.reduce(0) { $0 + $1.count }, seconds, cpuSeconds, unexpected.reduce(0, +))
    }

    /// What the worker's store holds for one device's key, kept in memory by the in-process run.
    struct DeviceState {
        /// An Apple key: its public key and the counter the last accepted assertion left.
        var apple: StoredDevice?
        /// An Android key: the attested leaf's SubjectPublicKeyInfo.
        var android: AttestedAndroidKey?
    }

    /// One job of the in-process run, read as the worker reads a record (either platform); `device` is
    /// the state this job's key has so far.
    static func decide(_ line: [UInt8], verifier: JobVerifier, app: AppRules, device: inout DeviceState) -> Verdict {
        guard case .success(.job(let job)) = RecordClassifier().classify(value: line, bytes: line.count) else {
            return verifier.rejection(jobId: nil, VerificationFailure(.jobInvalid, .invalidField, "not a job"))
        }
        let key = device.apple.map { AttestedKey(device: $0, environment: nil) }
        let checked = verifier.check(
            job, JobCheckInputs(now: verifier.clock.now(), app: app, key: key, androidKey: device.android))
        switch checked.verified {
        case .attestation(let verified)?:
            device.apple = StoredDevice(publicKey: verified.key, counter: verified.counter)
        case .assertion(let verified)?:
            device.apple?.counter = verified.counter
        case .androidAttestation(let verified)?:
            device.android = AttestedAndroidKey(subjectPublicKeyInfo: verified.subjectPublicKeyInfo)
        case .androidAssertion?, nil:
            break
        }
        let verdict = checked.verdict
        // The worker stores and publishes this text: serializing it is part of deciding.
        _ = verdict.json.serialized()
        return verdict
    }
}
