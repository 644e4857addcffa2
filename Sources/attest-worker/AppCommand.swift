import AttestCLI
import AttestCore
import AttestJobs
import AttestTokens
import AttestVerifier
import DeviceIntelligence
import PostgresClient
import Store
import Worker

/// `attest-worker app add|set|list`: registers apps and their policy (CONTRACT 5).
enum AppCommand: Subcommand {
    static let help = """
        usage: attest-worker app add --team T --bundle B [policy options]
               attest-worker app add --android-package P --android-signing-digests D[,D...] [policy options]
               attest-worker app set --team T --bundle B [policy options]
               attest-worker app set --android-package P [policy options]
               attest-worker app list [--json]

        An app has an App ID (--team, --bundle), an Android package, or both: one app for monthly counts,
        quotas, tokens and events whatever the platform. An app with a package only is named android.P.

        policy options:
          --environments production|development|any|production,development   (default production)
          --challenges worker|backend      who issues challenges (default backend)
          --mad-limit N                    monthly active device limit (default none)
          --grace-days D                   grace period once the limit is reached (default 7)
          --token-lifetime SECONDS         verdict token lifetime (default 3600)
          --risk-weights JSON              risk weights per factor and the expected extension values, e.g.
                                           {"counter_replay": 20, "minimum_bundle_version": "2.1"}; replaces
                                           the app's settings ({} restores the defaults; docs/device-intelligence.md)
          --claims JSON                    custom claims every verdict token of the app carries, e.g.
                                           {"tier": "gold"}; replaces the app's claims ({} removes them). An
                                           object of at most 4096 bytes, 32 members and 4 levels; names the
                                           token sets itself (iss, sub, aud, exp, nbf, iat, jti, kind, deviceId,
                                           subjectId, environment, riskCategory, limitedUse) are refused
          --limited-use-assertions required|optional
                                           required: every accepted assertion gets a limited-use token, one
                                           that POST /v1/tokens/consume spends once (default optional: only
                                           jobs with "limitedUse": true get one)
          --limited-use-lifetime SECONDS|none
                                           lifetime of limited-use tokens, at most --token-lifetime (default
                                           none: the same as --token-lifetime)

        Android options (an app with an App ID gains or changes its package with them; none removes it):
          --android-package P|none         the package its Android jobs name
          --android-signing-digests D[,D]  SHA-256 of each signing certificate, hex as apksigner or keytool
                                           print it (required with a package; at most 16)
          --android-require-strongbox yes|no     refuse keys outside StrongBox (default no)
          --android-require-verified-boot yes|no refuse unlocked or unverified devices (default no: risk factors)
          --android-min-patch-level YYYYMM|none  oldest OS patch level accepted (default none)
          --android-min-os-version N|none        oldest OS version accepted, as KeyMint writes it (140000 is
                                                 Android 14; default none)

        \(DatabaseOptions.help)
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let team = try args.option("team")
        let bundle = try args.option("bundle")
        let environments = try args.option("environments")
        let challenges = try args.option("challenges")
        let madLimit = try args.option("mad-limit")
        let graceDays = try args.option("grace-days")
        let tokenLifetime = try args.option("token-lifetime")
        let riskWeights = try args.option("risk-weights")
        let claims = try args.option("claims")
        let limitedUseAssertions = try args.option("limited-use-assertions")
        let limitedUseLifetime = try args.option("limited-use-lifetime")
        let androidPackage = try args.option("android-package")
        let signingDigests = try args.option("android-signing-digests")
        let requireStrongBox = try args.option("android-require-strongbox")
        let requireVerifiedBoot = try args.option("android-require-verified-boot")
        let minPatchLevel = try args.option("android-min-patch-level")
        let minOSVersion = try args.option("android-min-os-version")
        let url = try DatabaseOptions.url(&args)
        let positionals = try args.positionals(max: 1)
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: url, retryTimeout: .seconds(10)))
        switch positionals.first {
        case "list":
            let apps = try store.apps().values.sorted { $0.app < $1.app }
            if json {
                print(JSONValue.array(apps.map(describe)).serialized())
            } else {
                for app in apps {
                    print("\(app.app.appId)\tenvironments=\(app.environments.rawValue)\tchallenges=\(app.challenges.rawValue)\tmad-limit=\(app.madLimit.map(String.init) ?? "none")\tgrace-days=\(app.graceDays)\ttoken-lifetime=\(app.tokenLifetimeSeconds)\trisk-weights=\(app.risk.json.serialized())\tclaims=\(app.claims.json.serialized())\tlimited-use-assertions=\(app.limitedUseAssertions ? "required" : "optional")\tlimited-use-lifetime=\(app.limitedUseLifetimeSeconds.map(String.init) ?? "none")\tandroid-package=\(app.android?.packageName ?? "none")")
                }
            }
            return 0
        case "add", "set":
            let identity: AppIdentity
            if team == nil, bundle == nil, let androidPackage, androidPackage != "none" {
                guard AndroidJob.packageNameProblem(androidPackage) == nil else {
                    throw Arguments.UsageError(description: "--android-package: \(AndroidJob.packageNameProblem(androidPackage)!)")
                }
                identity = AppIdentity(androidPackage: androidPackage)
            } else {
                identity = try Arguments.app(team: team, bundle: bundle, for: "app \(positionals[0])")
            }
            let existing = try store.apps()[identity]
            if positionals[0] == "add" && existing != nil {
                throw Arguments.UsageError(description: "app \(identity.appId) exists; use app set")
            }
            if positionals[0] == "set" && existing == nil {
                throw Arguments.UsageError(description: "app \(identity.appId) is not registered; use app add")
            }
            var app = existing ?? AppPolicy(teamId: identity.teamId, bundleId: identity.bundleId)
            if let environments { app.environments = try parseEnvironments(environments) }
            if let challenges {
                guard let mode = AppPolicy.ChallengeMode(rawValue: challenges) else {
                    throw Arguments.UsageError(description: "--challenges must be worker or backend")
                }
                app.challenges = mode
            }
            if let madLimit { app.madLimit = madLimit == "none" ? nil : try Arguments.wholeNumber(madLimit, "--mad-limit", min: 0) }
            if let graceDays { app.graceDays = try Arguments.wholeNumber(graceDays, "--grace-days", min: 0) }
            if let tokenLifetime { app.tokenLifetimeSeconds = try Arguments.wholeNumber(tokenLifetime, "--token-lifetime", min: 1) }
            if let riskWeights { app.risk = try parseRisk(riskWeights) }
            if let claims {
                do {
                    app.claims = try CustomClaims(text: claims)
                } catch {
                    throw Arguments.UsageError(description: "--claims: \(error.description)")
                }
            }
            if let limitedUseAssertions {
                guard ["required", "optional"].contains(limitedUseAssertions) else {
                    throw Arguments.UsageError(description: "--limited-use-assertions must be required or optional")
                }
                app.limitedUseAssertions = limitedUseAssertions == "required"
            }
            if let limitedUseLifetime {
                app.limitedUseLifetimeSeconds =
                    limitedUseLifetime == "none" ? nil : try Arguments.wholeNumber(limitedUseLifetime, "--limited-use-lifetime", min: 1)
            }
            try applyAndroid(
                to: &app, package: androidPackage, digests: signingDigests, strongBox: requireStrongBox, verifiedBoot: requireVerifiedBoot,
                minPatchLevel: minPatchLevel, minOSVersion: minOSVersion)
            try store.upsert(app)
            print(describe(app).serialized())
            return 0
        default:
            throw Arguments.UsageError(description: "app needs add, set or list")
        }
    }

    /// The Android options over the app's registration: a package needs signers, an app named by its package
    /// keeps it, and options without a package need one already registered.
    private static func applyAndroid(
        to app: inout AppPolicy, package: String?, digests: String?, strongBox: String?, verifiedBoot: String?,
        minPatchLevel: String?, minOSVersion: String?
    ) throws {
        if package == "none" {
            guard !app.app.isAndroidOnly else {
                throw Arguments.UsageError(description: "--android-package none: \(app.app.appId) is named by its package")
            }
            app.android = nil
            return
        }
        if let package {
            guard AndroidJob.packageNameProblem(package) == nil else {
                throw Arguments.UsageError(description: "--android-package: \(AndroidJob.packageNameProblem(package)!)")
            }
            if app.app.isAndroidOnly && app.app.bundleId != package {
                throw Arguments.UsageError(description: "--android-package: \(app.app.appId) is named by its package \(app.app.bundleId)")
            }
            var android = app.android ?? AndroidPolicy(packageName: package, signingCertificateDigests: [])
            android.packageName = package
            app.android = android
        }
        let touched = [digests, strongBox, verifiedBoot, minPatchLevel, minOSVersion].contains { $0 != nil }
        guard var android = app.android else {
            if touched { throw Arguments.UsageError(description: "Android options need --android-package") }
            return
        }
        if let digests {
            var parsed = Set<[UInt8]>()
            for text in digests.split(separator: ",", omittingEmptySubsequences: false) {
                guard let digest = AndroidJob.signingCertificateDigest(String(text)) else {
                    throw Arguments.UsageError(description: "--android-signing-digests: \(text) is not a hex SHA-256 digest")
                }
                parsed.insert(digest)
            }
            guard parsed.count <= AndroidJob.maxSigningCertificateDigests else {
                throw Arguments.UsageError(description: "--android-signing-digests: at most \(AndroidJob.maxSigningCertificateDigests)")
            }
            android.signingCertificateDigests = parsed
        }
        if let strongBox { android.requireStrongBox = try yesNo(strongBox, "--android-require-strongbox") }
        if let verifiedBoot { android.requireVerifiedBoot = try yesNo(verifiedBoot, "--android-require-verified-boot") }
        if let minPatchLevel {
            if minPatchLevel == "none" {
                android.minimumOSPatchLevel = nil
            } else {
                let level = try Arguments.wholeNumber(minPatchLevel, "--android-min-patch-level", min: 190001)
                guard level <= 999912, (1...12).contains(level % 100) else {
                    throw Arguments.UsageError(description: "--android-min-patch-level must be YYYYMM")
                }
                android.minimumOSPatchLevel = level
            }
        }
        if let minOSVersion {
            android.minimumOSVersion = minOSVersion == "none" ? nil : try Arguments.wholeNumber(minOSVersion, "--android-min-os-version", min: 0)
        }
        guard !(android.signingCertificateDigests ?? []).isEmpty else {
            throw Arguments.UsageError(description: "--android-signing-digests is required with an Android package")
        }
        app.android = android
    }

    private static func yesNo(_ text: String, _ flag: String) throws -> Bool {
        guard text == "yes" || text == "no" else { throw Arguments.UsageError(description: "\(flag) must be yes or no") }
        return text == "yes"
    }

    static func parseEnvironments(_ text: String) throws -> EnvironmentPolicy {
        let parts = Set(text.split(separator: ",").map(String.init))
        switch parts {
        case ["production"]: return .production
        case ["development"]: return .development
        case ["any"], ["production", "development"]: return .any
        default: throw Arguments.UsageError(description: "--environments must be production, development, any or production,development")
        }
    }

    private static func parseRisk(_ text: String) throws -> RiskPolicy {
        guard let json = JSONValue.parse(Array(text.utf8)) else {
            throw Arguments.UsageError(description: "--risk-weights must be a JSON object")
        }
        do {
            return try RiskPolicy(json: json)
        } catch {
            throw Arguments.UsageError(description: "--risk-weights: \(error.description)")
        }
    }

    private static func describe(_ app: AppPolicy) -> JSONValue {
        .object([
            ("teamId", .string(app.teamId)), ("bundleId", .string(app.bundleId)),
            ("environments", .string(app.environments.rawValue)), ("challenges", .string(app.challenges.rawValue)),
            ("madLimit", app.madLimit.map { .int(Int64($0)) } ?? .null), ("graceDays", .int(Int64(app.graceDays))),
            ("tokenLifetimeSeconds", .int(Int64(app.tokenLifetimeSeconds))), ("riskWeights", app.risk.json),
            ("claims", app.claims.json), ("limitedUseAssertions", .bool(app.limitedUseAssertions)),
            ("limitedUseLifetimeSeconds", app.limitedUseLifetimeSeconds.map { .int(Int64($0)) } ?? .null),
            ("android", app.android.map { android in
                .object([
                    ("packageName", .string(android.packageName)),
                    ("signingCertificateDigests", .array((android.signingCertificateDigests ?? []).map(Hex.encode).sorted().map(JSONValue.string))),
                    ("requireStrongBox", .bool(android.requireStrongBox)), ("requireVerifiedBoot", .bool(android.requireVerifiedBoot)),
                    ("minimumOSPatchLevel", android.minimumOSPatchLevel.map { .int(Int64($0)) } ?? .null),
                    ("minimumOSVersion", android.minimumOSVersion.map { .int(Int64($0)) } ?? .null),
                ])
            } ?? .null),
        ])
    }
}
