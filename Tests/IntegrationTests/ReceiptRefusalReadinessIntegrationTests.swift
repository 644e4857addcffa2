import AttestCore
import AttestMint
import Foundation
import PostgresClient
import Testing

extension LiveStack {
    /// A DeviceCheck key Apple refuses is an advisory on `/readyz`, never a failure of it: jobs are still
    /// verified (issue 13: "surfaced in metrics, readiness detail and logs").
    @Suite struct ReceiptRefusalReadinessIntegrationTests {
        static let note = "receipt refresh: team \(Jobs.teamId) refused by Apple (401), paused until "

        /// Ends the team's pause whatever happened, so that later suites' refreshes of the team are sent.
        static func endPause() {
            _ = try? PGConnection(conninfo: try Stack.databaseURL).execute(
                "UPDATE receipt_refresh_teams SET paused_until = now() WHERE team_id = $1 AND paused_until > now()", [.text(Jobs.teamId)])
        }

        @Test func aRefusedKeyIsNamedOnReadyzWhichStays200UntilARefreshSucceeds() throws {
            let bundleId = "com.example.rrefused.\(UUID().uuidString.prefix(8).lowercased())"
            try Jobs.registerApp(bundleId)
            // Every device of the team is refused, so no other refresh ends the pause meanwhile.
            let refusing = try ReceiptRefreshHarness.standIn(#"{"default": [{"status": 401, "body": "unauthorized"}]}"#)
            let topics = try Stack.topics("rrefused", partitions: 1)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: try ReceiptRefreshHarness.environment(refusing))
            defer {
                worker.kill(SIGTERM)
                worker.wait(seconds: 30)
                Self.endPause()
            }
            let reader = try TopicReader(topic: topics.verdicts)
            let device = try Device()
            let jobId = "\(bundleId)-att"
            try produce(topics.jobs, [(key: ReceiptRefreshHarness.key(device), value: Jobs.attestation(device, bundleId: bundleId, jobId: jobId))])
            _ = reader.read(seconds: 60) { _ in reader.verdictsByJob[jobId] != nil }
            #expect(reader.verdictsByJob[jobId]?.first.flatMap { JSONValue.parse(Array($0.utf8)) }?["ok"] == .bool(true))

            let noted = try eventually(seconds: 20) { try worker.get("/readyz").body.contains(Self.note) }
            let readyz = try worker.get("/readyz")
            #expect(noted, "\(readyz.body)\n\(worker.log.suffix(1500))")
            #expect(readyz.status == 200)
            #expect(readyz.body.hasPrefix("ok\n"))
            // One note for the team, never the key or its token.
            #expect(readyz.body.components(separatedBy: Self.note).count == 2, "\(readyz.body)")
            #expect(!readyz.body.contains(ReceiptRefreshHarness.keyId) && !readyz.body.contains("eyJ"), "\(readyz.body)")
            let metrics = try worker.get("/metrics").body
            #expect(metrics.contains("attest_receipt_refresh_teams_paused 1"))

            // The key fixed: a forced refresh of the device that Apple answers ends the pause, and the note goes.
            let answering = try ReceiptRefreshHarness.standIn(#"{"default": [{"riskMetric": 2}]}"#)
            var environment = try ReceiptRefreshHarness.environment(answering)
            environment["ATTEST_DATABASE_URL"] = try Stack.databaseURL
            environment["ATTEST_RECEIPT_TRUST_ANCHORS"] = Jobs.anchorFiles.receipt
            let refreshed = try ReceiptRefreshHarness.command(
                ["receipt", "refresh", "--key-id", Base64.encode(device.keyId), "--team", Jobs.teamId, "--bundle", bundleId], environment)
            #expect(refreshed.status == 0, "\(refreshed.output)")
            let cleared = try eventually(seconds: 10) { !(try worker.get("/readyz").body.contains(Self.note)) }
            let after = try worker.get("/readyz")
            #expect(cleared, "\(after.body)")
            #expect(after.status == 200 && after.body == "ok\n", "\(after.body)")
        }
    }
}
