import AttestCore
import AttestJobs
import AttestMint
import Testing
@testable import Store
@testable import Worker

/// The device cache the lanes share: what one lane read must not be undone by another's older record.
@Suite struct DeviceCacheTests {
    static func record(_ device: Device, counter: UInt32 = 0, revokedAt: Timestamp? = nil) -> DeviceRecord {
        DeviceRecord(
            keyId: device.keyId, teamId: "TEAM123456", bundleId: "com.example.cache", publicKey: device.publicKeyX962,
            counter: counter, environment: "production", deviceId: "d", fingerprint: nil, revokedAt: revokedAt)
    }

    @Test func aRevocationReadByOneLaneSurvivesAnotherLanesOlderRecord() throws {
        let cache = DeviceCache()
        let device = try Device()
        let revoked = Timestamp(seconds: 1_790_000_000)
        cache.put(Self.record(device))
        // Lane B's prefetch reads the revocation; lane A then stores its attestation or a counter from an
        // older read, without it.
        cache.put(Self.record(device, revokedAt: revoked))
        cache.put(Self.record(device, counter: 4))
        #expect(cache.get(device.keyId)?.record.revokedAt == revoked)
        #expect(cache.get(device.keyId)?.record.counter == 4)
        // Across a restart of the cache's capacity too.
        let small = DeviceCache(capacity: 1)
        small.put(Self.record(device, revokedAt: revoked))
        small.put(Self.record(device, counter: 9))
        #expect(small.get(device.keyId)?.record.revokedAt == revoked)
    }
}

/// Keys that stand for database keys compare their bytes, as PostgreSQL does, not Unicode equivalence.
@Suite struct ExactKeyTests {
    static let composed = "caf\u{E9}-1"
    static let decomposed = "cafe\u{301}-1"

    @Test func canonicallyEquivalentJobIdsAreTwoJobs() {
        #expect(Self.composed == Self.decomposed, "Swift's String calls them equal: the reason for the rule")
        let app = AppIdentity(teamId: "TEAM123456", bundleId: "com.example.exact")
        let a = ScopedJobId(app: app, jobId: Self.composed)
        let b = ScopedJobId(app: app, jobId: Self.decomposed)
        #expect(a != b)
        #expect(Set([a, b]).count == 2)
        #expect(a == ScopedJobId(app: app, jobId: "caf\u{E9}-1"))
    }

    @Test func canonicallyEquivalentFingerprintsAreTwoDevices() {
        let a = DeviceIdentity(fingerprint: Self.composed)
        let b = DeviceIdentity(fingerprint: Self.decomposed)
        #expect(a != b)
        #expect(Set([a, b]).count == 2)
        let month = AppMonth(teamId: "TEAM123456", bundleId: "com.example.exact", month: "2026-12")
        #expect(Set([MonthlyDevice(month: month, identity: a), MonthlyDevice(month: month, identity: b)]).count == 2)
    }
}
