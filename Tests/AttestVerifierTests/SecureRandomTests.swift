import AttestCrypto
import Foundation
import Testing

/// The device ids the ledger makes: RFC 9562 version-4 UUIDs in the lowercase text form Foundation
/// writes (what stored ids already look like), each one new.
@Suite struct SecureRandomTests {
    @Test func uuidsAreVersionFourInLowercaseText() throws {
        var seen = Set<String>()
        for _ in 0..<200 {
            let text = try SecureRandom.uuid()
            let parsed = try #require(UUID(uuidString: text))
            #expect(parsed.uuidString.lowercased() == text)
            let bytes = withUnsafeBytes(of: parsed.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4)
            #expect(bytes[8] >> 6 == 0b10)
            seen.insert(text)
        }
        #expect(seen.count == 200)
    }
}
