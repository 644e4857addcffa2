import AttestJobs
import AttestTokens
import AttestVerifier
import DeviceIntelligence

/// An app's registration (CONTRACT 5): which environments it accepts and how it uses challenges, its Android
/// package when it has one (CONTRACT 9); quota, token and risk settings are carried for the features that
/// read them. One registration is one app for counts, quotas, tokens and events, whatever the platform.
public struct AppPolicy: Sendable, Equatable {
    public enum ChallengeMode: String, Sendable {
        /// The worker issues challenges and a job must present one.
        case worker
        /// The backend manages challenges; only the binding rule applies.
        case backend
    }

    /// The registration's key: every job, count and verdict of the app names exactly this pair.
    public var app: AppIdentity
    public var teamId: String { app.teamId }
    public var bundleId: String { app.bundleId }
    public var environments: EnvironmentPolicy
    public var challenges: ChallengeMode
    public var madLimit: Int?
    public var graceDays: Int
    public var tokenLifetimeSeconds: Int
    /// Risk weights and the extension values the app expects (`apps.risk_weights`).
    public var risk: RiskPolicy
    /// The claims every token of the app carries besides the worker's own (`apps.custom_claims`).
    public var claims: CustomClaims
    /// Every accepted assertion gets a limited-use token, whatever its job asks (`apps.limited_use_assertions`):
    /// for an app whose backend must never honour a replayed token (CONTRACT 7, "Tokens").
    public var limitedUseAssertions: Bool
    /// The lifetime of limited-use tokens, at most `tokenLifetimeSeconds`; nil: the same. A token spent within
    /// seconds of its issue need not stay valid an hour, and a shorter one is kept less long once consumed.
    public var limitedUseLifetimeSeconds: Int?
    /// The app's Android package, with the digests of its signing certificates and what it requires of
    /// devices; nil: the app has no Android package. Its Android jobs find the app by this package.
    public var android: AndroidPolicy?

    /// How long a token of this app lives: a limited-use one at most its own lifetime.
    public func tokenLifetime(limitedUse: Bool) -> Int {
        guard limitedUse, let limited = limitedUseLifetimeSeconds else { return tokenLifetimeSeconds }
        return min(limited, tokenLifetimeSeconds)
    }

    /// Whether `job`'s token is limited-use: asked for by the job, or required for the app's assertions.
    public func limitedUse(_ job: Job) -> Bool {
        job.limitedUse || (limitedUseAssertions && (job.kind == .assertion || job.kind == .androidAssertion))
    }

    public init(
        teamId: String, bundleId: String, environments: EnvironmentPolicy = .production,
        challenges: ChallengeMode = .backend, madLimit: Int? = nil, graceDays: Int = 7, tokenLifetimeSeconds: Int = 3600,
        risk: RiskPolicy = RiskPolicy(), claims: CustomClaims = CustomClaims(), limitedUseAssertions: Bool = false,
        limitedUseLifetimeSeconds: Int? = nil, android: AndroidPolicy? = nil
    ) {
        self.android = android
        app = AppIdentity(teamId: teamId, bundleId: bundleId)
        self.environments = environments
        self.challenges = challenges
        self.madLimit = madLimit
        self.graceDays = graceDays
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.risk = risk
        self.claims = claims
        self.limitedUseAssertions = limitedUseAssertions
        self.limitedUseLifetimeSeconds = limitedUseLifetimeSeconds
    }
}
