import AttestCore
import Testing

@Suite struct Base64Tests {
    @Test func acceptsBothAlphabetsWithOrWithoutPadding() {
        #expect(Base64.decode("+/8=") == [0xfb, 0xff])
        #expect(Base64.decode("-_8") == [0xfb, 0xff])
        #expect(Base64.decode("") == [])
        #expect(Base64.decode("QQ==") == [0x41])
        #expect(Base64.decode("QQ") == [0x41])
        #expect(Base64.decode("QUI") == [0x41, 0x42])
        #expect(Base64.decode("QUJD") == [0x41, 0x42, 0x43])
    }

    @Test func rejectsEverythingElse() {
        for text in ["Q", "QQ=", "QQ===", "Q Q=", "QQ==\n", "+_8=", "QR==", "QUJ", "QUJ=", "QQ=A", "====", "é"] {
            #expect(Base64.decode(text) == nil, "\(text)")
        }
    }

    @Test func roundTrips() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
    }

    /// JOSE's base64url: URL-safe alphabet, never padded, and nothing else decodes.
    @Test func urlFormRoundTripsAndIsStrict() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 251) }
            let text = Base64.encodeURL(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64.decodeURL(text) == bytes)
        }
        #expect(Base64.encodeURL([0xfb, 0xff]) == "-_8")
        for text in ["-_8=", "+/8", "QQ==", "Q R", "QR"] {
            #expect(Base64.decodeURL(text) == nil, "\(text)")
        }
    }
}
