import AttestCore
import AttestVerifier
import DeviceIntelligence

/// The decision on one job, as published to the results topic and printed by `verify` (CONTRACT 2).
public struct Verdict: Sendable {
    /// The verdict schema's version (`schemaVersion`): 2 added it, `subjectId`, `receivedAt` and the
    /// analytics metadata; 3 added deviceIntelligence's `receiptRiskMetric` and `receiptRiskMetricDate`; 4 added
    /// Android verdicts (`packageName`, `android`, the Android kinds, reasons and risk factors). Bumped by one whenever the verdict gains members, so a consumer can tell which
    /// optional members it may expect; members are never removed or retyped (Schemas/README.md).
    public static let schemaVersion: Int64 = 4
    /// The job's metadata echoed for analytics, in this order (each already bounded by the job's parser).
    public static let analyticsFields = ["deviceModel", "osVersion", "appVersion", "appBuildNumber", "platform"]

    public var jobId: String?
    public var kind: Job.Kind?
    public var keyId: String?
    public var teamId: String?
    public var bundleId: String?
    /// Android jobs: the app's package name (teamId and bundleId are then null).
    public var packageName: String?
    /// The job asked for a limited-use token (`limitedUse`); not part of the verdict's JSON (its token says so).
    public var limitedUseRequested = false
    /// The job's `subjectId` (the backend's user or account), echoed in the verdict, its token and its
    /// device intelligence so the backend needs no lookup of its own.
    public var subjectId: String?
    /// The job's `receivedAt`, when the job could be read.
    public var receivedAt: Timestamp?
    /// The job's values of ``analyticsFields`` that it carried.
    public var analytics: [String: String] = [:]
    public var failure: VerificationFailure?
    public var environment: AppAttestEnvironment?
    public var counter: UInt32?
    public var verifiedAt: Timestamp
    public var verificationTime: Timestamp?
    /// Accepted attestations: the attested key (X9.62 point) and the receipt summary.
    public var publicKey: [UInt8]?
    public var receipt: Receipt?
    /// Accepted Android attestations: what the secure hardware stated about the key and the device.
    public var android: VerifiedAndroidAttestation?
    /// Accepted jobs whose authenticator data carries Apple's extension map.
    public var extensions: AppleExtensions?
    /// Accepted jobs: the signed verdict token (compact JWS) and when it expires; set by AttestTokens.
    public var token: String?
    public var expiresAt: Timestamp?
    /// quota_exceeded: the app's monthly active device limit and the devices counted this month.
    public var quota: (limit: Int, current: Int)?
    /// The device's risk and integrity, on verdicts of jobs that could be read.
    public var deviceIntelligence: DeviceIntelligence?

    public var ok: Bool { failure == nil }

    /// The app the verdict is of, as tokens name it: its App ID pair, else for an app registered by its
    /// Android package alone ("android", package); nil for a job whose app could not be read.
    public var app: AppIdentity? {
        if let teamId, let bundleId { return AppIdentity(teamId: teamId, bundleId: bundleId) }
        return packageName.map(AppIdentity.init(androidPackage:))
    }

    public init(job: Job?, verifiedAt: Timestamp) {
        jobId = job?.jobId
        kind = job?.kind
        if let job, let android = job.android {
            // An Android attestation's keyId is its leaf's, set once verified. Its app is named by the
            // package, and by the App ID too when the package is registered with one.
            keyId = android.keyId
            packageName = android.packageName
            if !job.app.isAndroidOnly { (teamId, bundleId) = (job.teamId, job.bundleId) }
        } else {
            keyId = job?.keyId
            teamId = job?.teamId
            bundleId = job?.bundleId
        }
        subjectId = job?.metadata["subjectId"]
        receivedAt = job?.receivedAt
        analytics = job?.metadata.filter { Self.analyticsFields.contains($0.key) } ?? [:]
        limitedUseRequested = job?.limitedUse ?? false
        self.verifiedAt = verifiedAt
    }

