import AttestCore
import AttestVerifier

/// What a job's checks read besides the job: one `now` for every time check, and the state only the
/// worker has (app registrations, worker-issued challenges, attested keys, quotas), fetched beforehand as
/// values. The offline `verify` gives the same inputs from its flags and the line's stored-device fields.
public struct JobCheckInputs {
    /// The single clock reading the receivedAt bounds and the verdict's verifiedAt use.
    public var now: Timestamp
    /// The message's broker timestamp (milliseconds since 1970), when it has one.
    public var brokerTimestampMs: Int64?
    /// The app's registration; nil: not registered (unknown_app).
    public var app: AppRules?
    /// For an assertion: the key attested for its keyId in this app; nil: none (unknown_key).
    public var key: AttestedKey?
    /// For an Android assertion: the Android key attested for its keyId in this app; nil: none (unknown_key).
    public var androidKey: AttestedAndroidKey?
    /// For an Android attestation: the status list its chain is checked against, or why the worker has
    /// none it may use (older than its bound, refused by its stale-list setting); nil: the verifier's own.
    public var androidStatusList: Result<AndroidStatusList?, VerificationFailure>?
    /// When the job's keyId was revoked in this app (either kind of job); nil: not revoked (key_revoked).
    public var keyRevokedAt: Timestamp?
    /// The quota step (accepted attestations): the app's limit and the devices counted when this job's device
    /// is turned away, else nil, and then the device counts. nil: no quota applies (the offline verify).
    public var quota: ((Job) -> (limit: Int, current: Int)?)?

    public init(
        now: Timestamp, brokerTimestampMs: Int64? = nil, app: AppRules?, key: AttestedKey? = nil,
        androidKey: AttestedAndroidKey? = nil, androidStatusList: Result<AndroidStatusList?, VerificationFailure>? = nil,
        keyRevokedAt: Timestamp? = nil, quota: ((Job) -> (limit: Int, current: Int)?)? = nil
    ) {
        self.androidKey = androidKey
        self.androidStatusList = androidStatusList
        self.now = now
        self.keyRevokedAt = keyRevokedAt
        self.brokerTimestampMs = brokerTimestampMs
        self.app = app
        self.key = key
        self.quota = quota
    }
}

/// What an app's registration says to the checks.
public struct AppRules: Sendable {
    /// Who manages the app's challenges.
    public enum Challenges: Sendable {
        /// The backend: only the verifier's binding rule applies.
        case backend
        /// The worker issued them, and every job must present one; `refusal` is why the store did not let this
        /// job consume its challenge, nil when it did.
        case worker(refusal: VerificationFailure?)
    }

    public var environments: EnvironmentPolicy
    public var challenges: Challenges
    /// What the app requires of Android attestations (its package, signers and device rules); nil: the app
    /// has no Android package, and its Android jobs are of an unknown app.
    public var android: AndroidPolicy?

    public init(environments: EnvironmentPolicy, challenges: Challenges = .backend, android: AndroidPolicy? = nil) {
        self.environments = environments
        self.challenges = challenges
        self.android = android
    }
}

/// The stored state an assertion is checked against.
public struct AttestedKey: Sendable {
    public var device: StoredDevice
    /// The environment the key was attested in, as stored; nil when not known (the offline verify's lines
    /// carry none), and then no environment policy applies to the key's assertions.
    public var environment: String?

    public init(device: StoredDevice, environment: String?) {
        self.device = device
        self.environment = environment
    }
}
