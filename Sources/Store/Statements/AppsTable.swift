import AttestCore
import AttestJobs
import AttestTokens
import AttestVerifier
import DeviceIntelligence
import PostgresClient

/// The SQL of `apps`: the registered apps and their policies.
enum AppsTable {
    /// What an `AppPolicy` is decoded from: one list, so every statement reading apps reads all of it.
    static let policyColumns =
        "team_id, bundle_id, environments, challenges, mad_limit, grace_days, token_lifetime_seconds, risk_weights, custom_claims, "
        + "limited_use_assertions, limited_use_lifetime_seconds, android_package, "
        + "array_to_string(ARRAY(SELECT encode(d, 'hex') FROM unnest(android_signing_digests) d), ',') AS android_signing_digests, "
        + "android_require_strongbox, android_require_verified_boot, android_min_patch_level, android_min_os_version"

    /// Every registered app.
    struct All: PGStatement {
        typealias Row = AppPolicy

        var query: PGQuery { "SELECT \(unescaped: AppsTable.policyColumns) FROM apps" }
    }

    /// One registered app; no row when it is not registered.
    struct One: PGOptionalRowStatement {
        typealias Row = AppPolicy
        let app: AppIdentity

        init(_ app: AppIdentity) { self.app = app }

        var query: PGQuery {
            """
            SELECT \(unescaped: AppsTable.policyColumns) FROM apps
            WHERE team_id = \(app.teamId) AND bundle_id = \(app.bundleId)
            """
        }
    }

    /// Registers or replaces an app.
    struct Upsert: PGCommandStatement {
        let app: AppPolicy

        init(_ app: AppPolicy) { self.app = app }

        var query: PGQuery {
            let android = app.android
            return """
            INSERT INTO apps (team_id, bundle_id, environments, challenges, mad_limit, grace_days, token_lifetime_seconds,
                risk_weights, custom_claims, limited_use_assertions, limited_use_lifetime_seconds, android_package,
                android_signing_digests, android_require_strongbox, android_require_verified_boot, android_min_patch_level,
                android_min_os_version)
            VALUES (\(app.teamId), \(app.bundleId), \(app.environments.rawValue), \(app.challenges.rawValue), \(app.madLimit),
                \(app.graceDays), \(app.tokenLifetimeSeconds), \(app.risk.json)::jsonb, \(app.claims.json)::jsonb,
                \(app.limitedUseAssertions), \(app.limitedUseLifetimeSeconds), \(android?.packageName),
                \((android?.signingCertificateDigests ?? []).sorted { $0.lexicographicallyPrecedes($1) })::bytea[],
                \(android?.requireStrongBox ?? false), \(android?.requireVerifiedBoot ?? false), \(android?.minimumOSPatchLevel),
                \(android?.minimumOSVersion))
            ON CONFLICT (team_id, bundle_id) DO UPDATE SET environments = EXCLUDED.environments,
                challenges = EXCLUDED.challenges, mad_limit = EXCLUDED.mad_limit, grace_days = EXCLUDED.grace_days,
                token_lifetime_seconds = EXCLUDED.token_lifetime_seconds, risk_weights = EXCLUDED.risk_weights,
                custom_claims = EXCLUDED.custom_claims, limited_use_assertions = EXCLUDED.limited_use_assertions,
                limited_use_lifetime_seconds = EXCLUDED.limited_use_lifetime_seconds,
                android_package = EXCLUDED.android_package, android_signing_digests = EXCLUDED.android_signing_digests,
                android_require_strongbox = EXCLUDED.android_require_strongbox,
                android_require_verified_boot = EXCLUDED.android_require_verified_boot,
                android_min_patch_level = EXCLUDED.android_min_patch_level,
                android_min_os_version = EXCLUDED.android_min_os_version,
                updated_at = now()
            """
        }
    }
}

extension AppPolicy: PGRowDecodable {
    /// Risk weights that no longer read fall back to the defaults, as an app registered without any; claims
    /// that no longer validate (edited in the table by hand) to none, so no token carries unchecked claims
    /// (``PGRow/decodeJSON(_:as:)``).
    public init(row: PGRow) throws(PGError) {
        self.init(
            teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
            environments: try row.decode("environments"), challenges: try row.decode("challenges"),
            madLimit: try row.decode("mad_limit"), graceDays: try row.decode("grace_days"),
            tokenLifetimeSeconds: try row.decode("token_lifetime_seconds"),
            risk: try row.decodeJSON("risk_weights") { try RiskPolicy(json: $0) } ?? RiskPolicy(),
            claims: try row.decodeJSON("custom_claims") { try CustomClaims(json: $0) } ?? CustomClaims(),
            limitedUseAssertions: try row.decode("limited_use_assertions"),
            limitedUseLifetimeSeconds: try row.decode("limited_use_lifetime_seconds"), android: try Self.android(row))
    }

    /// The Android registration, when the app has a package. Its digests are stored as bytes, so each reads
    /// back as the 32 bytes written.
    private static func android(_ row: PGRow) throws(PGError) -> AndroidPolicy? {
        let package: String? = try row.decode("android_package")
        guard let package else { return nil }
        let digests: String = try row.decode("android_signing_digests")
        return AndroidPolicy(
            packageName: package, signingCertificateDigests: Set(digests.split(separator: ",").compactMap { Hex.decode(String($0)) }),
            requireStrongBox: try row.decode("android_require_strongbox"),
            requireVerifiedBoot: try row.decode("android_require_verified_boot"),
            minimumOSPatchLevel: try row.decode("android_min_patch_level"), minimumOSVersion: try row.decode("android_min_os_version"))
    }
}

extension EnvironmentPolicy: PGDecodable {}
extension AppPolicy.ChallengeMode: PGDecodable {}
