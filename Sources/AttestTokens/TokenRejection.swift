/// Why a verdict token is not valid: stable reason strings for `token verify` and relying parties.
public enum TokenRejection: String, Error, Sendable, CustomStringConvertible {
    /// Not a compact JWS of strict base64url JSON objects within the size bound, no `kid`, a `crit` header,
    /// or a missing or mistyped `exp`/`nbf`.
    case malformed
    /// `alg` is anything but ES256 (`none` and HMAC included).
    case algNotAllowed = "alg_not_allowed"
    /// `kid` names no key of the set.
    case unknownKid = "unknown_kid"
    /// The signature does not verify, or its s is high (n − s of the one the issuer made).
    case signatureInvalid = "signature_invalid"
    case expired
    case notYetValid = "not_yet_valid"
    case audienceMismatch = "audience_mismatch"
    /// `iss` is not the issuer the verifier was asked to require.
    case issuerMismatch = "issuer_mismatch"

    public var description: String { rawValue }
}
