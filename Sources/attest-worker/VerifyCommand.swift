import AttestCLI
import AttestCore
import AttestJobs
import AttestTokens
import AttestVerifier
import DeviceIntelligence
import Foundation

/// `attest-worker verify [FILE]`: jobs as JSON lines from FILE or stdin, one verdict line per job on stdout,
/// in order, with no services. Flags give the policy, the clock and the trust anchors.
enum VerifyCommand: Subcommand {
    static let help = """
        usage: attest-worker verify [FILE] [options]

        Reads jobs (JSON lines; `kind` attestation|assertion, or inferred from attestationObject/assertion;
        android_attestation|android_assertion) from FILE or stdin and prints one verdict (JSON) per job on
        stdout, in order. Assertion lines carry the stored device state: `publicKey` (base64 X9.62 point for
        Apple, base64 SubjectPublicKeyInfo for Android; absent or null = unknown key) and, for Apple,
        `previousCounter`. Android attestation lines may carry `signingCertificateDigests` (hex SHA-256)
        standing in for the app's registration; without them the signer is not checked. Logs and warnings go to stderr. `deviceIntelligence` reflects the job alone under
        the default risk weights; its deviceId is the job's, else the keyId (there is no store to keep one).

        options:
          --now RFC3339                 the clock (default: the system clock)
          --environment production|development|any
                                        the environments accepted (default: production)
          --trust-anchor PEM            replaces the Apple App Attestation Root CA
          --receipt-trust-anchor PEM    replaces Apple Root CA - G3
          --android-trust-anchor PEM    replaces Google's pinned Android root keys with the keys of the
                                        certificates in PEM
          --android-status-list FILE    Google's certificate status list (JSON) to refuse listed certificates
          --android-require-strongbox   refuse Android keys outside StrongBox
          --android-require-verified-boot
                                        refuse Android devices not VERIFIED or with an unlocked bootloader
                                        (default: accept them, as risk factors)
          --android-min-patch-level YYYYMM
                                        refuse Android OS patch levels older than this
          --android-min-os-version N    refuse Android OS versions below N (Android 14 = 140000)
          --max-job-age SECONDS         oldest receivedAt accepted (default 86400)
          --max-future-skew SECONDS     newest receivedAt accepted, ahead of now (default 60)
          --token-key PEM               sign a verdict token on every accepted verdict with this P-256
                                        key, as the worker does (repeatable: the first signs)
          --token-lifetime SECONDS      token lifetime (default 3600)
          --token-issuer NAME           the tokens' iss claim (default attest-worker)

        Exit status: 0 when every line was processed, 2 on usage or I/O errors.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let clock: any Clock
        if let text = try args.option("now") {
            guard let instant = Timestamp(rfc3339: text) else {
                throw Arguments.UsageError(description: "--now \(text) is not an RFC 3339 time")
            }
            clock = FixedClock(instant)
        } else {
            clock = SystemClock()
        }
        let environmentText = try args.option("environment") ?? "production"
        guard let policy = EnvironmentPolicy(rawValue: environmentText) else {
            throw Arguments.UsageError(description: "--environment must be production, development or any")
        }
        let trust = try TrustOptions.load(
            attestation: args.option("trust-anchor"), receipt: args.option("receipt-trust-anchor"))
        let androidTrust = try TrustOptions.android(anchors: args.option("android-trust-anchor"), statusList: args.option("android-status-list"))
        var android = AndroidPolicy(packageName: "", signingCertificateDigests: nil)
        android.requireStrongBox = args.flag("android-require-strongbox")
        android.requireVerifiedBoot = args.flag("android-require-verified-boot")
        android.minimumOSPatchLevel = try args.integer("android-min-patch-level", min: 0)
        android.minimumOSVersion = try args.integer("android-min-os-version", min: 0)
        var bounds = JobVerifier.TimeBounds()
        if let text = try args.option("max-job-age") { bounds.maxAgeSeconds = try seconds(text, "--max-job-age") }
        if let text = try args.option("max-future-skew") {
            bounds.maxFutureSkewSeconds = try seconds(text, "--max-future-skew")
        }
        let tokens = try TokenOptions.parse(&args)
        let files = try args.positionals(max: 1)
        let input = try LineReader(path: files.first.flatMap { $0 == "-" ? nil : $0 })
        let verifier = JobVerifier(trust: trust, androidTrust: androidTrust, clock: clock, timeBounds: bounds)
        var output = [UInt8]()
        while let line = try input.next() {
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            try verdict(for: line, verifier: verifier, policy: policy, android: android, tokens: tokens).json.write(to: &output)
            output.append(UInt8(ascii: "\n"))
            if output.count > 1 << 16 { flush(&output) }
        }
        flush(&output)
        return 0
    }

    /// Verdict tokens as the worker issues them, when `--token-key` is given.
    struct TokenOptions {
        let signer: TokenSigner
        let lifetimeSeconds: Int64

        static func parse(_ args: inout Arguments) throws -> TokenOptions? {
            var paths = [String]()
            while let path = try args.option("token-key") { paths.append(path) }
            let lifetime = try args.option("token-lifetime")
            let issuer = try args.option("token-issuer")
            guard !paths.isEmpty else {
                if lifetime != nil || issuer != nil {
                    throw Arguments.UsageError(description: "--token-lifetime and --token-issuer need --token-key")
                }
                return nil
            }
            var lifetimeSeconds = TokenSigner.defaultLifetimeSeconds
            if let lifetime {
                guard let value = Int64(lifetime), (1...TokenSigner.maxLifetimeSeconds).contains(value) else {
                    throw Arguments.UsageError(
                        description: "--token-lifetime must be a whole number of seconds from 1 to \(TokenSigner.maxLifetimeSeconds)")
                }
                lifetimeSeconds = value
            }
            do {
                return TokenOptions(
                    signer: try TokenSigner(pemFiles: paths, issuer: issuer ?? TokenSigner.defaultIssuer),
                    lifetimeSeconds: lifetimeSeconds)
            } catch {
                throw Arguments.UsageError(description: "--token-key: \(error)")
            }
        }
    }

    /// The worker's check list run offline (``JobVerifier/offlineVerdict(for:policy:)``), then the token.
    static func verdict(
        for line: String, verifier: JobVerifier, policy: EnvironmentPolicy, android: AndroidPolicy, tokens: TokenOptions?
    ) throws -> Verdict {
        var verdict = verifier.offlineVerdict(for: line, policy: policy, android: android)
        if let tokens, let intelligence = verdict.deviceIntelligence {
            // A line asking for a limited-use token gets the one the worker would sign (claim and jti).
            try verdict.attachToken(
                signer: tokens.signer, lifetimeSeconds: tokens.lifetimeSeconds, deviceId: intelligence.deviceId,
                riskCategory: intelligence.assessment.category.rawValue, limitedUse: verdict.limitedUseRequested)
        }
        return verdict
    }

    private static func flush(_ output: inout [UInt8]) {
        FileHandle.standardOutput.write(Data(output))
        output.removeAll(keepingCapacity: true)
    }

    private static func seconds(_ text: String, _ name: String) throws -> Int64 {
        guard let value = Int64(text), value >= 0 else {
            throw Arguments.UsageError(description: "\(name) must be a whole number of seconds")
        }
        return value
    }
}
