import AttestCore
import AttestMint
import Foundation
import PostgresClient
import Testing

extension LiveStack {
    /// `attest-worker device revoke` across two running workers (each on its own jobs topic, one database):
    /// both have the key cached from earlier batches, and from their next batch both refuse its assertions
    /// and its attestation sent again with reattest_required/key_revoked; `device show` prints the row.
    @Suite struct DeviceRevocationIntegrationTests {
        static func verdict(_ reader: TopicReader, _ jobId: String, seconds: Double = 60) -> JSONValue? {
            _ = reader.read(seconds: seconds) { _ in reader.verdictsByJob[jobId] != nil }
            return reader.verdictsByJob[jobId]?.first.flatMap { JSONValue.parse(Array($0.utf8)) }
        }

        @Test func revocationReachesEveryWorkerAndShowPrintsIt() throws {
            let bundleId = "com.example.revoke.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            let a = try Stack.topics("rvka", partitions: 1)
            let b = try Stack.topics("rvkb", partitions: 1)
            let workers = try [a, b].map { try WorkerProcess(topics: $0, group: "g-\(UUID().uuidString)") }
            defer { for worker in workers { worker.kill(SIGTERM); worker.wait(seconds: 20) } }
            let readers = try [a, b].map { try TopicReader(topic: $0.verdicts) }
            let device = try Device()
            let keyId = Base64.encode(device.keyId)
            let key = Array(keyId.utf8)
            let id = { (name: String) in "\(bundleId)-\(name)" }

            // Worker A stores the attestation; each worker then accepts an assertion, so both hold the key.
            try produce(a.jobs, [(key, Jobs.attestation(device, bundleId: bundleId, jobId: id("att")))])
            #expect(Self.verdict(readers[0], id("att"))?["ok"] == .bool(true), "\(workers[0].log.suffix(1500))")
            try produce(b.jobs, [(key, Jobs.assertion(device, bundleId: bundleId, jobId: id("b1"), counter: 1))])
            #expect(Self.verdict(readers[1], id("b1"))?["ok"] == .bool(true), "\(workers[1].log.suffix(1500))")
            try produce(a.jobs, [(key, Jobs.assertion(device, bundleId: bundleId, jobId: id("a2"), counter: 2))])
            #expect(Self.verdict(readers[0], id("a2"))?["ok"] == .bool(true))

            // Revoking needs the key's own app; an unknown key or another app is refused.
            let base = ["device", "revoke", "--key-id", keyId, "--team", Jobs.teamId]
            #expect(try Stack.run(Stack.binary, base + ["--bundle", bundleId + ".other"]) == 1)
            #expect(try Stack.run(Stack.binary, ["device", "revoke", "--key-id", keyId]) != 0)
            let revoked = try Stack.run(Stack.binary, base + ["--bundle", bundleId, "--reason", "lost phone"], capture: true)
            #expect(revoked.status == 0, "\(revoked.output)")
            #expect(try Stack.run(Stack.binary, base + ["--bundle", bundleId]) == 0, "revoking again changes nothing")
            // The revocation's event was written with it, once.
            let events = try PGConnection(conninfo: try Stack.databaseURL).execute(
                "SELECT detail->>'reason' AS reason FROM events WHERE kind = 'device.revoked' AND team_id = $1 AND bundle_id = $2",
                [.text(Jobs.teamId), .text(bundleId)])
            #expect(events.count == 1)

            // Both workers, from their next batch: the next assertion and the attestation sent again.
            try produce(a.jobs, [(key, Jobs.assertion(device, bundleId: bundleId, jobId: id("a3"), counter: 3))])
            try produce(b.jobs, [
                (key, Jobs.assertion(device, bundleId: bundleId, jobId: id("b4"), counter: 4)),
                (key, Jobs.attestation(device, bundleId: bundleId, jobId: id("b-att"))),
            ])
            for (reader, jobId) in [(readers[0], id("a3")), (readers[1], id("b4")), (readers[1], id("b-att"))] {
                let verdict = Self.verdict(reader, jobId)
                #expect(verdict?["ok"] == .bool(false), "\(jobId)")
                #expect(verdict?["code"]?.stringValue == "reattest_required", "\(jobId): \(verdict?.serialized() ?? "none")")
                #expect(verdict?["reason"]?.stringValue == "key_revoked", "\(jobId)")
            }
            try validate(readers.flatMap { $0.verdictsByJob.values.flatMap { $0 } }, schema: "verdict")

            // device show: the row as stored, the revocation with its reason; the counter the last accepted one.
            let shown = try Stack.run(Stack.binary, ["device", "show", "--key-id", keyId, "--json"], capture: true)
            #expect(shown.status == 0)
            let json = try #require(JSONValue.parse(Array(shown.output.utf8)), "\(shown.output)")
            #expect(json["keyId"]?.stringValue == keyId && json["bundleId"]?.stringValue == bundleId)
            #expect(json["teamId"]?.stringValue == Jobs.teamId && json["counter"] == .int(2))
            #expect(json["environment"]?.stringValue != nil && json["attestedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) != nil)
            #expect(json["revokedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) != nil)
            #expect(json["revokedReason"]?.stringValue == "lost phone")
            #expect(json["risk"]?["category"]?.stringValue != nil, "\(shown.output)")
            let text = try Stack.run(
                Stack.binary, ["device", "show", "--key-id", keyId, "--team", Jobs.teamId, "--bundle", bundleId], capture: true)
            #expect(text.status == 0 && text.output.contains("lost phone") && text.output.contains(bundleId))
            let other = try Stack.run(Stack.binary, ["device", "show", "--key-id", keyId, "--team", Jobs.teamId, "--bundle", bundleId + ".x"])
            #expect(other == 1, "another app does not see the key")
            #expect(try Stack.run(Stack.binary, ["device", "show", "--key-id", Base64.encode([UInt8](repeating: 9, count: 32))]) == 1)
            #expect(try Stack.run(Stack.binary, ["device", "show", "--key-id", "short"]) != 0)
        }
    }
}
