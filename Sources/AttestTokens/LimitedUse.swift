import AttestCore
import AttestCrypto

/// Limited-use tokens (issue 28): a token a relying party spends once, through `POST /v1/tokens/consume`,
/// so one stolen from a request cannot be replayed for another inside its lifetime. The token says so in a
/// claim, and its `jti` is what the consumption ledger keys on, so it must never repeat.
public enum LimitedUse {
    /// The claim a limited-use token carries, always `true`; reserved, so a custom claim cannot forge it.
    public static let claim = "limitedUse"

    /// Whether `claims` (a verified token's) mark it limited-use: exactly `true`, nothing merely truthy.
    public static func isLimitedUse(_ claims: JSONValue) -> Bool { claims[claim] == .bool(true) }

    /// The `jti` of a limited-use token. The jobId alone (an ordinary token's jti) is unique only per app and
    /// only while the verdict is kept: once it is purged the same jobId can be decided again, and a second
    /// token with the first one's jti would read as already spent. Deriving it from the app, the jobId and
    /// `iat` keeps it unique across apps and re-decisions, while a redelivered job, which republishes its
    /// stored verdict, still carries the one token it always had; being a function of the verdict, the
    /// worker and the offline `verify` agree on it. 128 bits of SHA-256, base64url.
    public static func jti(teamId: String, bundleId: String, jobId: String, issuedAt: Int64) -> String {
        let input = ["limited-use jti v1", teamId, bundleId, jobId, String(issuedAt)].joined(separator: "\u{0}")
        return Base64.encodeURL(Array(Digest.sha256.hash(Array(input.utf8)).prefix(16)))
    }
}
