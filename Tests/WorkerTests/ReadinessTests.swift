import AttestCore
import Observability
import Testing
import Worker

@Suite("The worker's readiness: conditions and reasons as types")
struct ReadinessTests {
    /// The /readyz texts operators and tests read: stable, whatever the cases are called.
    @Test("each reason has its stable /readyz text and a fixed metric label")
    func textsAndLabels() {
        let cases: [(Readiness.Reason, text: String, label: String)] = [
            (.starting, "starting", "starting"),
            (.stopping, "stopping", "stopping"),
            (.consumerError("all_brokers_down"), "consumer: all_brokers_down", "consumer_error"),
            (.producerError("fenced"), "producer: fenced", "producer_error"),
            (.unreachable, "unreachable", "unreachable"),
            (.readOnly, "read-only", "read_only"),
            (.probeFailed("syntax error (42601)"), "probe failed (syntax error (42601))", "probe_failed"),
            (.writerRetrying("read-only (25006)"), "read-only (25006)", "writer_retrying"),
            (.schemaBehind(applied: 3, bundled: 8), "schema at 3 of 8: run attest-worker migrate", "schema_behind"),
        ]
        for (reason, text, label) in cases {
            #expect(reason.text == text)
            #expect(reason.label == label)
        }
        // A label never carries the free text of a reason, so the metric's series stay bounded.
        #expect(Set(cases.map(\.label)).count == cases.count)
    }

    @Test("/readyz lists postgres, migrations, broker in that order, each starting until reported")
    func order() {
        let readiness = Readiness.Conditions()
        #expect(readiness.check() == "postgres: starting; migrations: starting; broker: starting")
        readiness.markNotReady(.broker, .consumerError("all_brokers_down"))
        readiness.markReady(.postgres)
        readiness.markNotReady(.migrations, .schemaBehind(applied: 1, bundled: 8))
        #expect(readiness.check() == "migrations: schema at 1 of 8: run attest-worker migrate; broker: consumer: all_brokers_down")
    }

    @Test("attest_readiness_unmet has 1 for each current reason and 0 for a reason that passed; attest_ready follows")
    func metric() {
        let metrics = WorkerMetrics()
        metrics.readiness.markReady(.postgres)
        metrics.readiness.markReady(.migrations)
        metrics.readiness.markNotReady(.broker, .consumerError("all_brokers_down"))
        var text = metrics.registry.render()
        #expect(text.contains(#"attest_readiness_unmet{condition="broker",reason="consumer_error"} 1"#), "\(text)")
        #expect(!text.contains(#"condition="postgres""#))
        #expect(text.contains("attest_ready 0\n"))
        metrics.readiness.markReady(.broker)
        text = metrics.registry.render()
        #expect(text.contains(#"attest_readiness_unmet{condition="broker",reason="consumer_error"} 0"#), "\(text)")
        #expect(text.contains("attest_ready 1\n"))
    }

    @Test("a refused team's advisory names the team, Apple's status and the pause's end, and keys one note per team")
    func receiptRefusal() {
        let until = Timestamp(microseconds: 1_790_000_000_000_000)
        let advisory = Readiness.Advisory.receiptRefreshRefused(team: "ABCDE12345", status: 401, pausedUntil: until)
        #expect(advisory.text == "receipt refresh: team ABCDE12345 refused by Apple (401), paused until \(until.rfc3339)")
        let later = Readiness.Advisory.receiptRefreshRefused(team: "ABCDE12345", status: 403, pausedUntil: until.adding(seconds: 60))
        #expect(advisory.key == later.key)
        #expect(advisory.key != Readiness.Advisory.receiptRefreshRefused(team: "OTHER00000", status: 401, pausedUntil: until).key)
        let readiness = Readiness.Conditions()
        readiness.advise(advisory)
        readiness.advise(later)
        #expect(readiness.advisories == [later])
        // Not a condition: the status /readyz answers is the conditions' alone.
        #expect(readiness.check() == "postgres: starting; migrations: starting; broker: starting")
    }
}
