import AttestCore
import AttestCrypto
import Foundation

/// A minted attestation and its parts, so tests can recombine them (`encodeObject`) or check verifier output.
public struct MintedAttestation: Sendable {
    /// The CBOR attestation object the app sends (a job carries it base64-encoded).
    public let attestationObject: [UInt8]
    public let authData: [UInt8]
    /// SHA-256(authData ‖ clientDataHash), whatever the leaf claims.
    public let nonce: [UInt8]
    /// The credential certificate, x5c[0].
    public let leafDER: [UInt8]
    /// x5c[1].
    public let intermediateDER: [UInt8]
    /// nil when the options left the receipt out.
    public let receipt: [UInt8]?

    /// An attestation object {"fmt", "attStmt": {"x5c", "receipt"}, "authData"} in Apple's key order, for faults
    /// in the top-level shape (another fmt, a missing or reordered x5c, a garbage certificate). A nil part leaves
    /// its key out.
    public static func encodeObject(
        format: String? = AttestationObject.appleFormat, x5c: [[UInt8]]?, receipt: [UInt8]?, authData: [UInt8]?
    ) -> [UInt8] {
        var statement: [(key: CBORItem, value: CBORItem)] = []
        if let x5c { statement.append(("x5c", .array(x5c.map { .bytes($0) }))) }
        if let receipt { statement.append(("receipt", .bytes(receipt))) }
        var object: [(key: CBORItem, value: CBORItem)] = []
        if let format { object.append(("fmt", .text(format))) }
        object.append(("attStmt", .map(statement)))
        if let authData { object.append(("authData", .bytes(authData))) }
        return CBORItem.map(object).encoded
    }
}

extension TestPKI {
    /// Mints what `DCAppAttestService.attestKey` returns for `device`, at `time` (the receipt's creation time;
    /// the leaf is valid from a day before it for three days, as Apple's are).
    ///
    /// - Parameter clientDataHash: the bytes the app passed to `attestKey`, usually SHA-256 of the challenge.
    public func mintAttestation(
        device: Device, teamId: String, bundleId: String, clientDataHash: [UInt8], at time: Date,
        options: AttestationOptions = AttestationOptions()
    ) throws(MintError) -> MintedAttestation {
        let appId = "\(teamId).\(bundleId)"
        var authData = AuthenticatorData.attested(
            rpIdHash: Digest.sha256.hash(Array((options.rpIdAppId ?? appId).utf8)), flags: options.flags,
            counter: options.counter, aaguid: options.aaguid ?? options.environment.aaguid,
            credentialId: options.credentialId ?? device.keyId,
            coseKey: (options.coseKey ?? .coseKey(publicKeyX962: device.publicKeyX962)).encoded,
            extensions: options.extensions?.encoded ?? [])
        if let transform = options.transformAuthData { authData = transform(authData) }
        let nonce = Digest.sha256(authData, clientDataHash)

        let nonceExtension: RawExtension? = switch options.nonce {
        case .correct: CertificateTemplate.nonceExtension(value: CertificateTemplate.nonceExtensionValue(nonce))
        case .absent: nil
        case .value(let value): CertificateTemplate.nonceExtension(value: CertificateTemplate.nonceExtensionValue(value))
        case .extensionValue(let raw): CertificateTemplate.nonceExtension(value: raw)
        }
        let notBefore = options.leafNotBefore ?? time.addingTimeInterval(-86_400)
        let leaf = try attestationIntermediate.issue(
            .credential(
                keyId: device.keyId, device: device.key, notBefore: notBefore,
                notAfter: options.leafNotAfter ?? notBefore.addingTimeInterval(3 * 86_400), nonce: nonceExtension,
                extraExtensions: options.leafExtraExtensions),
            hash: .sha256, authorityKeyIdentifier: false)

        var intermediate = attestationIntermediate.certificate
        if let reissue = options.intermediate {
            intermediate = try attestationRoot.issue(
                .authority(
                    subject: attestationIntermediate.subjectName, key: attestationIntermediate.key,
                    notBefore: reissue.notBefore, notAfter: reissue.notAfter, isCA: reissue.isCA, pathLength: 0,
                    extraExtensions: reissue.extraExtensions),
                hash: .sha384)
        }

        let receipt: [UInt8]? = switch options.receipt {
        case .absent: nil
        case .raw(let bytes): bytes
        case .signed(let receiptOptions):
            try (receiptOptions.signingPKI ?? self).signReceipt(
                payload: CMSReceipt.payload(receiptFields(
                    receiptOptions, appId: appId, leaf: leaf, clientDataHash: clientDataHash, at: time,
                    environment: options.environment)),
                options: receiptOptions)
        }
        return MintedAttestation(
            attestationObject: MintedAttestation.encodeObject(x5c: [leaf, intermediate], receipt: receipt, authData: authData),
            authData: authData, nonce: nonce, leafDER: leaf, intermediateDER: intermediate, receipt: receipt)
    }

    /// A receipt on its own, as Apple's attestation-data endpoint answers a refresh (options of type RECEIPT,
    /// with a risk metric and not-before) or as a forged one (options signed by another PKI): for the device
    /// whose credential certificate is `credentialCertificate`, created at `time`. Field 4 only when the
    /// options give a client hash.
    public func mintReceipt(
        appId: String, credentialCertificate: [UInt8], environment: AttestationOptions.Environment, at time: Date,
        options: ReceiptOptions
    ) throws(MintError) -> [UInt8] {
        try (options.signingPKI ?? self).signReceipt(
            payload: CMSReceipt.payload(receiptFields(
                options, appId: appId, leaf: credentialCertificate, clientDataHash: nil, at: time, environment: environment)),
            options: options)
    }

    /// The receipt payload fields in Apple's order, with the options' overrides and omissions applied.
    private func receiptFields(
        _ options: ReceiptOptions, appId: String, leaf: [UInt8], clientDataHash: [UInt8]?, at time: Date,
        environment: AttestationOptions.Environment
    ) throws(MintError) -> [(type: Int, value: [UInt8])] {
        let created = options.creationTime ?? time
        let token: String
        if let given = options.token { token = given } else { token = Base64.encode(try randomBytes(64)) }
        let expires = options.expirationTime ?? created.addingTimeInterval(90 * 86_400)
        let fields: [(ReceiptPayload.Field, [UInt8])?] = [
            (.appId, Array((options.appId ?? appId).utf8)),
            (.attestedPublicKey, options.credentialCertificate ?? leaf),
            (options.clientHash ?? clientDataHash).map { (.clientHash, $0) },
            (.token, Array(token.utf8)),
            (.receiptType, Array(options.type.utf8)),
            (.environment, Array((options.environment ?? environment.receiptValue).utf8)),
            (.creationTime, Array(Timestamp(created).rfc3339Milliseconds.utf8)),
            options.riskMetric.map { (.riskMetric, Array(String($0).utf8)) },
            options.notBefore.map { (.notBefore, Array(Timestamp($0).rfc3339Milliseconds.utf8)) },
            (.expirationTime, Array(Timestamp(expires).rfc3339Milliseconds.utf8)),
        ]
        return fields.compactMap { $0 }.filter { !options.omittedFields.contains($0.0.rawValue) }
            .map { (type: $0.rawValue, value: $1) }
    }
}
