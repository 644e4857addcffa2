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
        usage: attest-bench demo-jobs --out DIR [--devices N] [--team T] [--bundle B]

        Mints a fresh test PKI and writes into DIR:
          attestation-root.pem, receipt-root.pem   its trust anchors (ATTEST_TRUST_ANCHORS,
                                                   ATTEST_RECEIPT_TRUST_ANCHORS of the worker)
          jobs.jsonl                               one job a line, receivedAt now, for `attest-worker submit`
        The jobs are the pipeline benchmark's stream for N devices (default 6) of app T.B (default
        DEMO123456.com.example.demo): each device attests, then signs nine assertions, and every other
        device sends one assertion signed by another key or replaying its counter; among them four jobs
        broken otherwise: an attestation under another root, one whose clientDataHash is not the one it
        signed, an assertion of a key never attested, and a job of an app that is not registered.
        Register the app first (`attest-worker app add --team T --bundle B`). Prints the number of jobs
        and of jobs minted valid to stderr.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        guard let out = try args.option("out") else { throw Arguments.UsageError(description: "demo-jobs needs --out DIR") }
        let devices = try args.integer("devices", min: 1) ?? 6
        let app = try Arguments.app(team: try args.option("team") ?? "DEMO123456", bundle: try args.option("bundle") ?? "com.example.demo", for: "demo-jobs")
        _ = try args.positionals(max: 0)

        let directory = URL(fileURLWithPath: out)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let now = Date()
        let pki = try TestPKI.generate(validFrom: now.addingTimeInterval(-86_400), validUntil: now.addingTimeInterval(30 * 86_400))
        let jobs = try stream(pki: pki, app: app, devices: devices, now: now)
        let receivedAt = SystemClock().now().rfc3339
        let lines = jobs.map { String(decoding: $0.line(receivedAt: receivedAt), as: UTF8.self) + "\n" }
        try pki.attestationRootPEM.write(to: directory.appendingPathComponent("attestation-root.pem"), atomically: true, encoding: .utf8)
        try pki.receiptRootPEM.write(to: directory.appendingPathComponent("receipt-root.pem"), atomically: true, encoding: .utf8)
        try lines.joined().write(to: directory.appendingPathComponent("jobs.jsonl"), atomically: true, encoding: .utf8)
        FileHandle.standardError.write(Data(
            "demo-jobs: \(jobs.count) jobs for \(app.appId), \(jobs.count { $0.expectedOK }) minted valid, in \(out)\n".utf8))
        return 0
    }

    /// The pipeline workload's jobs with the four others spread through it (each on a key of its own, so
    /// no device's order changes).
    static func stream(pki: TestPKI, app: AppIdentity, devices: Int, now: Date) throws -> [PipelineWorkload.Message] {
        let prefix = "demo-\(UUID().uuidString.prefix(8).lowercased())"
        var jobs = try PipelineWorkload.mint(
            pki: pki, teamId: app.teamId, bundleId: app.bundleId, devices: devices, prefix: prefix,
            threads: ProcessInfo.processInfo.activeProcessorCount
        ).jobs
        let broken = try brokenJobs(pki: pki, app: app, prefix: prefix, now: now)
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
}
