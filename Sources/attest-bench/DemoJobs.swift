import AttestCLI
import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import AttestVerifier
import Foundation

/// `attest-bench demo-jobs`: what `ops/run --demo` feeds a worker, so that a newcomer sees real verdicts
/// without an iPhone. Minting stays in attest-bench (the worker links none of it); the worker is told to
/// trust the fresh test PKI through its trust-anchor override, which it logs as a warning.
struct DemoJobs: Subcommand {
    static let help = """
        usage: attest-bench demo-jobs --out DIR [--devices N] [--android-devices M] [--team T] [--bundle B]
                                      [--android-package P]

        Mints a fresh test PKI and a fresh Android test PKI and writes into DIR:
          attestation-root.pem, receipt-root.pem   the trust anchors (ATTEST_TRUST_ANCHORS,
          android-root.pem                         ATTEST_RECEIPT_TRUST_ANCHORS, ATTEST_ANDROID_TRUST_ANCHORS
                                                   of the worker)
          android-app.txt                          one line: the app's Android package P and the SHA-256 of
                                                   its signing certificate in hex (a fixed value), for
                                                   `attest-worker app add --android-package P
                                                   --android-signing-digests D`
          jobs.jsonl                               one job a line, receivedAt now, for `attest-worker submit`
        The jobs are the pipeline benchmark's stream for N Apple devices (default 6) of app T.B (default
        DEMO123456.com.example.demo) and M Android devices (default N / 2, at least 2) of its package P
        (default com.example.demo): each Apple device attests, then signs nine assertions, and every other
        one sends one assertion signed by another key or replaying its counter; each Android device sends
        its key attestation, then nine requests it signed, and every other one sends one request signed by
        another key or whose client data lacks its challenge. Among them six jobs broken otherwise: an
        attestation under another root, one whose clientDataHash is not the one it signed, an assertion of
        a key never attested, a job of an app that is not registered, an Android key attestation under
        another root and an Android request of a key never attested.
        Register the app first (`attest-worker app add --team T --bundle B --android-package P
        --android-signing-digests D`, D from android-app.txt). Prints the number of jobs and of jobs minted
        valid to stderr.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        guard let out = try args.option("out") else { throw Arguments.UsageError(description: "demo-jobs needs --out DIR") }
        let devices = try args.integer("devices", min: 1) ?? 6
        let androidDevices = try args.integer("android-devices", min: 0) ?? max(2, devices / 2)
        let app = try Arguments.app(team: try args.option("team") ?? "DEMO123456", bundle: try args.option("bundle") ?? "com.example.demo", for: "demo-jobs")
        let package = try args.option("android-package") ?? "com.example.demo"
        _ = try args.positionals(max: 0)
        guard AndroidJob.packageNameProblem(package) == nil else {
            throw Arguments.UsageError(description: "--android-package: \(AndroidJob.packageNameProblem(package)!)")
        }

        let directory = URL(fileURLWithPath: out)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let now = Date()
        let pki = try TestPKI.generate(validFrom: now.addingTimeInterval(-86_400), validUntil: now.addingTimeInterval(30 * 86_400))
        let android = try BenchAndroidApp(
            packageName: package, validFrom: now.addingTimeInterval(-86_400), validUntil: now.addingTimeInterval(30 * 86_400))
        let jobs = try stream(pki: pki, android: android, app: app, devices: devices, androidDevices: androidDevices, now: now)
        let receivedAt = SystemClock().now().rfc3339
        let lines = jobs.map { String(decoding: $0.line(receivedAt: receivedAt), as: UTF8.self) + "\n" }
        try pki.attestationRootPEM.write(to: directory.appendingPathComponent("attestation-root.pem"), atomically: true, encoding: .utf8)
        try pki.receiptRootPEM.write(to: directory.appendingPathComponent("receipt-root.pem"), atomically: true, encoding: .utf8)
        try android.pki.rootPEM.write(to: directory.appendingPathComponent("android-root.pem"), atomically: true, encoding: .utf8)
        try "\(package) \(android.signerHex)\n".write(
            to: directory.appendingPathComponent("android-app.txt"), atomically: true, encoding: .utf8)
        try lines.joined().write(to: directory.appendingPathComponent("jobs.jsonl"), atomically: true, encoding: .utf8)
        FileHandle.standardError.write(Data(
            ("demo-jobs: \(jobs.count) jobs for \(app.appId) (\(jobs.count { $0.android }) Android jobs of \(package)), "
                + "\(jobs.count { $0.expectedOK }) minted valid, in \(out)\n").utf8))
        return 0
    }

    /// The pipeline workload's jobs for `devices` Apple and `androidDevices` Android devices, with the six
    /// others spread through it (each on a key of its own, so no device's order changes).
    static func stream(
        pki: TestPKI, android: BenchAndroidApp, app: AppIdentity, devices: Int, androidDevices: Int, now: Date
    ) throws -> [PipelineWorkload.Message] {
        let prefix = "demo-\(UUID().uuidString.prefix(8).lowercased())"
        var jobs = try PipelineWorkload.mint(
            pki: pki, teamId: app.teamId, bundleId: app.bundleId, devices: devices + androidDevices, prefix: prefix,
            threads: ProcessInfo.processInfo.activeProcessorCount, android: android, androidDevices: androidDevices
        ).jobs
        let broken = try brokenJobs(pki: pki, app: app, prefix: prefix, now: now)
            + brokenAndroidJobs(android, prefix: prefix, now: now)
        for (n, job) in broken.enumerated() {
            jobs.insert(job, at: jobs.count * (n + 1) / (broken.count + 1))
        }
        return jobs
    }

    /// Failures of other steps than the workload's two (signature, counter), one fresh device each.
    private static func brokenJobs(pki: TestPKI, app: AppIdentity, prefix: String, now: Date) throws -> [PipelineWorkload.Message] {
        func attestation(_ jobId: String, _ device: Device, _ object: [UInt8], _ clientDataHash: [UInt8], bundleId: String? = nil) -> PipelineWorkload.Message {
            let keyId = Base64.encode(device.keyId)
            return PipelineWorkload.Message(jobId: jobId, keyId: keyId, expectedOK: false, [
                ("kind", .string("attestation")), ("teamId", .string(app.teamId)), ("bundleId", .string(bundleId ?? app.bundleId)),
                ("keyId", .string(keyId)), ("attestationObject", .string(Base64.encode(object))),
                ("clientDataHash", .string(Base64.encode(clientDataHash))),
            ])
        }
        let hash = Digest.sha256.hash(Array("\(prefix)-broken".utf8))

        // apple_validation_failed/certificate_chain_invalid: same names, another root's keys.
        let stranger = try Device()
        let otherPKI = try TestPKI.generate(validFrom: now.addingTimeInterval(-86_400), validUntil: now.addingTimeInterval(86_400))
        let untrusted = try otherPKI.mintAttestation(device: stranger, teamId: app.teamId, bundleId: app.bundleId, clientDataHash: hash, at: now)

        // apple_validation_failed/nonce_mismatch: the job's clientDataHash is not the one the device signed.
        let tampered = try Device()
        let signed = try pki.mintAttestation(device: tampered, teamId: app.teamId, bundleId: app.bundleId, clientDataHash: hash, at: now)

        // reattest_required/unknown_key: an authentic assertion of a key the worker never saw attested.
        let unknown = try Device()
        let unknownKeyId = Base64.encode(unknown.keyId)
        let assertion = try unknown.mintAssertion(teamId: app.teamId, bundleId: app.bundleId, clientDataHash: hash, counter: 1)

        // job_invalid/unknown_app: a valid attestation of an app nobody registered.
        let unregistered = "\(app.bundleId).unregistered"
        let foreign = try Device()
        let foreignObject = try pki.mintAttestation(device: foreign, teamId: app.teamId, bundleId: unregistered, clientDataHash: hash, at: now)

        return [
            attestation("\(prefix)-untrusted-root", stranger, untrusted.attestationObject, hash),
            attestation("\(prefix)-wrong-client-data", tampered, signed.attestationObject, Digest.sha256.hash(hash)),
            PipelineWorkload.Message(jobId: "\(prefix)-never-attested", keyId: unknownKeyId, expectedOK: false, [
                ("kind", .string("assertion")), ("teamId", .string(app.teamId)), ("bundleId", .string(app.bundleId)),
                ("keyId", .string(unknownKeyId)), ("assertion", .string(Base64.encode(assertion.assertion))),
                ("clientDataHash", .string(Base64.encode(hash))),
            ]),
            attestation("\(prefix)-unregistered-app", foreign, foreignObject.attestationObject, hash, bundleId: unregistered),
        ]
    }

    /// Android failures of other steps than the workload's two (signature, challenge), one fresh key each.
    private static func brokenAndroidJobs(_ android: BenchAndroidApp, prefix: String, now: Date) throws -> [PipelineWorkload.Message] {
        // android_validation_failed/untrusted_root: a chain of the same shape ending in another root.
        let otherPKI = try AndroidTestPKI.generate(validFrom: now.addingTimeInterval(-86_400), validUntil: now.addingTimeInterval(86_400))
        // reattest_required/unknown_key: an authentic request of a key the worker never saw attested.
        return [
            try android.attestation(try AndroidDeviceKey(), jobId: "\(prefix)-android-untrusted-root", pki: otherPKI, expectedOK: false),
            try android.assertion(try AndroidDeviceKey(), jobId: "\(prefix)-android-never-attested", expectedOK: false),
        ]
    }
}
