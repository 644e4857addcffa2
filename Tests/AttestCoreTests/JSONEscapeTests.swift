import AttestCore
import Testing

/// \u escapes decode into the string's UTF-8 directly, one to four bytes each, surrogate pairs joined.
@Suite struct JSONEscapeTests {
    @Test func escapesOfEveryUTF8LengthDecode() {
        let text = #"["\u0041\u00e9\u4e2d\ud83d\ude00\u0000"]"#
        #expect(JSONValue.parse(Array(text.utf8)) == .array([.string("Aé中😀\u{0}")]))
        for bad in [#"["\ud83d"]"#, #"["\ude00"]"#, #"["\ud83d\u0041"]"#, #"["\u00g0"]"#, #"["\u00e"]"#] {
            #expect(JSONValue.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    @Test func aMessageOfEscapesParsesWhole() {
        let count = 43_000
        let text = "[\"" + String(repeating: #"\u00e9"#, count: count) + "\"]"
        #expect(JSONValue.parse(Array(text.utf8)) == .array([.string(String(repeating: "é", count: count))]))
    }
}
