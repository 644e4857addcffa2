import AttestCore
import AttestMint
import Foundation
import Testing

extension WorkerProcess {
    /// GET PATH on the product listener with an optional bearer credential: the status and body.
    func getUsage(_ path: String, bearer: String?) throws -> (status: Int, body: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("usage-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        var arguments = ["-s", "-o", output, "-w", "%{http_code}", "-m", "10"]
        if let bearer { arguments += ["-H", "Authorization: Bearer \(bearer)"] }
        let result = try Stack.run("/usr/bin/curl", arguments + ["http://127.0.0.1:\(try httpPort())\(path)"], capture: true)
        return (Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0,
                (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }
}

extension LiveStack {
    /// `GET /v1/apps/{app}/usage` against a real worker: the month's figures as `attest-worker mad` reads them,
    /// and the auth matrix (own key, shared secret, another app's key, none, a wrong one, unregistered, malformed).
    @Suite struct UsageIntegrationTests {
        @Test func figuresAndAuthMatrix() throws {
            try resetRefusalBuckets()
            let topics = try Stack.topics("usage", partitions: 2)
            let bundleId = "com.example.usage.\(UUID().uuidString.prefix(8).lowercased())"
            let otherBundle = bundleId + ".other"
            try Jobs.registerApp(bundleId, policy: ["--mad-limit", "2", "--grace-days", "3"])
            try Jobs.registerApp(otherBundle)
            let key = try addAPIKey(bundleId)
            let otherKey = try addAPIKey(otherBundle)
            let secret = String(repeating: "u", count: 32)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_CHALLENGE_SECRET": secret])
            defer { worker.kill(SIGTERM); worker.wait(seconds: 20) }

            let path = "/v1/apps/\(Jobs.teamId).\(bundleId)/usage"
            let empty = try worker.getUsage(path, bearer: key)
            #expect(empty.status == 200, "\(empty.body)")
            let before = try #require(JSONValue.parse(Array(empty.body.utf8)))
            #expect(before["devices"] == .int(0) && before["limit"] == .int(2) && before["percent"] == .int(0))
            #expect(before["graceEndsAt"] == .null)
            #expect(before["month"]?.stringValue == Timestamp(microseconds: Int64(Date().timeIntervalSince1970 * 1_000_000)).utcMonth)

            // Three devices attest: two reach the limit (the grace period starts), the third is within it.
            let devices = try (0..<3).map { _ in try Device() }
            let messages = devices.enumerated().map { i, device in
                (key: Optional(Array(Base64.encode(device.keyId).utf8)),
                 value: Jobs.attestation(device, bundleId: bundleId, jobId: "\(bundleId)-att-\(i)"))
            }
            let reader = try TopicReader(topic: topics.verdicts)
            try produce(topics.jobs, messages)
            #expect(reader.read(seconds: 60) { _ in reader.verdictsByJob.count >= 3 }, "\(worker.log.suffix(2000))")

            let full = try worker.getUsage(path, bearer: key)
            #expect(full.status == 200, "\(full.body)")
            try validate([full.body], schema: "usage-response")
            let after = try #require(JSONValue.parse(Array(full.body.utf8)))
            #expect(after["devices"] == .int(3) && after["percent"] == .int(150))
            let graceEnd = try #require(after["graceEndsAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)))
            let expected = Int64(Date().timeIntervalSince1970) + 3 * 86_400
            #expect(abs(graceEnd.microseconds / 1_000_000 - expected) <= 120, "grace ends three days after the limit was reached")
            // The same figure `attest-worker mad` prints for the month.
            let mad = try Stack.run(
                Stack.binary, ["mad", "--app", "\(Jobs.teamId).\(bundleId)", "--month", try #require(after["month"]?.stringValue), "--json"],
                capture: true)
            guard case .array(let rows)? = JSONValue.parse(Array(mad.output.utf8)) else {
                Issue.record("mad --json printed \(mad.output)")
                return
            }
            #expect(rows.first?["devices"] == after["devices"], "\(mad.output)")

            #expect(try worker.getUsage(path, bearer: secret).status == 200)
            #expect(try worker.getUsage(path, bearer: otherKey).status == 403)
            #expect(try worker.getUsage(path, bearer: nil).status == 401)
            #expect(try worker.getUsage(path, bearer: "ak_" + String(repeating: "A", count: 43)).status == 401)
            #expect(try worker.getUsage(path, bearer: "not-a-key").status == 401)
            #expect(try worker.getUsage("/v1/apps/\(Jobs.teamId).com.example.never.registered/usage", bearer: secret).status == 404)
            #expect(try worker.getUsage("/v1/apps/\(Jobs.teamId).com.example.never.registered/usage", bearer: key).status == 403)
            for malformed in ["/v1/apps/\(Jobs.teamId)/usage", "/v1/apps/short.com.x/usage", "/v1/apps/\(Jobs.teamId).a/b/usage"] {
                #expect(try worker.getUsage(malformed, bearer: key).status == 400, "\(malformed)")
            }
            // A revoked key is no key at all.
            let revoke = try Stack.run(Stack.binary, ["app", "key", "list", "--team", Jobs.teamId, "--bundle", otherBundle], capture: true)
            let otherId = try #require(revoke.output.split(separator: "\t").first.map(String.init))
            #expect(try Stack.run(Stack.binary, ["app", "key", "revoke", "--team", Jobs.teamId, "--bundle", otherBundle, "--id", otherId]) == 0)
            #expect(try worker.getUsage(path, bearer: otherKey).status == 401)
            try resetRefusalBuckets()
        }
    }
}
