import AttestCrypto
import AttestVerifier
import Store
import Synchronization

/// Attested keys parsed once and kept in memory, with the last counter and revocation read or stored. Every
/// batch reads its keys' rows again under their locks (``BatchProcessor/process(_:)``), so an entry is never
/// older than the batch's gather: a revocation committed before it applies to the batch. The counter here is
/// only a hint between batches: the batch decides from the row its gather read, and the database's
/// compare-and-set stays the last word (CONTRACT 5).
public final class DeviceCache: Sendable {
    public struct Entry: Sendable {
        public var record: DeviceRecord
        public var key: DeviceKey
    }

    /// A stored key parsed for its platform's requests: an App Attest P-256 point, or an Android key's
    /// SubjectPublicKeyInfo. A struct of optionals, not an enum of class payloads (``SignatureKey`` says why).
    public struct DeviceKey: Sendable {
        /// An App Attest key; nil for an Android one.
        public let appAttest: ECPublicKey?
        /// An Android key (its ``AttestedAndroidKey/key`` nil when of an algorithm this build cannot use).
        public let android: AttestedAndroidKey?

        /// The key `record` holds, parsed as its environment says; nil when it does not parse.
        public init?(_ record: DeviceRecord) {
            if record.isAndroid {
                (appAttest, android) = (nil, AttestedAndroidKey(subjectPublicKeyInfo: record.publicKey))
            } else {
                guard let key = ECPublicKey(p256Point: record.publicKey) else { return nil }
                (appAttest, android) = (key, nil)
            }
        }

        /// An App Attest key just verified.
        public init(appAttest key: ECPublicKey) {
            (appAttest, android) = (key, nil)
        }
    }

    private let entries = Mutex<[[UInt8]: Entry]>([:])
    /// Beyond this many keys the cache starts over (keys are re-read in batches, so this bounds memory only).
    public let capacity: Int

    public init(capacity: Int = 1_000_000) {
        self.capacity = capacity
    }

    public func get(_ keyId: [UInt8]) -> Entry? { entries.withLock { $0[keyId] } }

    /// Stores a device read from or written to the database; nil when its key does not parse.
    /// A revocation the entry holds is kept when `record` has none: nothing un-revokes a key, and a record
    /// built from an older read (a lane storing its attestation, or advancing a counter) must not wipe a
    /// revocation another lane's gather read since. `parsed`: `record`'s key already parsed (a key just
    /// verified), used instead of parsing its bytes when the entry is new.
    @discardableResult
    public func put(_ record: DeviceRecord, parsed: DeviceKey? = nil) -> Entry? {
        let updated = entries.withLock { entries -> Entry? in
            guard var existing = entries[record.keyId], existing.record.publicKey == record.publicKey else { return nil }
            existing.record = Self.keepingRevocation(record, of: existing.record)
            entries[record.keyId] = existing
            return existing
        }
        if let updated { return updated }
        guard let key = parsed ?? DeviceKey(record) else { return nil }
        return entries.withLock { entries in
            let record = Self.keepingRevocation(record, of: entries[record.keyId]?.record)
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            let entry = Entry(record: record, key: key)
            entries[record.keyId] = entry
            return entry
        }
    }

    private static func keepingRevocation(_ record: DeviceRecord, of existing: DeviceRecord?) -> DeviceRecord {
        guard record.revokedAt == nil, let revokedAt = existing?.revokedAt else { return record }
        var kept = record
        kept.revokedAt = revokedAt
        return kept
    }

    public func remove(_ keyId: [UInt8]) { _ = entries.withLock { $0.removeValue(forKey: keyId) } }
}
