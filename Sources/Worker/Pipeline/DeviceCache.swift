import AttestCrypto
import Synchronization

/// Attested keys parsed once and kept in memory, with the last counter and revocation read or stored. Every
/// batch reads its keys' rows again (``BatchProcessor/process(_:)``), so an entry is never older than the
/// batch's prefetch: a revocation committed before it applies to the batch. The counter here is only a hint
/// for deciding: the database's compare-and-set decides (CONTRACT 5), and a lost race is decided again
/// against the stored state.
public final class DeviceCache: Sendable {
    public struct Entry: Sendable {
        public var record: DeviceRecord
        public var key: ECPublicKey
    }

    private let entries = Mutex<[[UInt8]: Entry]>([:])
    /// Beyond this many keys the cache starts over (keys are re-read in batches, so this bounds memory only).
    public let capacity: Int

    public init(capacity: Int = 1_000_000) {
        self.capacity = capacity
    }

    public func get(_ keyId: [UInt8]) -> Entry? { entries.withLock { $0[keyId] } }

    /// Stores a device read from or written to the database; nil when its key is not a valid P-256 point.
    @discardableResult
    public func put(_ record: DeviceRecord) -> Entry? {
        if var existing = get(record.keyId), existing.record.publicKey == record.publicKey {
            existing.record = record
            entries.withLock { $0[record.keyId] = existing }
            return existing
        }
        guard let key = ECPublicKey(p256Point: record.publicKey) else { return nil }
        let entry = Entry(record: record, key: key)
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[record.keyId] = entry
        }
        return entry
    }

    public func remove(_ keyId: [UInt8]) { _ = entries.withLock { $0.removeValue(forKey: keyId) } }
}
