import AttestCrypto

/// A minted assertion and its parts, so tests can rebuild the map (a missing key, a wrong type) with `CBORItem`.
public struct MintedAssertion: Sendable {
    /// The CBOR {"signature", "authenticatorData"} the app would send.
    public let assertion: [UInt8]
    public let authenticatorData: [UInt8]
    public let signature: [UInt8]
}

extension Device {
    /// Mints what `DCAppAttestService.generateAssertion` returns for this device's key.
    ///
    /// - Parameter clientDataHash: SHA-256 of the client data the app signs.
    public func mintAssertion(
        teamId: String, bundleId: String, clientDataHash: [UInt8], counter: UInt32,
        options: AssertionOptions = AssertionOptions()
    ) throws(MintError) -> MintedAssertion {
        var authenticatorData = AuthenticatorData.assertion(
            rpIdHash: Digest.sha256.hash(Array((options.rpIdAppId ?? "\(teamId).\(bundleId)").utf8)), flags: options.flags,
            counter: counter, extensions: options.extensions?.encoded ?? [])
        if let transform = options.transformAuthenticatorData { authenticatorData = transform(authenticatorData) }
        let nonce = Digest.sha256(authenticatorData, clientDataHash)
        let digest = options.signedDigest == .hashOfNonce ? Digest.sha256.hash(nonce) : nonce
        let signed = try (options.signingDevice ?? self).key.sign(digest: digest)
        guard var raw = ECDSASignatureEncoding.raw(fromDER: signed, coordinateSize: 32) else {
            throw MintError("unexpected ECDSA signature encoding")
        }
        if options.sValue != .asSigned, ECDSASignatureEncoding.isLowS(p256Raw: raw) == (options.sValue == .high) {
            raw = ECDSASignatureEncoding.negatingS(p256Raw: raw)
        }

        let encoded: [UInt8]? = switch options.encoding {
        case .der: ECDSASignatureEncoding.der(fromRaw: raw)
        case .p1363: raw
        case .derWithTrailingByte: ECDSASignatureEncoding.der(fromRaw: raw).map { $0 + [0] }
        case .zeroR: ECDSASignatureEncoding.der(fromRaw: [UInt8](repeating: 0, count: 32) + raw[32...])
        }
        guard let encoded else { throw MintError("cannot DER-encode the ECDSA signature") }
        let assertion = CBORItem.map([("signature", .bytes(encoded)), ("authenticatorData", .bytes(authenticatorData))])
        return MintedAssertion(assertion: assertion.encoded, authenticatorData: authenticatorData, signature: encoded)
    }
}
