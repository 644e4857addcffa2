import AttestCore
import Testing

/// Every proper prefix of the real objects in Apple's sample fails cleanly in each parser, never crashes
/// and is never accepted.
@Suite struct DripFeedTests {
    let object = try! AttestationObject(cbor: Base64.decode(AppleSample.attestationObject)!)

    @Test func everyTruncationOfTheCertificatesFails() throws {
        for der in object.certificates {
            #expect(throws: Never.self) { try Certificate(der: der) }
            for length in 0..<der.count {
                #expect(throws: ASN1Error.self) { try Certificate(der: Array(der[0..<length])) }
            }
        }
    }

    @Test func everyTruncationOfTheReceiptFails() throws {
        guard case .bytes(let receipt)? = object.receipt else {
            Issue.record("sample without receipt")
            return
        }
        #expect(throws: Never.self) { try SignedData(ber: receipt) }
        for length in 0..<receipt.count {
            #expect(throws: ASN1Error.self) { try SignedData(ber: Array(receipt[0..<length])) }
        }
    }

    @Test func everyTruncationOfTheAuthenticatorDataFails() throws {
        let authData = object.authenticatorData
        #expect(throws: Never.self) { try AuthenticatorData.attestation(authData) }
        // The extension map is optional, so exactly one prefix parses: the one that ends with the COSE key.
        var parsed = [AuthenticatorData]()
        for length in 0..<authData.count {
            if let prefix = try? AuthenticatorData.attestation(Array(authData[0..<length])) { parsed.append(prefix) }
        }
        #expect(parsed.count == 1)
        #expect(parsed.first?.extensions == nil)
        #expect(parsed.first?.credential?.publicKey == (try AuthenticatorData.attestation(authData)).credential?.publicKey)
    }
}
