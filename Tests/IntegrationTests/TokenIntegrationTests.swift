import AttestCore
import AttestJobs
import AttestMint
import AttestTokens
import Foundation
import Testing

extension LiveStack {
    /// Verdict tokens from the running worker (issue 4): every accepted verdict carries one that verifies
    /// against the key set the worker serves, for the job's App ID; rejected verdicts carry none.
    @Suite struct TokenIntegrationTests {
        @Test func acceptedVerdictsCarryTokensThatVerifyAgainstTheServedKeySet() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let keys = ["current", "retired"].map { directory.appendingPathComponent("\($0).pem").path }
            for key in keys {
                let status = try Stack.run("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key])
                try #require(status == 0, "openssl genpkey failed")
            }
            let topics = try Stack.topics("tokens", partitions: 1)
            let stream = try JobStream(devices: 3, assertions: 2, badSignatureEvery: 2)
            try Jobs.registerApp(stream.bundleId)
            let worker = try WorkerProcess(
                topics: topics, group: "g-\(UUID().uuidString)", extra: ["ATTEST_TOKEN_KEYS": keys.joined(separator: ",")])
            try produce(topics.jobs, stream.messages)
            let verdicts = try TopicReader(topic: topics.verdicts)
            #expect(verdicts.read(seconds: 60) { _ in verdicts.verdictsByJob.count >= stream.expected.count }, "\(worker.log.suffix(1500))")

            let served = try worker.get("/.well-known/jwks.json", product: true)
            #expect(served.status == 200)
            let jwks = try #require(JWKS(json: Array(served.body.utf8)))
            #expect(jwks.keys.count == 2, "the retired key is published too")
            let verifier = TokenVerifier(jwks: jwks)
            for (jobId, expectation) in stream.expected {
                let verdict = try #require(verdicts.verdictsByJob[jobId]?.first.flatMap { JSONValue.parse(Array($0.utf8)) })
                guard expectation.ok else {
                    #expect(verdict["token"] == nil, "\(jobId): a rejected verdict carries a token")
                    continue
                }
                guard case .string(let token)? = verdict["token"] else {
                    Issue.record("\(jobId): no token")
                    continue
                }
                let claims = try verifier.verify(token, audience: "\(Jobs.teamId).\(stream.bundleId)")
                #expect(claims["sub"] == verdict["keyId"])
                #expect(claims["jti"] == .string(jobId))
            }
        }
    }
}
