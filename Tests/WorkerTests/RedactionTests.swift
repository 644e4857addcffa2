import KafkaClient
import Testing
@testable import Worker

/// Secrets never reach the start-up log, in any spelling libpq or librdkafka accepts.
@Suite struct RedactionTests {
    /// (connection string, the secret it holds, what must survive redaction).
    static let conninfos: [(String, String, String)] = [
        ("postgresql://u:hunter2@db/attest", "hunter2", "postgresql://u:***@db/attest"),
        ("postgres://u:hunter2@db:5432/attest?sslmode=require", "hunter2", "sslmode=require"),
        ("postgresql://u:hun%40ter2@db/attest", "hun%40ter2", "@db/attest"),
        ("postgresql://u:p:a:ss@h1,h2:5433/attest", "p:a:ss", "@h1,h2:5433/attest"),
        ("postgresql://u:pa?ss@db/attest", "pa?ss", "@db/attest"),
        ("postgresql://db/attest?user=u&password=hunter2&sslmode=disable", "hunter2", "sslmode=disable"),
        ("postgresql://db/attest?pass%77ord=hunter2", "hunter2", "pass%77ord=***"),
        ("postgresql://db/attest?%70assword=hunter2&application_name=x", "hunter2", "application_name=x"),
        ("postgresql://db/attest?sslpassword=hunter2", "hunter2", "sslpassword=***"),
        ("postgresql://db/attest?PASSWORD=hunter2", "hunter2", "PASSWORD=***"),
        ("postgresql://db/attest?pass%ZZword=hunter2", "hunter2", "postgresql://db/attest"),
        ("host=db password=hunter2 dbname=attest", "hunter2", "host=db password=*** dbname=attest"),
        ("host=db password = hunter2 dbname=attest", "hunter2", "dbname=attest"),
        ("host=db password='hunter 2' dbname=attest", "hunter 2", "dbname=attest"),
        ("host=db password='hun\\'ter 2' dbname=attest", "ter 2", "dbname=attest"),
        ("host=db password=hun\\ ter2 dbname=attest", "ter2", "dbname=attest"),
        ("host=db\tpassword=\thunter2\nuser=u", "hunter2", "user=u"),
        ("password=hunter2", "hunter2", "password=***"),
        ("sslpassword='hunter2' host=db", "hunter2", "host=db"),
        ("host=db password='unterminated hunter2", "hunter2", "***"),
        ("host=db password", "password", "***"),
    ]

    @Test(arguments: 0..<conninfos.count) func libpqPasswordsAreRedacted(_ index: Int) {
        let (conninfo, secret, kept) = Self.conninfos[index]
        let redacted = WorkerConfiguration.redact("ATTEST_DATABASE_URL", conninfo)
        #expect(!redacted.contains(secret), "\(conninfo) → \(redacted)")
        #expect(redacted.contains(kept), "\(conninfo) → \(redacted)")
    }

    /// (librdkafka properties, the secret, what must survive).
    static let properties: [(String, String, String)] = [
        ("sasl.password=hunter2,acks=all", "hunter2", "acks=all"),
        ("sasl.oauthbearer.client.secret=hunter2", "hunter2", "sasl.oauthbearer.client.secret=***"),
        ("ssl.key.password = hunter2\nlinger.ms=5", "hunter2", "linger.ms=5"),
        ("ssl.keystore.password=hunter2", "hunter2", "ssl.keystore.password=***"),
        ("sasl.jaas.config=org.Login required username=\"u\" password=\"hunter2\";", "hunter2", "sasl.jaas.config=***"),
        ("ssl.key.pem=-----BEGIN PRIVATE KEY-----hunter2", "hunter2", "ssl.key.pem=***"),
        ("ssl_key=hunter2", "hunter2", "ssl_key=***"),
        ("SASL.PASSWORD=hunter2", "hunter2", "SASL.PASSWORD=***"),
        ("sasl.password=hun,ter2,acks=all", "ter2", "acks=all"),
        ("sasl.password=\"hun=ter2\",acks=all", "ter2", "acks=all"),
        ("sasl.oauthbearer.config=principal=u secret=hunter2", "hunter2", "sasl.oauthbearer.config=***"),
        ("acks=all,,linger.ms=5", "", "acks=all,,linger.ms=5"),
    ]

    @Test(arguments: 0..<properties.count) func librdkafkaSecretsAreRedacted(_ index: Int) {
        let (text, secret, kept) = Self.properties[index]
        let redacted = WorkerConfiguration.redact("ATTEST_KAFKA_PROPERTIES", text)
        if !secret.isEmpty { #expect(!redacted.contains(secret), "\(text) → \(redacted)") }
        #expect(redacted.contains(kept), "\(text) → \(redacted)")
    }

    @Test func describeRedactsBothSecretSettings() throws {
        let (_, resolved) = try WorkerConfiguration.load(file: nil, environment: [
            "ATTEST_KAFKA_BROKERS": "127.0.0.1:9092", "ATTEST_DATABASE_URL": "host=db password='a b' user=u",
            "ATTEST_KAFKA_PROPERTIES": "sasl.password=hunter2,acks=all",
        ])
        let printed = WorkerConfiguration.describe(resolved).map { "\($0.0)=\($0.1)" }.joined(separator: "\n")
        #expect(!printed.contains("hunter2") && !printed.contains("'a b'"))
        #expect(printed.contains("user=u") && printed.contains("acks=all"))
    }

    /// The same rule keeps librdkafka's error text (which may quote a rejected value) out of errors.
    @Test func secretKeysAreKnownByName() {
        #expect(KafkaProperties.namesSecret("sasl.password") && KafkaProperties.namesSecret("ssl.key.pem"))
        #expect(!KafkaProperties.namesSecret("acks") && !KafkaProperties.namesSecret("bootstrap.servers"))
    }
}
