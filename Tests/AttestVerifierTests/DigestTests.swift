import AttestCore
import AttestCrypto
import Testing

/// The digests through the once-fetched algorithms: the published test vectors (FIPS 180-2 "abc" and the
/// empty message), and every input shape hashing alike.
@Suite struct DigestTests {
    static let abc = Array("abc".utf8)

    @Test func publishedVectors() {
        #expect(Hex.encode(Digest.sha256.hash(Self.abc)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Hex.encode(Digest.sha384.hash(Self.abc))
                == "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7")
        #expect(
            Hex.encode(Digest.sha512.hash(Self.abc))
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd"
                + "454d4423643ce80e2a9ac94fa54ca49f")
        #expect(Hex.encode(Digest.sha256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func partsHashLikeTheirConcatenation() {
        let message = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let whole = Digest.sha256.hash(message)
        #expect(Digest.sha256(message) == whole)
        #expect(Digest.sha256(Array(message[..<37]), Array(message[37...])) == whole)
        #expect(Digest.sha256([], Array(message[..<1]), [], Array(message[1...])) == whole)
        #expect(Digest.sha256(Self.abc, Self.abc) != Digest.sha256(Self.abc))
    }

    @Test func everyCollectionShapeHashesAlike() {
        let message = (0..<100).map { UInt8(truncatingIfNeeded: $0 * 13 + 5) }
        for digest in [Digest.sha256, .sha384, .sha512] {
            let whole = digest.hash(message)
            #expect(digest.hash(message[...]) == whole)
            #expect(digest.hash(message.lazy.map { $0 }) == whole)
            #expect(digest.hash(ContiguousArray(message)) == whole)
            #expect(digest.hash(message[1...]) == digest.hash(Array(message.dropFirst())))
        }
        let text = "teamid.bundle.id"
        #expect(Digest.sha256.hash(text.utf8) == Digest.sha256.hash(Array(text.utf8)))
    }

    /// The assertion's digest in one context equals hashing the nonce again, at every split and length.
    @Test func sha256OfSHA256IsTheNonceHashedAgain() {
        let message = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 11 + 3) }
        for split in [0, 1, 37, 64, 299, 300] {
            let first = Array(message[..<split])
            let second = Array(message[split...])
            #expect(Digest.sha256OfSHA256(first, second) == Digest.sha256.hash(Digest.sha256.hash(message)))
        }
        #expect(Digest.sha256OfSHA256([], []) == Digest.sha256.hash(Digest.sha256.hash([UInt8]())))
        #expect(Digest.sha256OfSHA256(Self.abc, []) != Digest.sha256.hash(Self.abc))
    }

    /// An App ID hashed from its parts equals the hash of the joined String, for small (inline), long and
    /// non-ASCII parts.
    @Test func utf8PartsHashLikeTheJoinedString() {
        let parts: [(String, String)] = [
            ("T", "b"), ("TEAM123456", "com.example.app"), ("", ""), ("ÉQUIPE12", "com.exämple.🎉"),
            (String(repeating: "A", count: 200), "x"), (String("xTEAM".dropFirst()), String("a.b.c".dropLast())),
        ]
        for (team, bundle) in parts {
            #expect(Digest.sha256(utf8: team, ".", bundle) == Digest.sha256.hash(Array((team + "." + bundle).utf8)))
        }
        #expect(Digest.sha256(utf8: "TEAM", ".", "a") != Digest.sha256(utf8: "TEAM", "", "a"))
    }
}
