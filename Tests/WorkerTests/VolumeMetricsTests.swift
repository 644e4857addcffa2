import KafkaClient
import Observability
import Testing
import Worker

/// The worker's volume metrics as /metrics renders them.
@Suite("Volume metrics: consumer lag per partition")
struct VolumeMetricsTests {
    private func lagLines(_ metrics: WorkerMetrics) -> Set<String> {
        Set(metrics.registry.render().split(separator: "\n").map(String.init).filter { $0.hasPrefix("attest_consumer_lag_messages{") })
    }

    @Test("each owned partition has its lag, by topic and partition; one given up reads 0, one owned again its lag")
    func lagFollowsTheAssignment() {
        let metrics = WorkerMetrics()
        let (a0, a1, b0) = (
            TopicPartition(topic: "jobs.a", partition: 0), TopicPartition(topic: "jobs.a", partition: 1),
            TopicPartition(topic: "jobs.b", partition: 0)
        )
        metrics.recordLag([a0: 5, a1: 70_000, b0: 0])
        #expect(lagLines(metrics) == [
            #"attest_consumer_lag_messages{topic="jobs.a",partition="0"} 5"#,
            #"attest_consumer_lag_messages{topic="jobs.a",partition="1"} 70000"#,
            #"attest_consumer_lag_messages{topic="jobs.b",partition="0"} 0"#,
        ])
        // a1 moved to another member: its last figure would stay forever (series are never removed).
        metrics.recordLag([a0: 3, b0: 2])
        #expect(lagLines(metrics) == [
            #"attest_consumer_lag_messages{topic="jobs.a",partition="0"} 3"#,
            #"attest_consumer_lag_messages{topic="jobs.a",partition="1"} 0"#,
            #"attest_consumer_lag_messages{topic="jobs.b",partition="0"} 2"#,
        ])
        metrics.recordLag([a1: 9])
        #expect(lagLines(metrics) == [
            #"attest_consumer_lag_messages{topic="jobs.a",partition="0"} 0"#,
            #"attest_consumer_lag_messages{topic="jobs.a",partition="1"} 9"#,
            #"attest_consumer_lag_messages{topic="jobs.b",partition="0"} 0"#,
        ])
    }

    @Test("the batch database time is a histogram in seconds")
    func databaseTimeIsExported() {
        let text = WorkerMetrics().registry.render()
        #expect(text.contains("# TYPE attest_batch_database_seconds histogram"))
        #expect(text.contains(#"attest_batch_database_seconds_bucket{le="0.5"} 0"#))
    }
}

@Suite("Volume metrics: requests to the brokers")
struct KafkaRequestMetricsTests {
    private func requestLines(_ metrics: WorkerMetrics) -> Set<String> {
        Set(metrics.registry.render().split(separator: "\n").map(String.init).filter { $0.hasPrefix("attest_kafka_requests_total{") })
    }

    @Test("each client's cumulative counts become the counter by difference; a client's new life counts from zero")
    func requestsFollowTheClientsCounts() {
        let metrics = WorkerMetrics()
        metrics.recordRequests(client: "consumer", BrokerRequests(counts: ["Fetch": 100, "Heartbeat": 3]))
        metrics.recordRequests(client: "producer", BrokerRequests(counts: ["Produce": 7]))
        metrics.recordRequests(client: "consumer", BrokerRequests(counts: ["Fetch": 150, "Heartbeat": 3, "OffsetCommit": 1]))
        #expect(requestLines(metrics) == [
            #"attest_kafka_requests_total{client="consumer",request="Fetch"} 150"#,
            #"attest_kafka_requests_total{client="consumer",request="Heartbeat"} 3"#,
            #"attest_kafka_requests_total{client="consumer",request="OffsetCommit"} 1"#,
            #"attest_kafka_requests_total{client="producer",request="Produce"} 7"#,
        ])
        // The same figures again add nothing; lower ones are a new client's, counted from zero.
        metrics.recordRequests(client: "producer", BrokerRequests(counts: ["Produce": 7]))
        metrics.recordRequests(client: "consumer", BrokerRequests(counts: ["Fetch": 20]))
        #expect(requestLines(metrics).contains(#"attest_kafka_requests_total{client="consumer",request="Fetch"} 170"#))
        #expect(requestLines(metrics).contains(#"attest_kafka_requests_total{client="producer",request="Produce"} 7"#))
    }
}
