import AttestCore
import AttestJobs

/// Who a device is for monthly active devices, quotas and risk (CONTRACT 7): the job's deviceFingerprint, else
/// the fingerprint stored with its key at attestation, else its keyId, so a regenerated key with the same
/// fingerprint is the same device. Stored as "fingerprint:…" or "key:<hex>": the two never collide.
public struct DeviceIdentity: Hashable, Sendable {
    public let value: String

    public init(job: Job, keyBytes: [UInt8]?, stored: DeviceRecord?) {
        if let fingerprint = job.metadata["deviceFingerprint"] ?? stored?.fingerprint {
            value = Self.fingerprint(fingerprint)
        } else {
            value = "key:" + (keyBytes.map(Hex.encode) ?? job.keyId)
        }
    }

    /// The identity a stored key was attested under.
    public init(record: DeviceRecord) {
        value = record.fingerprint.map(Self.fingerprint) ?? "key:" + Hex.encode(record.keyId)
    }

    public init(fingerprint: String) {
        value = Self.fingerprint(fingerprint)
    }

    init(stored value: String) {
        self.value = value
    }

    private static func fingerprint(_ text: String) -> String { "fingerprint:" + text }

    /// Byte for byte, as `device_risk` and `mad_devices` key it (``ExactText``): two fingerprints Unicode
    /// calls equivalent are two devices there, so they are two here.
    public static func == (a: Self, b: Self) -> Bool { ExactText.equal(a.value, b.value) }

    public func hash(into hasher: inout Hasher) { ExactText.hash(value, into: &hasher) }
}
