import AttestCore
import AttestCrypto
import AttestVerifier
import Testing

/// Warm jobs reuse certificates already verified instead of parsing them again (issue 14 item 6): only
/// certificates verified up to the anchor are reused, only for exactly their bytes, and reuse changes no
/// outcome (validity is still checked at each job's time, the attested key still compared).
@Suite struct ParsedCertificateReuseTests {
    let sample = Fixtures.vectorCase("apple_sample_valid")
    let at = Timestamp(rfc3339: "2026-04-21T12:00:00Z")!
    var object: AttestationObject { try! AttestationObject(cbor: Base64.decode(sample["attestationObject"]!.stringValue!)!) }
    var receiptDER: [UInt8] {
        guard case .bytes(let der)? = object.receipt else { fatalError("the sample has a receipt") }
        return der
    }

    @Test func onlyVerifiedIssuersAreKeptParsed() throws {
        let leaf = try Certificate(der: object.certificates[0])
        let intermediate = try Certificate(der: object.certificates[1])
        let chain = ChainVerifier(anchor: AppleRoots.appAttestationRoot)
        #expect(chain.cache.certificate(for: intermediate.der) == nil)
        // The intermediate verified and is kept parsed; the leaf (one per device) is not.
        _ = try chain.verify(leaf: leaf, intermediates: [intermediate], at: at).get()
        #expect(chain.cache.certificate(for: intermediate.der)?.der == intermediate.der)
        #expect(chain.cache.certificate(for: leaf.der) == nil)
        // Exact bytes only: one byte more or less is not the cached certificate.
        #expect(chain.cache.certificate(for: intermediate.der + [0]) == nil)
        #expect(chain.cache.certificate(for: Array(intermediate.der.dropLast())) == nil)
        // An unverified certificate is never kept, even one that parses.
        let other = ChainVerifier(anchor: AppleRoots.rootCAG3)
        _ = other.verify(leaf: leaf, intermediates: [intermediate], at: at)
        #expect(other.cache.certificate(for: intermediate.der) == nil)
    }

    @Test func signedDataTakesKnownCertificatesForTheirExactBytes() throws {
        let parsed = try SignedData(ber: receiptDER)
        var asked = [[UInt8]]()
        let reused = try SignedData(ber: receiptDER) { der in
            asked.append(der)
            return parsed.certificates.first { $0.der == der }
        }
        #expect(asked == parsed.certificates.map(\.der))
        #expect(reused.certificates.map(\.der) == parsed.certificates.map(\.der))
    }

    @Test func warmReceiptIsStillCheckedAtEachJobsTime() throws {
        let verifier = ReceiptVerifier(anchor: AppleRoots.rootCAG3)
        let leaf = try Certificate(der: object.certificates[0])
        func verify(at time: Timestamp, key: [UInt8]? = nil, certificate: Certificate? = nil) -> Result<Receipt, ReceiptFailure> {
            verifier.verify(
                receiptDER, expectedAppId: "1234567890.com.example.myapp", attestedKey: key ?? leaf.publicKey,
                attestedCertificate: certificate, at: time)
        }
        _ = try verify(at: at).get()
        #expect(verifier.chain.cache.count > 0)
        // Warm: the signer is reused, but a time outside its validity still fails.
        #expect(throws: ReceiptFailure.self) { try verify(at: Timestamp(rfc3339: "2040-01-01T00:00:00Z")!).get() }
        _ = try verify(at: at, certificate: leaf).get()
        // The credential certificate at hand saves its parse, never the key comparison.
        var wrongKey = leaf.publicKey
        wrongKey[wrongKey.count - 1] ^= 1
        #expect(throws: ReceiptFailure.self) { try verify(at: at, key: wrongKey, certificate: leaf).get() }
        // A different certificate at hand is not taken for the payload's.
        let intermediate = try Certificate(der: object.certificates[1])
        _ = try verify(at: at, certificate: intermediate).get()
    }

    @Test func warmAttestationHasTheColdVerdict() {
        let request = AttestationRequest(
            teamId: "1234567890", bundleId: "com.example.myapp", keyId: "zgSY9YSD+7TaDXssY6WlOPVS1K3Lmk+pFhlcSWE+ZV0=",
            attestationObject: sample["attestationObject"]!.stringValue!, clientDataHash: Base64.encode(Array("example_server_challenge".utf8)),
            challenge: "example_server_challenge")
        let verifier = AttestationVerifier(trust: .apple)
        let cold = verifier.verify(request, policy: .production, at: at)
        let warm = verifier.verify(request, policy: .production, at: at)
        #expect((try? cold.get())?.environment == .production)
        #expect((try? warm.get())?.environment == .production)
        // Warm, the expired intermediate is still refused.
        let late = verifier.verify(request, policy: .production, at: Timestamp(rfc3339: "2040-01-01T00:00:00Z")!)
        #expect((try? late.get()) == nil)
    }
}
