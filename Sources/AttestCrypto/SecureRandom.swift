import AttestCore
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

    /// A random (version 4) UUID in its lowercase text form. Foundation's `UUID()` opens and reads
    /// `/dev/urandom` for each one; OpenSSL's generator makes one without a system call.
    public static func uuid() throws(Failure) -> String {
        var bytes = try self.bytes(16)
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { Hex.encode(bytes[$0]) }.joined(separator: "-")
    }
}
