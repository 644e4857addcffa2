import AttestTokens
import Foundation
import Testing
import Worker

@Suite struct WorkerConfigurationTests {
    let required = ["ATTEST_KAFKA_BROKERS": "127.0.0.1:9092", "ATTEST_DATABASE_URL": "postgresql://u:secret@db/attest"]

    @Test func defaultsApplyAndTheEnvironmentWinsOverTheFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "# comment\nATTEST_BATCH_SIZE=64\nATTEST_VERDICTS_TOPIC = from.file\n".write(toFile: file, atomically: true, encoding: .utf8)
        let (configuration, _) = try WorkerConfiguration.load(
            file: file, environment: required.merging(["ATTEST_VERDICTS_TOPIC": "from.env", "PATH": "/bin"]) { a, _ in a })
        #expect(configuration.batchSize == 64)
        #expect(configuration.verdictsTopic == "from.env")
        #expect(configuration.jobsTopics == ["appattest.jobs"])
        #expect(configuration.deadLetterTopic == "appattest.deadletter")
        #expect(configuration.maxJobAgeSeconds == 86_400 && configuration.maxFutureSkewSeconds == 60)
        #expect(configuration.httpAddress == "127.0.0.1:8080")
        #expect(configuration.migrateAtStart && !configuration.admitUnknownApps)
    }

    @Test func everyProblemIsReportedAtOnce() {
        let environment = [
            "ATTEST_BATCH_SIZE": "zero", "ATTEST_HTTP_ADDRESS": "nowhere", "ATTEST_TYPO": "1",
            "ATTEST_KAFKA_PROPERTIES": "acks=all,oops", "ATTEST_LOG_LEVEL": "loud",
        ]
        #expect(throws: WorkerConfiguration.Invalid.self) { try WorkerConfiguration.load(file: nil, environment: environment) }
        do {
            _ = try WorkerConfiguration.load(file: nil, environment: environment)
        } catch {
            let text = error.description
            for name in ["ATTEST_KAFKA_BROKERS", "ATTEST_DATABASE_URL", "ATTEST_BATCH_SIZE", "ATTEST_HTTP_ADDRESS", "ATTEST_TYPO",
                         "ATTEST_KAFKA_PROPERTIES", "ATTEST_LOG_LEVEL"] {
                #expect(text.contains(name), "\(name) not reported")
            }
        }
    }

    @Test func secretsAreRedactedWhenPrinted() throws {
        let environment = required.merging(["ATTEST_KAFKA_PROPERTIES": "sasl.password=hunter2,acks=all"]) { a, _ in a }
        let (_, resolved) = try WorkerConfiguration.load(file: nil, environment: environment)
        let printed = WorkerConfiguration.describe(resolved).map { "\($0.0)=\($0.1)" }.joined(separator: "\n")
        #expect(!printed.contains("secret") && !printed.contains("hunter2"))
        #expect(printed.contains("acks=all"))
    }

    @Test func tokenKeysAreLoadedAtStartAndTheFirstSigns() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("current.pem").path
        try """
            -----BEGIN EC PRIVATE KEY-----
            MHcCAQEEIIzsBO+Q5Y6RPHLDc2xVIuxjhWSWmRpVf8QqcpKX8hJuoAoGCCqGSM49
            AwEHoUQDQgAEGAnqV1wWomyOepEadYwj1xISDbNB/FzT+cHv9EhyslqohVK/BLBh
            oRjC9NKGP6NX4SO+EgNm+JgQEul+Ztwc3w==
            -----END EC PRIVATE KEY-----
            """.write(toFile: key, atomically: true, encoding: .utf8)
        let notAKey = directory.appendingPathComponent("not-a-key.pem").path
        try "hello".write(toFile: notAKey, atomically: true, encoding: .utf8)

        let (none, _) = try WorkerConfiguration.load(file: nil, environment: required)
        #expect(none.tokenSigner == nil && none.jwksJSON == #"{"keys":[]}"#)

        let (configured, _) = try WorkerConfiguration.load(
            file: nil, environment: required.merging(["ATTEST_TOKEN_KEYS": key, "ATTEST_TOKEN_ISSUER": "edge-1"]) { a, _ in a })
        #expect(configured.tokenSigner?.issuer == "edge-1")
        #expect(configured.jwksJSON.contains(try #require(configured.tokenSigner?.signingKeyID)))

        for keys in ["\(key),\(notAKey)", "\(key),/nonexistent.pem", "\(key),,\(key)", "\(key),\(key)"] {
            #expect(throws: WorkerConfiguration.Invalid.self, "\(keys)") {
                try WorkerConfiguration.load(file: nil, environment: required.merging(["ATTEST_TOKEN_KEYS": keys]) { a, _ in a })
            }
        }
    }
}
