import KafkaClient
import Testing

@Suite struct KafkaPropertiesTests {
    @Test func pairsSeparatedByCommasAndNewlinesWithWhitespaceTrimmed() throws {
        let parsed = try KafkaProperties.parse(" session.timeout.ms = 6000 ,heartbeat.interval.ms=500\n\nsasl.jaas=a=b==\r\n,")
        #expect(parsed == ["session.timeout.ms": "6000", "heartbeat.interval.ms": "500", "sasl.jaas": "a=b=="])
    }

    @Test func emptyTextAndEmptyValues() throws {
        #expect(try KafkaProperties.parse("") == [:])
        #expect(try KafkaProperties.parse("client.id=") == ["client.id": ""])
    }

    @Test func laterPairWins() throws {
        #expect(try KafkaProperties.parse("a=1,a=2") == ["a": "2"])
    }

    @Test func pairWithoutEqualsThrowsWithoutEchoingIt() {
        #expect {
            try KafkaProperties.parse("a=1,secret-fragment")
        } throws: { error in
            let error = error as! KafkaError
            return error.code == KafkaError.Code.invalidArgument && error.message.contains("entry 2")
                && !error.description.contains("secret")
        }
    }

    @Test func emptyKeyThrows() {
        #expect(throws: KafkaError.self) { try KafkaProperties.parse("=value") }
    }

    @Test func unknownPropertyIsRejectedByTheClient() {
        #expect {
            try KafkaProducer(properties: ["no.such.property": "1"])
        } throws: { error in
            let error = error as! KafkaError
            return error.code == KafkaError.Code.invalidArgument && error.name == "_INVALID_ARG"
                && error.message.contains("no.such.property") && !error.isRetriable
        }
    }

    /// Deployments secure the broker connection with librdkafka's own settings through
    /// ATTEST_KAFKA_PROPERTIES: the bundled build must accept TLS and SASL (SCRAM needs OpenSSL).
    @Test(arguments: [
        ["security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "https"],
        ["security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "worker", "sasl.password": "secret"],
        ["security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": "worker", "sasl.password": "secret"],
    ])
    func tlsAndSaslSettingsPassThrough(_ security: [String: String]) throws {
        let properties = try KafkaProperties.parse(security.map { "\($0.key)=\($0.value)" }.joined(separator: ","))
        let producer = try KafkaProducer(properties: properties.merging(["bootstrap.servers": "127.0.0.1:1"]) { a, _ in a })
        producer.close(timeoutMs: 0)
    }
}

