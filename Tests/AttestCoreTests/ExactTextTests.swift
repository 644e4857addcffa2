import AttestCore
import Testing

/// Keys that stand for database text keys compare and hash by their UTF-8 bytes, not by Unicode equivalence.
@Suite struct ExactTextTests {
    struct Key: Hashable {
        let text: String
        static func == (a: Self, b: Self) -> Bool { ExactText.equal(a.text, b.text) }
        func hash(into hasher: inout Hasher) { ExactText.hash(text, into: &hasher) }
    }

    @Test func equivalentTextsWithOtherBytesAreTwoKeys() {
        #expect("caf\u{e9}" == "cafe\u{301}")
        #expect(!ExactText.equal("caf\u{e9}", "cafe\u{301}"))
        #expect(Set([Key(text: "caf\u{e9}"), Key(text: "cafe\u{301}")]).count == 2)
    }

    @Test func theSameBytesAreOneKeyHoweverTheStringWasMade() {
        let literal = "order-42-é"
        let decoded = String(decoding: Array(literal.utf8), as: UTF8.self)
        let sliced = String("xorder-42-é".dropFirst())
        for other in [decoded, sliced] {
            #expect(ExactText.equal(literal, other))
            #expect(Key(text: literal).hashValue == Key(text: other).hashValue)
        }
        #expect(Set([Key(text: literal), Key(text: decoded), Key(text: sliced)]).count == 1)
        #expect(!ExactText.equal("order-42", "order-43"))
        #expect(!ExactText.equal("order-4", "order-42"))
        #expect(ExactText.equal("", ""))
    }

    @Test func aNULIsFoundAnywhereInTheText() {
        #expect(!ExactText.containsNUL(""))
        #expect(!ExactText.containsNUL("order-42-\u{e9}"))
        for text in ["\u{0}", "\u{0}order", "order\u{0}", "or\u{0}der", String(repeating: "x", count: 4096) + "\u{0}"] {
            #expect(ExactText.containsNUL(text))
            #expect(ExactText.containsNUL(String("y" + text).dropFirst().description))
        }
    }
}
