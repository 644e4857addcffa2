/// One element found by `ASN1Reader`: where its header and contents lie in the reader's buffer.
/// Elements are offsets, not copies, so signature checks can use the exact encoded bytes.
public struct ASN1Element: Sendable {
    public var tag: ASN1Tag
    /// Offset of the identifier octet.
    public var start: Int
    /// Contents: from `contentStart` to `contentEnd` (for BER indefinite lengths, up to the end-of-contents).
    public var contentStart: Int
    public var contentEnd: Int
    /// Offset just past the element (after the end-of-contents octets for an indefinite length).
    public var end: Int
    /// True when the element used the BER indefinite-length form.
    public var indefinite: Bool

    public var contentRange: Range<Int> { contentStart..<contentEnd }
    public var encodedRange: Range<Int> { start..<end }
}
