import AttestCore
import AttestJobs
import AttestMint
import Foundation
import Testing

extension LiveStack {
    /// Claims and data in verdicts (issue 12 item 5) from the running worker: an app registered with custom
    /// claims, an attestation and an assertion carrying subjectId and analytics metadata; the tokens verify
    /// with PyJWT against the JWKS the worker serves and carry the claims and the subject; the verdicts echo
    /// the job's data; a redelivered job gets the stored verdict byte for byte.
    @Suite struct ClaimsIntegrationTests {
        /// Built per use, not a stored global: LeakSanitizer reports a global array of JSON values as leaked.
        static var metadata: [(String, JSONValue)] {
            [
                ("subjectId", .string("user-42")), ("deviceModel", .string("iPhone16,2")), ("osVersion", .string("17.4")),
                ("appVersion", .string("2.1.0")), ("appBuildNumber", .string("210")), ("platform", .string("iOS")),
            ]
        }

        @Test func tokensCarryTheAppsClaimsAndTheSubjectAndVerifyWithPyJWT() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("claims-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let key = directory.appendingPathComponent("token.pem").path
            try #require(try Stack.run("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key]) == 0)

            let bundleId = "com.example.itest.\(UUID().uuidString.prefix(8).lowercased())"
            // Refused claims leave nothing registered; accepted ones are shown by app list.
            for bad in [#"["gold"]"#, #"{"sub":"x"}"#, #"{"subjectId":"x"}"#, #"{"a":{"b":{"c":{"d":{}}}}}"#] {
                let status = try Stack.run(Stack.binary, ["app", "add", "--team", Jobs.teamId, "--bundle", bundleId, "--claims", bad])
                #expect(status == 2, "claims \(bad) accepted")
            }
            let claims = #"{"tier":"gold","limits":{"daily":5}}"#
            try Jobs.registerApp(bundleId, policy: ["--claims", claims])
            let listed = try Stack.run(Stack.binary, ["app", "list", "--json"], capture: true)
            guard case .array(let apps)? = JSONValue.parse(Array(listed.output.utf8)) else {
                Issue.record("app list --json: \(listed.output)")
                return
            }
            let app = try #require(apps.first { $0["bundleId"] == .string(bundleId) })
            #expect(app["claims"] == JSONValue.parse(Array(claims.utf8)))

            let device = try Device()
            let keyBytes = Array(Base64.encode(device.keyId).utf8)
            let attestation = Jobs.attestation(device, bundleId: bundleId, jobId: "att-\(bundleId)", metadata: Self.metadata)
            let assertion = Self.adding(
                Self.metadata, to: Jobs.assertion(device, bundleId: bundleId, jobId: "asr-\(bundleId)", counter: 1))
            let topics = try Stack.topics("claims", partitions: 1)
            let worker = try WorkerProcess(topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_TOKEN_KEYS": key])
            try produce(topics.jobs, [(keyBytes, attestation), (keyBytes, assertion)])
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= 2 }, "\(worker.log.suffix(1500))")
            // The attestation again: its stored verdict, unchanged.
            try produce(topics.jobs, [(keyBytes, attestation)])
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob["att-\(bundleId)"]?.count ?? 0 >= 2 }, "\(worker.log.suffix(1500))")

            let byJob = verdicts.verdictsByJob
            let lines = ["att-\(bundleId)", "asr-\(bundleId)"].compactMap { byJob[$0]?.first }
            try #require(lines.count == 2)
            let first = try #require(byJob["att-\(bundleId)"])
            #expect(first.count == 2 && first[0] == first[1], "the redelivered attestation's verdict differs: \(first)")
            try validate(lines, schema: "verdict")
            var tokens = [String]()
            for line in lines {
                let verdict = try #require(JSONValue.parse(Array(line.utf8)))
                #expect(verdict["ok"] == .bool(true), "\(line)")
                #expect(verdict["schemaVersion"] == .int(Verdict.schemaVersion))
                #expect(verdict["receivedAt"]?.stringValue != nil)
                for (name, value) in Self.metadata { #expect(verdict[name] == value, "\(name) in \(line)") }
                #expect(verdict["deviceIntelligence"]?["subjectId"] == .string("user-42"))
                tokens.append(try #require(verdict["token"]?.stringValue, "no token: \(line)"))
            }

            let served = try worker.get("/.well-known/jwks.json", product: true)
            #expect(served.status == 200)
            let jwksFile = directory.appendingPathComponent("jwks.json").path
            try served.body.write(toFile: jwksFile, atomically: true, encoding: .utf8)
            let decoded = try Self.pyJWTClaims(tokens, jwks: jwksFile, audience: "\(Jobs.teamId).\(bundleId)", in: directory)
            #expect(decoded.count == 2)
            for (claims, jobId) in zip(decoded, ["att-\(bundleId)", "asr-\(bundleId)"]) {
                #expect(claims["jti"] == .string(jobId))
                #expect(claims["subjectId"] == .string("user-42"))
                #expect(claims["tier"] == .string("gold"))
                #expect(claims["limits"] == .object([("daily", .int(5))]))
                #expect(claims["sub"] == .string(Base64.encode(device.keyId)))
            }
        }

        /// `json` (one object) with `members` appended.
        static func adding(_ members: [(String, JSONValue)], to json: [UInt8]) -> [UInt8] {
            guard case .object(let existing)? = JSONValue.parse(json) else { return json }
            return Array(JSONValue.object(existing + members).serialized().utf8)
        }

        /// Each token's claims as PyJWT verifies them against the JWK set in `jwks` (ES256 only, the audience
        /// and issuer checked), so a standard library, not the project's verifier, vouches for them.
        static func pyJWTClaims(_ tokens: [String], jwks: String, audience: String, in directory: URL) throws -> [JSONValue] {
            let script = directory.appendingPathComponent("verify.py").path
            try """
                import json, sys
                import jwt
                keys = {k.key_id: k.key for k in jwt.PyJWKSet.from_json(open(sys.argv[1]).read()).keys}
                for token in open(sys.argv[2]).read().split():
                    kid = jwt.get_unverified_header(token)["kid"]
                    print(json.dumps(jwt.decode(token, keys[kid], algorithms=["ES256"], audience=sys.argv[3], issuer="attest-worker")))
                """.write(toFile: script, atomically: true, encoding: .utf8)
            let tokenFile = directory.appendingPathComponent("tokens.txt").path
            try tokens.joined(separator: "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
            let python = Stack.environment["PYTHON"] ?? "/usr/bin/python3"
            let run = try Stack.run(python, [script, jwks, tokenFile, audience], capture: true)
            try #require(run.status == 0, "PyJWT refused a token (apt-get install python3-jwt; ops/test installs it): \(run.output)")
            return run.output.split(separator: "\n").compactMap { JSONValue.parse(Array($0.utf8)) }
        }
    }
}
