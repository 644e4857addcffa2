/// How to mint an assertion. Defaults give a valid assertion shaped like Apple's (flags 0x40, no extension
/// map, DER signature as OpenSSL produced it); each property changes one thing.
public struct AssertionOptions: Sendable {
    /// Which digest is signed.
    public enum SignedDigest: Sendable {
        /// SHA-256(nonce) with nonce = SHA-256(authenticatorData ‖ clientDataHash): what devices sign.
        case hashOfNonce
        /// The nonce itself: the "double hash trap" a verifier that prehashes wrongly would accept.
        case nonce
    }

    /// The S half of the signature. Real devices produce either; both must verify.
    public enum SValue: Sendable {
        case asSigned, low, high
    }

    public enum SignatureEncoding: Sendable {
        case der
        /// Raw r ‖ s (64 bytes).
        case p1363
        /// DER followed by one 0x00 byte.
        case derWithTrailingByte
        /// DER with r replaced by 0.
        case zeroR
    }

    public var flags: UInt8
    /// Hashes this App ID into rpIdHash instead of teamId.bundleId.
    public var rpIdAppId: String?
    /// The map after the 37 fixed bytes (iOS 27 sends Apple's, see `CBORItem.appleExtensions`); nil for none.
    public var extensions: CBORItem?
    /// Applied to authenticatorData before it is signed, for structural faults that still carry a good signature.
    public var transformAuthenticatorData: (@Sendable ([UInt8]) -> [UInt8])?
    /// Signs with another device's key (the server holds the minting device's).
    public var signingDevice: Device?
    public var signedDigest: SignedDigest
    public var sValue: SValue
    public var encoding: SignatureEncoding

    public init(
        flags: UInt8 = 0x40, rpIdAppId: String? = nil, extensions: CBORItem? = nil,
        transformAuthenticatorData: (@Sendable ([UInt8]) -> [UInt8])? = nil, signingDevice: Device? = nil,
        signedDigest: SignedDigest = .hashOfNonce, sValue: SValue = .asSigned, encoding: SignatureEncoding = .der
    ) {
        self.flags = flags
        self.rpIdAppId = rpIdAppId
        self.extensions = extensions
        self.transformAuthenticatorData = transformAuthenticatorData
        self.signingDevice = signingDevice
        self.signedDigest = signedDigest
        self.sValue = sValue
        self.encoding = encoding
    }
}
