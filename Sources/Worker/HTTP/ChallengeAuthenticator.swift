import AttestCrypto
import PostgresClient
import Store

/// Who may issue challenges for an app: the bearer of one of the app's API keys (`attest-worker app key
/// add`), or of the shared secret `ATTEST_CHALLENGE_SECRET` (for every app, when set). Nobody else: an app
/// without keys, with no shared secret configured, gets no challenges over HTTP (`challenge new` still
/// works for an operator with database access).
///
/// Comparisons run in constant time over SHA-256 digests, so neither the secret's length nor where a guess
/// differs shows in the timing; every candidate hash is compared (no early exit).
public struct ChallengeAuthenticator: Sendable {
    public typealias KeyHashes = @Sendable (_ teamId: String, _ bundleId: String) throws(PGError) -> [[UInt8]]

    /// What is read from `Authorization` at most: keys and secrets are far shorter.
    static let maxCredentialBytes = 512

    private let sharedSecretHash: [UInt8]?
    private let keyHashes: KeyHashes

    /// - Parameter sharedSecret: nil or empty for none.
    /// - Parameter keyHashes: the app's unrevoked key hashes (``ChallengeIssuer/activeKeyHashes(teamId:bundleId:)``).
    public init(sharedSecret: String?, keyHashes: @escaping KeyHashes) {
        sharedSecretHash = sharedSecret.flatMap { $0.isEmpty ? nil : Digest.sha256.hash(Array($0.utf8)) }
        self.keyHashes = keyHashes
    }

    /// The credential of an `Authorization: Bearer …` header value; nil for any other form.
    static func bearer(_ header: String?) -> String? {
        guard let header, header.utf8.count <= maxCredentialBytes + 16 else { return nil }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = String(parts[1])
        guard credential.utf8.count <= maxCredentialBytes, credential.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        return credential
    }

    /// Whether `authorization` may issue for (teamId, bundleId). The database is asked only for credentials
    /// shaped like an API key.
    public func admits(authorization: String?, teamId: String, bundleId: String) throws(PGError) -> Bool {
        guard let credential = Self.bearer(authorization) else { return false }
        let presented = Digest.sha256.hash(Array(credential.utf8))
        if let sharedSecretHash, ConstantTime.equal(presented, sharedSecretHash) { return true }
        guard credential.hasPrefix(APIKeyStore.prefix) else { return false }
        var matched = false
        for hash in try keyHashes(teamId, bundleId) where ConstantTime.equal(presented, hash) { matched = true }
        return matched
    }
}
