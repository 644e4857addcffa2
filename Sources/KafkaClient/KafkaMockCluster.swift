internal import CRdKafka

/// librdkafka's in-process mock cluster, for tests of Kafka code without a broker.
///
/// A client configured with `test.mock.num.brokers` gets a private cluster that no other client can
/// reach by that setting, so this object owns the cluster on a client of its own and exposes its address:
/// producers and consumers given ``bootstrapServers`` share it. The cluster lives as long as this object
/// (close the clients first). Topics are created on first use by a producer, with 4 partitions; a
/// group's first join waits 3 s (the mock's `group.initial.rebalance.delay.ms`).
public final class KafkaMockCluster: Sendable {
    private let client: RDKafkaHandle
    /// The mock brokers' `host:port` list, for `bootstrap.servers`.
    public let bootstrapServers: String

    public init(brokers: Int = 1) throws(KafkaError) {
        // log_level 4 silences only this client's notice that the mock replaced bootstrap.servers.
        let config = try RDKafkaConfig(["test.mock.num.brokers": String(brokers), "log_level": "4"])
        client = try RDKafkaHandle(RD_KAFKA_PRODUCER, config: config, context: nil)
        // rd_kafka_new replaced the client's bootstrap.servers with the mock brokers' addresses.
        let settings = rd_kafka_conf(client.pointer)
        var size = 0
        _ = rd_kafka_conf_get(settings, "bootstrap.servers", nil, &size)
        var buffer = [CChar](repeating: 0, count: size)
        guard rd_kafka_conf_get(settings, "bootstrap.servers", &buffer, &size) == RD_KAFKA_CONF_OK else {
            throw KafkaError(RD_KAFKA_RESP_ERR__FAIL, message: "mock cluster: no bootstrap.servers")
        }
        bootstrapServers = String(cBuffer: buffer)
    }

    /// The next produce requests (of any client) are answered with these errors, one request each, in
    /// order: how a test makes a broker refuse a message.
    public func failProduceRequests(_ codes: [Int32]) {
        guard let cluster = rd_kafka_handle_mock_cluster(client.pointer) else { return }
        let errors = codes.map { rd_kafka_resp_err_t(rawValue: $0) }
        rd_kafka_mock_push_request_errors_array(cluster, Self.produceApiKey, errors.count, errors)
    }

    private static let produceApiKey: Int16 = 0
}
