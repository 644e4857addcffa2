import AttestCore
import AttestCrypto

/// Whether the client data a device signed is bound to the challenge the server issued.
///
/// Attestations (docs/CHECK_ORDER.md): `clientDataHash` must be the challenge's bytes or their SHA-256; for a
/// base64 challenge its decoded bytes or their SHA-256 also count (Apple's own sample passes the raw
/// challenge). Assertions (CONTRACT 2): the challenge must occur in `clientData`, or, when only the hash is
/// given, the hash must be the challenge's SHA-256.
///
/// Every rule is linear in the job's size: at most two candidates, each hashed once or searched for once
/// with Knuth–Morris–Pratt (a naive search costs clientData × challenge comparisons, seconds per job at the
/// message size limit). Callers reject challenges over ``VerifierLimits/maxChallengeBytes`` first.
public enum ChallengeBinding {
    public static func attestationBinds(clientDataHash: [UInt8], challenge: String) -> Bool {
        candidates(challenge).contains {
            ConstantTime.equal($0, clientDataHash) || ConstantTime.equal(Digest.sha256.hash($0), clientDataHash)
        }
    }

    public static func assertionBinds(clientData: [UInt8], challenge: String) -> Bool {
        candidates(challenge).contains { !$0.isEmpty && firstOccurrence(of: $0, in: clientData).found }
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

    /// Knuth–Morris–Pratt: whether `needle` occurs in `haystack`, and the byte comparisons it took, which
    /// never exceed 2 × (haystack + needle) whatever the bytes (tests hold it to that bound).
    static func firstOccurrence(of needle: [UInt8], in haystack: [UInt8]) -> (found: Bool, comparisons: Int) {
        guard !needle.isEmpty else { return (true, 0) }
        guard needle.count <= haystack.count else { return (false, 0) }
        var comparisons = 0
        // failure[i]: the length of the longest proper prefix of needle[0...i] that is also its suffix.
        var failure = [Int](repeating: 0, count: needle.count)
        var k = 0
        for i in 1..<needle.count {
            while true {
                comparisons += 1
                if needle[i] == needle[k] {
                    k += 1
                    break
                }
                if k == 0 { break }
                k = failure[k - 1]
            }
            failure[i] = k
        }
        var matched = 0
        for byte in haystack {
            while true {
                comparisons += 1
                if byte == needle[matched] {
                    matched += 1
                    break
                }
                if matched == 0 { break }
                matched = failure[matched - 1]
            }
            if matched == needle.count { return (true, comparisons) }
        }
        return (false, comparisons)
    }
}
