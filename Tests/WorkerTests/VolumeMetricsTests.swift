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
