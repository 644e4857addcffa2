import AttestCore
import AttestJobs
import AttestVerifier

/// The claims of a verdict token: registered JWT claims plus what a relying party acts on, then the app's
/// custom claims, which can add but never replace.
enum TokenClaims {
    /// Names a custom claim may not take: the registered JWT claims and the worker's own.
    static let reserved: Set<String> = [
        "iss", "sub", "aud", "iat", "nbf", "exp", "jti", "kind", "deviceId", "subjectId", "environment",
        "riskCategory", LimitedUse.claim,
    ]

    static func build(
        for verdict: Verdict, issuer: String, issuedAt: Int64, expiresAt: Int64, deviceId: String?,
        riskCategory: String?, limitedUse: Bool = false, custom: [(String, JSONValue)]
    ) -> JSONValue {
        // A limited-use token's jti must never repeat (``LimitedUse/jti(teamId:bundleId:jobId:issuedAt:)``); an
        // ordinary token keeps the jobId, as relying parties already correlate by it.
        let jobId = verdict.jobId ?? ""
        let app = verdict.app ?? AppIdentity.none
        let jti = limitedUse ? LimitedUse.jti(teamId: app.teamId, bundleId: app.bundleId, jobId: jobId, issuedAt: issuedAt) : jobId
        var claims: [(String, JSONValue)] = [
            ("iss", .string(issuer)),
            ("sub", .string(verdict.keyId ?? "")),
            ("aud", .string(app.appId)),
            ("iat", .int(issuedAt)),
            ("exp", .int(expiresAt)),
            ("jti", .string(jti)),
            ("kind", .string(verdict.kind?.rawValue ?? "")),
        ]
        if let deviceId { claims.append(("deviceId", .string(deviceId))) }
        if let subjectId = verdict.subjectId { claims.append(("subjectId", .string(subjectId))) }
        if let environment = verdict.environment { claims.append(("environment", .string(environment.rawValue))) }
        if let riskCategory { claims.append(("riskCategory", .string(riskCategory))) }
        if limitedUse { claims.append((LimitedUse.claim, .bool(true))) }
        var names = Set(claims.map(\.0)).union(reserved)
        for (name, value) in custom where names.insert(name).inserted {
            claims.append((name, value))
        }
        return .object(claims)
    }
}
