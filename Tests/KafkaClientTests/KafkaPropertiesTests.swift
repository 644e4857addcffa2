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
}
