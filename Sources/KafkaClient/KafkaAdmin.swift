internal import CRdKafka

/// Topic administration, for the tools that make their own topics (`attest-worker submit`'s reply topic,
/// the benchmark's): explicit creation rather than a broker's auto-creation, which Kafka clusters often
/// disable and which picks its own partition count. `attest-worker run` creates none: its topics are the
/// deployment's (docker-compose.yml's kafka-init, checked by Tests/ops/check_compose.py).
public final class KafkaAdmin: Sendable {
    private let client: RDKafkaHandle

    /// `properties` are librdkafka settings; `bootstrap.servers` is the one that matters.
    public init(properties: [String: String]) throws(KafkaError) {
        client = try RDKafkaHandle(RD_KAFKA_PRODUCER, config: RDKafkaConfig(properties), context: nil)
    }

    /// Creates each topic that does not exist yet and waits up to `timeoutMs` for the cluster's answer.
    /// An existing topic is left as it is (its partition count is not checked). `replicationFactor` -1
    /// takes the broker's default. Throws the first failure other than "already exists".
    public func createTopics(
        _ topics: [(name: String, partitions: Int32)], replicationFactor: Int32 = -1, timeoutMs: Int32 = 10_000
    ) throws(KafkaError) {
        guard !topics.isEmpty else { return }
        var reason = [CChar](repeating: 0, count: 512)
        // Function-scoped C objects: each is destroyed by the defer right after its creation.
        var newTopics: [OpaquePointer?] = []
        defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
        for topic in topics {
            guard let newTopic = rd_kafka_NewTopic_new(
                topic.name, topic.partitions, replicationFactor, &reason, reason.count) else {
                throw KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, message: String(cBuffer: reason))
            }
            newTopics.append(newTopic)
        }
        try request("CreateTopics", RD_KAFKA_ADMIN_OP_CREATETOPICS, timeoutMs: timeoutMs, ignoring: RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS,
            send: { options, queue in rd_kafka_CreateTopics(client.pointer, &newTopics, newTopics.count, options, queue) },
            results: { event, count in
                rd_kafka_event_CreateTopics_result(event).flatMap { rd_kafka_CreateTopics_result_topics($0, &count) }
            })
    }

    /// Deletes each topic and waits up to `timeoutMs` for the cluster's answer: the tools' own topics when
    /// they are done (a broker keeping topics in memory, as the test broker does, slows with every one left).
    /// A topic that does not exist is no failure. Throws the first other failure.
    public func deleteTopics(_ names: [String], timeoutMs: Int32 = 10_000) throws(KafkaError) {
        guard !names.isEmpty else { return }
        // Function-scoped C objects, destroyed by the defer; nil only when librdkafka could not allocate one.
        var deletions: [OpaquePointer?] = names.map { rd_kafka_DeleteTopic_new($0) }
        defer { deletions.forEach { rd_kafka_DeleteTopic_destroy($0) } }
        guard !deletions.contains(nil) else { throw KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, message: "DeleteTopics: no request object") }
        try request("DeleteTopics", RD_KAFKA_ADMIN_OP_DELETETOPICS, timeoutMs: timeoutMs, ignoring: RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
            send: { options, queue in rd_kafka_DeleteTopics(client.pointer, &deletions, deletions.count, options, queue) },
            results: { event, count in
                rd_kafka_event_DeleteTopics_result(event).flatMap { rd_kafka_DeleteTopics_result_topics($0, &count) }
            })
    }

    /// One topic request: `send` issues it with options giving up after `timeoutMs` (the broker asked to
    /// finish within it too) onto a queue of its own; `results` reads the per-topic results from its event.
    /// Throws the request's error, else the first topic's error other than `ignoring`.
    private func request(
        _ name: String, _ operation: rd_kafka_admin_op_t, timeoutMs: Int32, ignoring: rd_kafka_resp_err_t,
        send: (OpaquePointer?, OpaquePointer?) -> Void,
        results: (OpaquePointer, inout Int) -> UnsafeMutablePointer<OpaquePointer?>?
    ) throws(KafkaError) {
        var reason = [CChar](repeating: 0, count: 512)
        let options = rd_kafka_AdminOptions_new(client.pointer, operation)
        defer { rd_kafka_AdminOptions_destroy(options) }
        for set in [rd_kafka_AdminOptions_set_request_timeout, rd_kafka_AdminOptions_set_operation_timeout] {
            let err = set(options, timeoutMs, &reason, reason.count)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err, message: String(cBuffer: reason)) }
        }
        let queue = RDKafkaQueue(newFor: client)
        send(options, queue.pointer)
        // The request timeout answers first; this wait only guards against a result that never comes.
        guard let event = rd_kafka_queue_poll(queue.pointer, Int32(clamping: Int(timeoutMs) + 1_000))
        else { throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, message: "\(name): no result") }
        defer { rd_kafka_event_destroy(event) }
        let err = rd_kafka_event_error(event)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw client.error(err, reason: rd_kafka_event_error_string(event).map { String(cString: $0) })
        }
        var count = 0
        guard let topics = results(event, &count) else {
            throw KafkaError(RD_KAFKA_RESP_ERR__BAD_MSG, message: "\(name): unexpected result event")
        }
        for index in 0..<count {
            let topicResult = topics[index]
            let topicErr = rd_kafka_topic_result_error(topicResult)
            guard topicErr == RD_KAFKA_RESP_ERR_NO_ERROR || topicErr == ignoring else {
                let topic = String(cString: rd_kafka_topic_result_name(topicResult))
                let detail = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) }
                    ?? String(cString: rd_kafka_err2str(topicErr))
                throw KafkaError(topicErr, message: "\(name) \(topic): \(detail)")
            }
        }
    }
}
