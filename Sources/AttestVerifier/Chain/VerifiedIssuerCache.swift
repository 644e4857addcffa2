import AttestCore
import AttestCrypto
import Synchronization

/// CA certificates already verified up to one trust anchor (or set of pinned roots), keyed by their exact
/// DER bytes, with their parsed key (`ECPublicKey` for Apple's chains, `SignatureKey` for Android's).
///
/// The intermediate shared by every device (and the receipt signer shared by every receipt) is then
/// verified once, not once per job. Only the signature, name chaining and CA constraints are cached:
/// validity periods depend on the job's time and are checked every time. Entries are only ever added
/// after verification against the anchor, so a client cannot fill the cache with certificates of its own.
/// Each entry also keeps the parsed certificate, so a job carrying the same bytes again (the attestation's
/// intermediate, the receipt's CMS certificates) compares them instead of parsing them.
public final class VerifiedIssuerCache<Key: Sendable>: Sendable {
    private let entries = Mutex<[DERKey: Entry]>([:])
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    /// A bound against unforeseen growth; real deployments see a handful of CA certificates.
    public let capacity: Int

    public init(capacity: Int = 256) {
        self.capacity = capacity
    }

    /// What verification established about a certificate: its parsed form, its key, whether it may issue
    /// certificates (a cached receipt signer may not) and its own path length limit.
    struct Entry: Sendable {
        let certificate: Certificate
        let key: Key
        let isCA: Bool
        let pathLength: Int?
    }

    /// A certificate's whole DER bytes as a dictionary key, hashed as one block of bytes: `[UInt8]`'s
    /// own hashing feeds the hasher byte by byte, which was most of a warm receipt's cache lookups. Equal
    /// only for equal bytes, as before.
    struct DERKey: Hashable {
        let der: [UInt8]

        func hash(into hasher: inout Hasher) {
            der.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// The entry of a verified certificate, counting a hit or miss.
    func entry(for der: [UInt8]) -> Entry? {
        let entry = entries.withLock { $0[DERKey(der: der)] }
        if entry == nil {
            misses.add(1, ordering: .relaxed)
        } else {
            hits.add(1, ordering: .relaxed)
        }
        return entry
    }

    /// The parsed form of a verified certificate with exactly these DER bytes, without counting a lookup:
    /// parsing is deterministic, so this equals parsing `der` again.
    public func certificate(for der: [UInt8]) -> Certificate? {
        entries.withLock { $0[DERKey(der: der)]?.certificate }
    }

    func insert(_ der: [UInt8], _ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[DERKey(der: der)] = entry
        }
    }

    /// Lookups answered from the cache and lookups that required verification, since start.
    public var counts: (hits: Int, misses: Int) { (hits.load(ordering: .relaxed), misses.load(ordering: .relaxed)) }

    public var count: Int { entries.withLock { $0.count } }
}
