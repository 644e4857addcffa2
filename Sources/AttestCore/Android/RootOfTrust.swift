/// The RootOfTrust of an attestation's hardware-enforced list: what verified boot found when the device
/// started.
public struct RootOfTrust: Sendable, Equatable {
    /// Verified boot's verdict on the running system (the VerifiedBootState ENUMERATED).
    public enum VerifiedBootState: Int, Sendable {
        case verified = 0
        case selfSigned = 1
        case unverified = 2
        case failed = 3

        public var name: String {
            switch self {
            case .verified: "VERIFIED"
            case .selfSigned: "SELF_SIGNED"
            case .unverified: "UNVERIFIED"
            case .failed: "FAILED"
            }
        }
    }

    /// The public key (or its digest) that verified the boot image; all zeros on an unlocked device.
    public var verifiedBootKey: [UInt8]
    public var deviceLocked: Bool
    public var verifiedBootState: VerifiedBootState
    /// Attestation version 3 and later: the digest of the verified boot data.
    public var verifiedBootHash: [UInt8]?

    init(_ element: ASN1Element, in reader: ASN1Reader) throws(ASN1Error) {
        var r = try reader.children(of: element)
        verifiedBootKey = try r.octets(of: r.next(.octetString))
        deviceLocked = try r.boolean(of: r.next(.boolean))
        let state = try r.next(.enumerated)
        guard let parsed = VerifiedBootState(rawValue: try r.enumerated(of: state)) else {
            throw ASN1Error(.invalidValue, at: state.start)
        }
        verifiedBootState = parsed
        verifiedBootHash = try r.nextIf(.octetString).map { element throws(ASN1Error) in try r.octets(of: element) }
        try r.finish()
    }
}
