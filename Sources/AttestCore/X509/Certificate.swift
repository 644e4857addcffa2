/// An X.509 v3 certificate read with the project's strict DER reader: the parts chain verification and the
/// App Attest checks use, kept as offsets/bytes of the original encoding so signatures are checked over the
/// exact TBS bytes. Parsing is lean on purpose (CONTRACT 7: OpenSSL's own parse costs about 130 µs per
/// certificate); the cryptography is still OpenSSL's.
public struct Certificate: Sendable {
    /// The whole certificate as received.
    public let der: [UInt8]
    /// The exact `tbsCertificate` bytes the issuer signed.
    public let tbsRange: Range<Int>
    public let serialNumber: [UInt8]
    /// The outer signatureAlgorithm (equal to the TBS one, which parsing checks).
    public let signatureAlgorithm: OID
    /// The DER of the issuer and subject Names, compared byte for byte when chaining.
    public let issuer: [UInt8]
    public let subject: [UInt8]
    public let notBefore: Timestamp
    public let notAfter: Timestamp
    /// The whole SubjectPublicKeyInfo, for handing to OpenSSL.
    public let subjectPublicKeyInfo: [UInt8]
    /// The SubjectPublicKeyInfo's algorithm (id-ecPublicKey, rsaEncryption, ML-DSA, ...).
    public let keyAlgorithm: OID
    /// The curve of an id-ecPublicKey key (nil for any other key type).
    public let namedCurve: OID?
    /// The subjectPublicKey BIT STRING contents: for EC keys the X9.62 point.
    public let publicKey: [UInt8]
    public let extensions: [CertificateExtension]
    /// The signatureValue BIT STRING contents: for ECDSA a DER Ecdsa-Sig-Value.
    public let signature: [UInt8]

    public var tbsBytes: ArraySlice<UInt8> { der[tbsRange] }

    /// Parses `der`, which must be exactly one DER Certificate.
    public init(der: [UInt8]) throws(ASN1Error) {
        var top = ASN1Reader(der)
        let certificate = try top.next(.sequence)
        try top.finish()
        var fields = try top.children(of: certificate)
        let tbs = try fields.next(.sequence)
        let outerAlgorithm = try AlgorithmIdentifier.signatureOID(fields.next(.sequence), in: fields)
        let signature = try fields.bitStringBytes(of: fields.next(.bitString))
        try fields.finish()

        var t = try fields.children(of: tbs)
        guard let versionField = try t.nextIf(.context(0)) else { throw ASN1Error(.invalidValue, at: tbs.start) }
        var version = try t.children(of: versionField)
        guard try version.integer(of: version.next(.integer)) == 2 else {
            throw ASN1Error(.invalidValue, at: versionField.start)
        }
        try version.finish()
        let serial = try t.integerBytes(of: t.next(.integer))
        let innerAlgorithm = try AlgorithmIdentifier.signatureOID(t.next(.sequence), in: t)
        guard innerAlgorithm == outerAlgorithm else { throw ASN1Error(.invalidValue, at: tbs.start) }
        let issuer = try t.next(.sequence)
        let validity = try t.next(.sequence)
        var v = try t.children(of: validity)
        let notBefore = try v.time(of: v.next())
        let notAfter = try v.time(of: v.next())
        try v.finish()
        let subject = try t.next(.sequence)
        let spki = try t.next(.sequence)
        var s = try t.children(of: spki)
        var algorithm = try s.children(of: s.next(.sequence))
        let keyType = try algorithm.objectIdentifier(of: algorithm.next(.objectIdentifier))
        var curve: OID? = nil
        if keyType == .ecPublicKey {
            curve = try algorithm.objectIdentifier(of: algorithm.next(.objectIdentifier))
            try algorithm.finish()
        }
        let key = try s.bitStringBytes(of: s.next(.bitString))
        try s.finish()
        // Issuer/subject unique IDs are forbidden in the profiles we accept; extensions are required.
        guard let extensionsField = try t.nextIf(.context(3)) else { throw ASN1Error(.invalidValue, at: t.position) }
        try t.finish()
        var wrapper = try t.children(of: extensionsField)
        let list = try wrapper.next(.sequence)
        try wrapper.finish()
        var e = try wrapper.children(of: list)
        var extensions = [CertificateExtension]()
        var seen = Set<OID>()
        while !e.isAtEnd {
            let ext = try CertificateExtension(e.next(.sequence), in: e)
            // RFC 5280 4.2: a certificate must not include more than one instance of an extension.
            // A set: thousands of extensions must not cost quadratic time before the signature is checked.
            guard seen.insert(ext.oid).inserted else { throw ASN1Error(.invalidValue, at: e.position) }
            extensions.append(ext)
        }
        guard !extensions.isEmpty else { throw ASN1Error(.invalidValue, at: list.start) }

        self.der = der
        self.tbsRange = tbs.encodedRange
        self.serialNumber = Array(serial)
        self.signatureAlgorithm = outerAlgorithm
        self.issuer = Array(der[issuer.encodedRange])
        self.subject = Array(der[subject.encodedRange])
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectPublicKeyInfo = Array(der[spki.encodedRange])
        self.keyAlgorithm = keyType
        self.namedCurve = curve
        self.publicKey = Array(key)
        self.extensions = extensions
        self.signature = Array(signature)
    }

    public func `extension`(_ oid: OID) -> CertificateExtension? {
        extensions.first { $0.oid == oid }
    }

    /// True when `time` is within [notBefore, notAfter], both ends inclusive (RFC 5280 4.1.2.5).
    public func isValid(at time: Timestamp) -> Bool {
        notBefore <= time && time <= notAfter
    }
}
