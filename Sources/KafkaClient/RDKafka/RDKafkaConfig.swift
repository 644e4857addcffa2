internal import CRdKafka

/// Owns an `rd_kafka_conf_t` until `rd_kafka_new` takes it over.
///
/// librdkafka frees the configuration only when `rd_kafka_new` succeeds; on failure it stays ours. So
/// this object frees it in `deinit` unless ``relinquish()`` recorded the transfer.
final class RDKafkaConfig {
    private(set) var pointer: OpaquePointer?

    /// Applies `properties` in key order, so a failure always names the same property.
    init(_ properties: [String: String]) throws(KafkaError) {
        pointer = rd_kafka_conf_new()
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            try set(name, value)
        }
    }

    func set(_ name: String, _ value: String) throws(KafkaError) {
        var reason = [CChar](repeating: 0, count: 512)
        guard rd_kafka_conf_set(pointer, name, value, &reason, reason.count) == RD_KAFKA_CONF_OK else {
            // librdkafka's reason may quote the value, which must not reach a log when it is a secret.
            let message = KafkaProperties.namesSecret(name) ? "invalid value for configuration property \"\(name)\"" : String(cBuffer: reason)
            throw KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, message: message)
        }
    }

    /// Called right after a successful `rd_kafka_new`, which now owns the configuration.
    func relinquish() {
        pointer = nil
    }

    deinit {
        if let pointer { rd_kafka_conf_destroy(pointer) }
    }
}

extension String {
    /// The text in a buffer librdkafka filled with a NUL-terminated string (error texts, settings).
    init(cBuffer buffer: [CChar]) {
        self = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
