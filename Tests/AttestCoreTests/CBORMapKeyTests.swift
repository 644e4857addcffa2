import AttestCore
import Testing

/// Duplicate map keys are found by comparison in small maps and by a set in large ones: both sides of the
/// switch must find every duplicate pair, report it at the later key, and accept distinct keys.
@Suite struct CBORMapKeyTests {
    /// A map of `keys` (each one CBOR item's bytes) to the value 0.
    static func map(_ keys: [[UInt8]]) -> [UInt8] {
        let head: [UInt8] = keys.count < 24 ? [0xa0 | UInt8(keys.count)] : [0xb8, UInt8(keys.count)]
        return head + keys.flatMap { $0 + [0x00] }
    }

    static func offset(ofKey index: Int, _ keys: [[UInt8]]) -> Int {
        (keys.count < 24 ? 1 : 2) + keys[..<index].reduce(0) { $0 + $1.count + 1 }
    }

    @Test func everyDuplicatePairIsFoundOnBothSidesOfTheSwitch() throws {
        for n in [2, 3, 7, 8, 9, 10, 30] {
            let keys = (0..<n).map { [UInt8(0x60 | 1), UInt8(ascii: "a") + UInt8($0)] }  // "a", "b", ...
            _ = try CBORDecoder().decode(Self.map(keys))
            for later in 1..<n {
                for earlier in 0..<later {
                    var duplicated = keys
                    duplicated[later] = keys[earlier]
                    #expect(throws: CBORError(.duplicateKey, at: Self.offset(ofKey: later, keys))) {
                        try CBORDecoder().decode(Self.map(duplicated))
                    }
                }
            }
        }
    }

    /// Keys that share a prefix, or differ only in type, are distinct.
    @Test func keysEqualOnlyWhenTheirEncodingsAre() throws {
        let keys: [[UInt8]] = [[0x61, 0x61], [0x62, 0x61, 0x61], [0x41, 0x61], [0x01], [0x20], [0x18, 0x18]]
        let decoded = try CBORDecoder().decode(Self.map(keys))
        guard case .map(let entries) = decoded else { Issue.record("not a map"); return }
        #expect(entries.count == keys.count)
        let many = keys + (0..<20).map { [0x18, UInt8(0x20 + $0)] }
        guard case .map(let more) = try CBORDecoder().decode(Self.map(many)) else { Issue.record("not a map"); return }
        #expect(more.count == many.count)
    }

    /// A tag's content is still a value of its own after the enum stopped boxing every case.
    @Test func nestedTagsAndContainersRoundTheirValues() throws {
        // {1: 24(h'00'), 2: [0, {3: "x"}]}
        let bytes: [UInt8] = [0xa2, 0x01, 0xd8, 0x18, 0x41, 0x00, 0x02, 0x82, 0x00, 0xa1, 0x03, 0x61, 0x78]
        let value = try CBORDecoder().decode(bytes)
        #expect(value[1] == .tagged(24, .bytes([0])))
        #expect(value[2] == .array([.unsigned(0), .map([CBORMapEntry(key: .unsigned(3), value: .text("x"))])]))
    }
}
