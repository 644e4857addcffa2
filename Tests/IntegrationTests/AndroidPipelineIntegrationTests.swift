import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

extension LiveStack {
    /// Android as the worker's second platform (CONTRACT 9): the same topics, check list, store and counts.
    @Suite struct AndroidPipelineIntegrationTests {
        /// One app registered with an App ID and an Android package: a stream mixing both platforms' devices
        /// is decided once per job, each key's jobs in order, and each device counted once in the month.
        @Test func aMixedStreamIsDecidedOnceAndCountsEachDeviceOnceWhateverItsPlatform() throws {
            let topics = try Stack.topics("android-mixed")
            let stream = try JobStream(devices: 6, assertions: 4, androidDevices: 6)
            try Jobs.registerApp(stream.bundleId, policy: stream.androidRegistration)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_BATCH_SIZE": "16"])
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 90) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(2000))")
            for (jobId, expectation) in stream.expected {
                let copies = try #require(verdicts.verdictsByJob[jobId], "no verdict for \(jobId)")
                #expect(Set(copies).count == 1, "\(jobId) decided differently")
                let verdict = try #require(JSONValue.parse(Array(copies[0].utf8)))
                #expect(verdict["ok"] == .bool(expectation.ok), "\(jobId): \(copies[0])")
                if jobId.hasPrefix("aatt-") || jobId.hasPrefix("aasr-") {
                    // The app is named by both: the package the job gave and the App ID it is registered with.
                    #expect(verdict["packageName"] == .string(stream.package))
                    #expect(verdict["teamId"] == .string(Jobs.teamId) && verdict["bundleId"] == .string(stream.bundleId))
                    #expect(verdict["deviceIntelligence"]?["riskScore"] != nil, "\(copies[0])")
                }
            }
            for (key, jobIds) in stream.order {
                let keyed = verdicts.messages.filter { $0.key == Array(key.utf8) }
                let seen = keyed.compactMap { m in m.headers.first { $0.name == "jobId" }.map { String(decoding: $0.value, as: UTF8.self) } }
                #expect(seen.filter { jobIds.contains($0) }.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } } == jobIds)
            }
            try validate(verdicts.messages.map { String(decoding: $0.value, as: UTF8.self) }, schema: "verdict")

            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            let month = Timestamp(microseconds: Int64(Date().timeIntervalSince1970 * 1_000_000)).utcMonth + "-01"
            let mad = try connection.execute(
                "SELECT devices FROM mad_totals WHERE team_id = $1 AND bundle_id = $2 AND month = $3::date",
                [.text(Jobs.teamId), .text(stream.bundleId), .text(month)])
            #expect(mad.int(0, 0) == Int64(stream.devices.count + stream.androidDevices.count), "each device counted once")
            let keys = try connection.execute(
                "SELECT count(*) FILTER (WHERE environment = 'android'), count(*) FROM devices WHERE bundle_id = $1", [.text(stream.bundleId)])
            #expect(keys.int(0, 0) == Int64(stream.androidDevices.count) && keys.int(0, 1) == Int64(stream.expected.count > 0 ? 12 : 0))
            let stored = try connection.execute(
                "SELECT count(*) FROM verdicts WHERE team_id = $1 AND bundle_id = $2 AND kind LIKE 'android_%'",
                [.text(Jobs.teamId), .text(stream.bundleId)])
            #expect(stored.int(0, 0) == Int64(stream.androidDevices.count * 5))
        }

        /// An app registered by its package alone, whose challenges the worker issues: the attestation and
        /// each signed request consume one; a request replayed under another jobId is refused as already used,
        /// a redelivery gets its verdict unchanged, and a request by a key never attested is unknown.
        @Test func anAndroidAssertionIsAcceptedOnceAndRefusedOnReplay() throws {
            let package = AndroidJobs.package()
            for arguments in [
                ["migrate"], ["app", "add", "--challenges", "worker"] + AndroidJobs.registration(package),
            ] {
                try #require(try Stack.run(Stack.binary, arguments) == 0, "attest-worker \(arguments.joined(separator: " ")) failed")
            }
            let issue = { () throws -> String in
                let result = try Stack.run(Stack.binary, ["challenge", "new", "--team", "android", "--bundle", package], capture: true)
                try #require(result.status == 0)
                return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let topics = try Stack.topics("android-replay")
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)")
            let key = try AndroidDeviceKey()
            let stranger = try AndroidDeviceKey()
            let (c1, c2, c3) = (try issue(), try issue(), try issue())
            let keyed = { (value: [UInt8]) in (key: Optional(Array(key.keyId.utf8)), value: value) }
            let request = AndroidJobs.assertion(key, package: package, jobId: "\(package)-request", challenge: c2)
            // The same signed request, the same challenge, under another jobId.
            let replayed = String(decoding: request, as: UTF8.self).replacingOccurrences(of: "\(package)-request", with: "\(package)-replay")
            try produce(topics.jobs, [
                keyed(AndroidJobs.attestation(key, package: package, jobId: "\(package)-attest", challenge: Base64.decode(c1)!)),
                keyed(request), keyed(Array(replayed.utf8)), keyed(request),
                keyed(AndroidJobs.assertion(stranger, package: package, jobId: "\(package)-stranger", challenge: c3)),
            ])
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { $0.count >= 5 }, "\(worker.log.suffix(2000))")
            let outcome = { (jobId: String) -> JSONValue? in
                verdicts.verdictsByJob["\(package)-\(jobId)"]?.first.flatMap { JSONValue.parse(Array($0.utf8)) }
            }
            #expect(outcome("attest")?["ok"] == .bool(true), "\(worker.log.suffix(1500))")
            #expect(outcome("attest")?["keyId"] == .string(key.keyId))
            #expect(outcome("attest")?["teamId"] == .null && outcome("attest")?["packageName"] == .string(package))
            #expect(outcome("request")?["ok"] == .bool(true))
            #expect(verdicts.verdictsByJob["\(package)-request"]?.count == 2, "the redelivery answered")
            #expect(Set(verdicts.verdictsByJob["\(package)-request"] ?? []).count == 1, "and unchanged")
            #expect(outcome("replay")?["reason"] == .string("challenge_already_used"))
            #expect(outcome("stranger")?["reason"] == .string("unknown_key"))
            let connection = try PGConnection(conninfo: try Stack.databaseURL)
            let device = try connection.execute(
                "SELECT team_id, bundle_id, environment, assertion_count FROM devices WHERE key_id = $1", [.bytes(Base64.decode(key.keyId)!)])
            #expect(device.string(0, 0) == "android" && device.string(0, 1) == package && device.string(0, 2) == "android")
            #expect(device.int(0, 3) == 1, "the accepted request counted on the device, the refused replay not")
        }
    }
}
