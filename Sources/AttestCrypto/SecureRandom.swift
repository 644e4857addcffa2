internal import COpenSSL

/// Bytes from OpenSSL's CSPRNG (`RAND_bytes`), for values an attacker must not predict: challenges,
/// certificate serials, receipt tokens.
public enum SecureRandom {
    /// Raised only when OpenSSL's generator is not seeded or fails, which callers treat as fatal for
    /// the request.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String { "RAND_bytes failed: the CSPRNG is unavailable" }
    }

    public static func bytes(_ count: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw Failure() }
        return bytes
    }
}
