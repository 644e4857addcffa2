import Foundation
import Testing

@testable import attest_bench

/// The pipeline benchmark's mixed stream with an Android share: the Android devices are there in the
/// share asked for, with the same counts as the Apple ones, and the in-process side (which the worker's
/// rate is compared with) decides every job of both platforms as it was minted.
@Suite struct PipelineWorkloadAndroidTests {
    @Test func aShareOfAndroidDevicesIsDecidedAsMintedInProcess() throws {
        let trust = try BenchTrust(packageName: "com.example.bench.test")
        let devices = 12
        let android = PipelineWorkload.androidDevices(devices, share: 0.25)
        #expect(android == 3)
        let workload = try PipelineWorkload.mint(
            pki: trust.pki, teamId: "BENCH12345", bundleId: "bench.test", devices: devices, prefix: "t", threads: 2,
            android: trust.android, androidDevices: android)

        #expect(workload.devices.count == devices)
        #expect(workload.jobs.count == devices * (1 + PipelineWorkload.assertionsPerDevice))
        let androidJobs = workload.jobs.filter(\.android)
        #expect(androidJobs.count == android * (1 + PipelineWorkload.assertionsPerDevice))
        #expect(androidJobs.allSatisfy { $0.jobId.hasPrefix("t-a") })
        // Every other device of each platform sends one invalid job: Apple devices 1, 3, 5, 7, Android device 1.
        #expect(workload.jobs.count { !$0.expectedOK } == 5)
        #expect(androidJobs.count { !$0.expectedOK } == 1)
        // Each device's jobs are of one platform, in order: the attestation first.
        for indices in workload.devices {
            let jobs = indices.map { workload.jobs[$0] }
            #expect(Set(jobs.map(\.android)).count == 1)
            #expect(Set(jobs.map(\.key)).count == 1, "one Kafka key per device")
            #expect(jobs.first?.jobId.hasSuffix("-0") == true)
        }

        let result = workload.verifyInProcess(0..<devices, verifier: trust.verifier, app: trust.appRules, threads: 2)
        #expect(result.jobs == workload.jobs.count)
        #expect(result.unexpected == 0)
    }

    /// Both faults of the Android requests (another signer, a challenge the client data lacks) and a request
    /// after them are decided as minted, and without the Android policy the Android jobs are not accepted.
    @Test func androidFaultsAndAppWithoutPackage() throws {
        let trust = try BenchTrust(packageName: "com.example.bench.faults")
        // Android devices 1 (another signer) and 3 (challenge not in the client data).
        let workload = try PipelineWorkload.mint(
            pki: trust.pki, teamId: "BENCH12345", bundleId: "bench.test", devices: 4, prefix: "f", threads: 2,
            android: trust.android, androidDevices: 4)
        #expect(workload.jobs.allSatisfy { $0.android })
        #expect(workload.jobs.count { !$0.expectedOK } == 2)
        #expect(workload.verifyInProcess(0..<4, verifier: trust.verifier, app: trust.appRules, threads: 1).unexpected == 0)

        let withoutPackage = workload.verifyInProcess(0..<4, verifier: trust.verifier, app: BenchTrust.appRules(nil), threads: 1)
        #expect(withoutPackage.unexpected == workload.jobs.count { $0.expectedOK }, "an app without the package accepts none")
    }

    @Test func noShareMintsAppleOnly() throws {
        let trust = try BenchTrust(packageName: "com.example.bench.none")
        let workload = try PipelineWorkload.mint(
            pki: trust.pki, teamId: "BENCH12345", bundleId: "bench.test", devices: 4, prefix: "n", threads: 2,
            android: trust.android, androidDevices: PipelineWorkload.androidDevices(4, share: 0))
        #expect(!workload.jobs.contains { $0.android })
        #expect(workload.verifyInProcess(0..<4, verifier: trust.verifier, app: trust.appRules, threads: 2).unexpected == 0)
    }
}
