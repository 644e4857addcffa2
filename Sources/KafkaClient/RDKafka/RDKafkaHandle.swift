internal import CRdKafka

/// Owns one `rd_kafka_t` and the object its C callbacks reach through the configuration's opaque.
///
/// librdkafka's client calls are thread-safe, so the handle is shared across threads; the owners
/// (consumer, producer) decide which calls each thread may make. `deinit` calls `rd_kafka_destroy`, so
/// whoever drops the last reference must not be a librdkafka callback.
final class RDKafkaHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    /// Reached by callbacks as an unretained pointer: kept alive here until after `rd_kafka_destroy`
    /// (stored properties are released only after `deinit` has run).
    private let context: AnyObject?

    init(_ type: rd_kafka_type_t, config: RDKafkaConfig, context: AnyObject?) throws(KafkaError) {
        if let context {
            rd_kafka_conf_set_opaque(config.pointer, Unmanaged.passUnretained(context).toOpaque())
        }
        var reason = [CChar](repeating: 0, count: 512)
        guard let client = rd_kafka_new(type, config.pointer, &reason, reason.count) else {
            // Failure: the configuration is still ours, and RDKafkaConfig.deinit frees it.
            throw KafkaError(rd_kafka_last_error(), message: String(cBuffer: reason))
        }
        // Success: rd_kafka_new owns the configuration from here on and frees it with the client.
        config.relinquish()
        self.pointer = client
        self.context = context
    }

    /// A `_FATAL` code resolved to its cause, or any other code as is.
    func error(_ err: rd_kafka_resp_err_t, reason: String? = nil) -> KafkaError {
        KafkaError.resolving(err, reason: reason, client: pointer)
    }

    deinit {
        rd_kafka_destroy(pointer)
    }
}

/// Owns an `rd_kafka_queue_t`, which must be destroyed before its client: holding the client here
/// makes that order automatic.
final class RDKafkaQueue: @unchecked Sendable {
    let pointer: OpaquePointer
    let client: RDKafkaHandle

    /// The client's main queue: delivery reports and client-level errors (with the event API).
    init(mainOf client: RDKafkaHandle) {
        self.pointer = rd_kafka_queue_get_main(client.pointer)
        self.client = client
    }

    /// A private queue for the result of one request (admin calls).
    init(newFor client: RDKafkaHandle) {
        self.pointer = rd_kafka_queue_new(client.pointer)
        self.client = client
    }

    deinit {
        rd_kafka_queue_destroy(pointer)
    }
}