    public var json: JSONValue {
        var m = [(String, JSONValue)]()
        m.append(("jobId", jobId.map(JSONValue.string) ?? .null))
        m.append(("kind", kind.map { .string($0.rawValue) } ?? .null))
        m.append(("keyId", keyId.map(JSONValue.string) ?? .null))
        m.append(("teamId", teamId.map(JSONValue.string) ?? .null))
        m.append(("bundleId", bundleId.map(JSONValue.string) ?? .null))
        if let packageName { m.append(("packageName", .string(packageName))) }
        m.append(("ok", .bool(ok)))
        m.append(("schemaVersion", .int(Self.schemaVersion)))
        if let subjectId { m.append(("subjectId", .string(subjectId))) }
        if let failure {
            m.append(("code", .string(failure.code.rawValue)))
            m.append(("reason", .string(failure.reason.rawValue)))
            m.append(("message", .string(failure.message)))
        }
        if let quota {
            m.append(("limit", .int(Int64(quota.limit))))
            m.append(("current", .int(Int64(quota.current))))
        }
        if let environment { m.append(("environment", .string(environment.rawValue))) }
        if let counter { m.append(("counter", .int(Int64(counter)))) }
        if let receivedAt { m.append(("receivedAt", .string(receivedAt.rfc3339))) }
        for name in Self.analyticsFields {
            if let value = analytics[name] { m.append((name, .string(value))) }
        }
        m.append(("verifiedAt", .string(verifiedAt.rfc3339)))
        if let verificationTime { m.append(("verificationTime", .string(verificationTime.rfc3339))) }
        if let publicKey { m.append(("publicKey", .string(Base64.encode(publicKey)))) }
        if let receipt {
            var r: [(String, JSONValue)] = [
                ("type", receipt.type.map(JSONValue.string) ?? .null),
                ("creationTime", receipt.creationTime.map(JSONValue.string) ?? .null),
                ("expirationTime", receipt.expirationTime.map(JSONValue.string) ?? .null),
            ]
            if let risk = receipt.riskMetric { r.append(("riskMetric", .int(Int64(risk)))) }
            m.append(("receipt", .object(r)))
        }
        if ok, let android { m.append(("android", android.keyDescription.verdictJSON)) }
        if ok && (kind == .attestation || extensions != nil) {
            m.append(("extensions", extensions.map(Self.json) ?? .null))
        }
        if ok, let token, let expiresAt {
            m.append(("token", .string(token)))
            m.append(("expiresAt", .string(expiresAt.rfc3339)))
        }
        if let deviceIntelligence { m.append(("deviceIntelligence", Self.json(deviceIntelligence, subjectId: subjectId))) }
        return .object(m)
    }

    /// The device intelligence with the job's subject appended, as the hosted service reports it.
    static func json(_ intelligence: DeviceIntelligence, subjectId: String?) -> JSONValue {
        guard let subjectId, case .object(var members) = intelligence.json else { return intelligence.json }
        members.append(("subjectId", .string(subjectId)))
        return .object(members)
    }

    /// CONTRACT 7: known keys with their documented types become text / an integer (4 bytes little-endian);
    /// anything else is reported as it is; unknown key names are listed when there are any.
    static func json(_ extensions: AppleExtensions) -> JSONValue {
        var m = [(String, JSONValue)]()
        if let version = extensions.bundleVersion {
            m.append((AppleExtensions.bundleVersionKey, json(version)))
        }
        if let number = extensions.validationCategoryNumber {
            m.append((AppleExtensions.validationCategoryKey, .int(Int64(number))))
        } else if let category = extensions.validationCategory {
            m.append((AppleExtensions.validationCategoryKey, json(category)))
        }
        let others = extensions.otherKeys
        if !others.isEmpty { m.append(("otherKeys", .array(others.map(JSONValue.string)))) }
        return .object(m)
    }

    /// A CBOR value as JSON: bytes as base64 text, map keys by their text or integer form.
    static func json(_ value: CBORValue) -> JSONValue {
        switch value {
        case .unsigned(let n): return Int64(exactly: n).map(JSONValue.int) ?? .double(Double(n))
        case .negative(let n): return Int64(exactly: n).map { .int(-1 - $0) } ?? .double(-1 - Double(n))
        case .bytes(let b): return .string(Base64.encode(b))
        case .text(let t): return .string(t)
        case .array(let items): return .array(items.map(json))
        case .map(let entries):
            return .object(entries.map { ($0.key.textValue ?? $0.key.intValue.map(String.init) ?? "\($0.key)", json($0.value)) })
        case .tagged(_, let inner): return json(inner)
        case .bool(let b): return .bool(b)
        case .null, .undefined: return .null
        case .simple(let s): return .int(Int64(s))
        case .float(let d): return .double(d)
        }
    }
}
