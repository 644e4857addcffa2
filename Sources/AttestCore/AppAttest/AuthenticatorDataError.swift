/// Why authenticator data cannot be used; the two cases map onto the reasons `malformed_cbor` and
/// `trailing_data` of docs/CHECK_ORDER.md.
public enum AuthenticatorDataError: Error, Sendable, Equatable {
    /// Too short, a required part missing or malformed (including the COSE key).
    case malformed(String)
    /// Bytes after the last part that are not exactly one CBOR map.
    case trailingData
}
