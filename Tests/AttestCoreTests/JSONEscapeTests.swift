import AttestCore
import Testing

/// \u escapes decode into the string's UTF-8 directly, one to four bytes each, surrogate pairs joined;
/// strings are written escaped only where JSON needs it and read back to the same bytes.
@Suite struct JSONEscapeTests {
    @Test func stringsAreWrittenEscapedWhereNeededAndReadBackWhole() {
        let cases: [(String, String)] = [
            ("", #""""#), ("plain", #""plain""#), ("é中😀", "\"é中😀\""),
            ("\"", #""\"""#), ("a\\b", #""a\\b""#), ("\n\r\t", #""\n\r\t""#),
            ("\u{0}x\u{1f}", #""\u0000x\u001f""#), ("ab\"cd\"", #""ab\"cd\"""#), ("x\u{7f}", "\"x\u{7f}\""),
        ]
        for (text, written) in cases {
            #expect(JSONValue.string(text).serialized() == written, "\(text.debugDescription)")
            #expect(JSONValue.parse(Array("[\(written)]".utf8)) == .array([.string(text)]), "\(written)")
        }
        // A string cut by the end of the text, or holding a raw control byte, is no JSON.
        for bad in [#"["abc"#, "[\"a\u{1}b\"]", #"["abc\"#, "[\"\u{0}\"]"] {
            #expect(JSONValue.parse(Array(bad.utf8)) == nil, "\(bad.debugDescription)")
        }
        #expect(JSONValue.parse([UInt8(ascii: "\""), 0xff, UInt8(ascii: "\"")]) == nil, "not UTF-8")
    }

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
