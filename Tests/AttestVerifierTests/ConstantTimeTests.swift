import AttestCrypto
import Testing

/// ConstantTime.equal compares arrays and slices in place and anything else through a copy, with the same
/// answers.
@Suite struct ConstantTimeTests {
    @Test func equalOnlyForEqualBytesOfEqualLength() {
        let a: [UInt8] = [1, 2, 3, 4]
        #expect(ConstantTime.equal(a, [1, 2, 3, 4]))
        #expect(!ConstantTime.equal(a, [1, 2, 3, 5]))
        #expect(!ConstantTime.equal(a, [1, 2, 3]), "a prefix is not equal")
        #expect(ConstantTime.equal([UInt8](), [UInt8]()))
        #expect(!ConstantTime.equal([UInt8](), [0]))
    }

    @Test func slicesAndCollectionsWithoutContiguousStorage() {
        let a: [UInt8] = [9, 1, 2, 3, 9]
        #expect(ConstantTime.equal(a[1..<4], [1, 2, 3]))
        #expect(!ConstantTime.equal(a[1..<4], a[2..<5]))
        #expect(ConstantTime.equal([3, 2, 1].reversed(), a[1..<4]))
        #expect(!ConstantTime.equal([3, 2, 1, 0].reversed(), a[1..<4]))
    }
}
