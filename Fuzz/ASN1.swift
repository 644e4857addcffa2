import AttestCore

/// The DER and BER reader: every element at every depth, each primitive through every value accessor
/// (most refuse the element's tag, which is part of what is tested), under both rules.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzASN1(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    for rules in [ASN1Reader.Rules.der, .ber] {
        walk(ASN1Reader(bytes, rules: rules), depth: 0)
    }
    return 0
}

/// Deeper than any structure the parsers read; bounds this walker's own recursion, not the reader's.
private let maxWalkDepth = 64

private func walk(_ level: ASN1Reader, depth: Int) {
    var reader = level
    while !reader.isAtEnd, let element = try? reader.next() {
        // Every accessor, whatever the tag: each must refuse what it does not expect without trapping.
        _ = try? reader.octets(of: element)
        _ = try? reader.integerBytes(of: element)
        _ = try? reader.integer(of: element)
        _ = try? reader.bitStringBytes(of: element)
        _ = try? reader.boolean(of: element)
        _ = (try? reader.objectIdentifier(of: element))?.description
        _ = try? reader.time(of: element)
        if depth < maxWalkDepth, element.tag.constructed, let children = try? reader.children(of: element) {
            walk(children, depth: depth + 1)
        }
    }
    _ = try? reader.finish()
}
