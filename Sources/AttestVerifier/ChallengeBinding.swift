import AttestCore
import AttestCrypto

/// Whether the client data a device signed is bound to the challenge the server issued.
///
/// Attestations (vectors/README.md): `clientDataHash` must be the challenge's bytes or their SHA-256; for a
/// base64 challenge its decoded bytes or their SHA-256 also count (Apple's own sample passes the raw
/// challenge). Assertions (SPEC 2): the challenge must occur in `clientData`, or, when only the hash is
/// given, the hash must be the challenge's SHA-256.
public enum ChallengeBinding {
    public static func attestationBinds(clientDataHash: [UInt8], challenge: String) -> Bool {
        candidates(challenge).contains {
            ConstantTime.equal($0, clientDataHash) || ConstantTime.equal(Digest.sha256.hash($0), clientDataHash)
        }
    }

    public static func assertionBinds(clientData: [UInt8], challenge: String) -> Bool {
        candidates(challenge).contains { !$0.isEmpty && contains(clientData, $0) }
    }

    public static func assertionBinds(clientDataHash: [UInt8], challenge: String) -> Bool {
        candidates(challenge).contains { ConstantTime.equal(Digest.sha256.hash($0), clientDataHash) }
    }

    /// The challenge's UTF-8 bytes, and its decoded bytes when it is base64.
    private static func candidates(_ challenge: String) -> [[UInt8]] {
        var list = [Array(challenge.utf8)]
        if let decoded = Base64.decode(challenge), !decoded.isEmpty { list.append(decoded) }
        return list
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<start + needle.count].elementsEqual(needle)
        }
    }
}
