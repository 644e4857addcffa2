import Foundation
import Observability
import Testing

/// A registry shaped like the worker's: a plain counter, a labelled counter, a gauge and a histogram.
private func sampleRegistry() -> MetricsRegistry {
    let registry = MetricsRegistry()
    let jobs = registry.counter("attest_jobs_consumed_total", help: "Jobs taken from the jobs topic.")
    let verdicts = registry.counter(
        "attest_verdicts_total",
        help: "Verdicts by kind, code and reason.",
        labelNames: ["kind", "code", "reason"]
    )
    let inFlight = registry.gauge("attest_jobs_in_flight", help: "Jobs between consume and verdict.")
    let latency = registry.histogram(
        "attest_verification_seconds",
        help: "Verification latency.",
        labelNames: ["kind"],
        buckets: [0.25, 1, 2.5]
    )
    jobs.increment(by: 3)
    verdicts.labels(["attestation", "ok", ""]).increment()
    verdicts.labels(["assertion", "rejected", "counter_not_increasing"]).increment(by: 2)
    inFlight.set(5)
    let attestation = latency.labels(["attestation"])
    attestation.observe(0.25)
    attestation.observe(0.5)
    attestation.observe(4)
    return registry
}

@Suite("Metrics registry and the text exposition format")
struct MetricsRegistryTests {
    @Test("renders HELP, TYPE and samples exactly, families in registration order, series by label values")
    func exactRendering() throws {
        let text = sampleRegistry().render()
        #expect(
            text == """
                # HELP attest_jobs_consumed_total Jobs taken from the jobs topic.
                # TYPE attest_jobs_consumed_total counter
                attest_jobs_consumed_total 3
                # HELP attest_verdicts_total Verdicts by kind, code and reason.
                # TYPE attest_verdicts_total counter
                attest_verdicts_total{kind="assertion",code="rejected",reason="counter_not_increasing"} 2
                attest_verdicts_total{kind="attestation",code="ok",reason=""} 1
                # HELP attest_jobs_in_flight Jobs between consume and verdict.
                # TYPE attest_jobs_in_flight gauge
                attest_jobs_in_flight 5
                # HELP attest_verification_seconds Verification latency.
                # TYPE attest_verification_seconds histogram
                attest_verification_seconds_bucket{kind="attestation",le="0.25"} 1
                attest_verification_seconds_bucket{kind="attestation",le="1"} 2
                attest_verification_seconds_bucket{kind="attestation",le="2.5"} 2
                attest_verification_seconds_bucket{kind="attestation",le="+Inf"} 3
                attest_verification_seconds_sum{kind="attestation"} 4.75
                attest_verification_seconds_count{kind="attestation"} 3

                """
        )
        let parsed = try Exposition(parsing: text)
        #expect(parsed.families.map(\.type) == ["counter", "counter", "gauge", "histogram"])
        #expect(parsed.value("attest_verdicts_total", ["kind": "attestation", "code": "ok", "reason": ""]) == 1)
    }

    @Test("a family without labels shows its series at zero before any update; a labelled one shows none")
    func zeroSeries() throws {
        let registry = MetricsRegistry()
        _ = registry.counter("plain_total", help: "h")
        _ = registry.histogram("plain_seconds", help: "h", buckets: [1])
        _ = registry.gauge("labelled", help: "h", labelNames: ["kind"])
        let parsed = try Exposition(parsing: registry.render())
        #expect(parsed.value("plain_total") == 0)
        #expect(parsed.value("plain_seconds_count") == 0)
        #expect(parsed.value("plain_seconds_bucket", ["le": "+Inf"]) == 0)
        #expect(parsed.family("labelled")?.samples.isEmpty == true)
    }

    @Test("label values escape backslash, double quote and line feed; HELP escapes backslash and line feed")
    func escaping() throws {
        let registry = MetricsRegistry()
        let awkward = "a\\b\"c\nd"
        registry.counter("escapes_total", help: "line one\nback\\slash \"quoted\"", labelNames: ["v"])
            .labels([awkward]).increment()
        let text = registry.render()
        #expect(text.contains(#"# HELP escapes_total line one\nback\\slash "quoted""#))
        #expect(text.contains(#"escapes_total{v="a\\b\"c\nd"} 1"#))
        let parsed = try Exposition(parsing: text)
        #expect(parsed.family("escapes_total")?.help == "line one\nback\\slash \"quoted\"")
        #expect(parsed.value("escapes_total", ["v": awkward]) == 1)
    }

    @Test("numbers: integers plainly, fractions round-trip, infinities and NaN spelled as Prometheus does")
    func numberFormatting() throws {
        let registry = MetricsRegistry()
        let gauge = registry.gauge("numbers", help: "h", labelNames: ["case"])
        let cases: [(String, Double)] = [
            ("int", 42), ("negative", -7), ("fraction", 0.1), ("tiny", 1e-6), ("huge", 1e20), ("pinf", .infinity),
            ("ninf", -.infinity), ("nan", .nan), ("third", 1.0 / 3),
        ]
        for (name, value) in cases { gauge.labels([name]).set(value) }
        let text = registry.render()
        #expect(text.contains("numbers{case=\"int\"} 42\n"))
        #expect(text.contains("numbers{case=\"negative\"} -7\n"))
        #expect(text.contains("numbers{case=\"fraction\"} 0.1\n"))
        #expect(text.contains("numbers{case=\"pinf\"} +Inf\n"))
        #expect(text.contains("numbers{case=\"ninf\"} -Inf\n"))
        #expect(text.contains("numbers{case=\"nan\"} NaN\n"))
        let parsed = try Exposition(parsing: text)
        for (name, value) in cases {
            let read = try #require(parsed.value("numbers", ["case": name]))
            #expect(read == value || (read.isNaN && value.isNaN), "\(name)")
        }
    }

    @Test("histogram buckets are inclusive upper bounds; Duration observations count in seconds")
    func histogramBuckets() throws {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("h_seconds", help: "h", buckets: [0.1, 1])
        histogram.observe(0.1)  // exactly on a bound: that bucket
        histogram.observe(.milliseconds(100))  // the same, as a Duration
        histogram.observe(0.100001)
        histogram.observe(1)
        histogram.observe(.seconds(2))
        histogram.observe(.nan)  // ignored
        let parsed = try Exposition(parsing: registry.render())
        #expect(parsed.value("h_seconds_bucket", ["le": "0.1"]) == 2)
        #expect(parsed.value("h_seconds_bucket", ["le": "1"]) == 4)
        #expect(parsed.value("h_seconds_bucket", ["le": "+Inf"]) == 5)
        #expect(parsed.value("h_seconds_count") == 5)
        let sum = try #require(parsed.value("h_seconds_sum"))
        #expect(abs(sum - 3.300001) < 1e-9)
    }

    /// A batch's jobs all wait the batch's time: one call records them all, as that many calls would.
    @Test("observations of one value at once count as that many")
    func histogramObservesACount() throws {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("h_seconds", help: "h", buckets: [0.1, 1])
        let series = histogram.labels([])
        series.observe(0.5, count: 3)
        series.observe(0.05)
        series.observe(2, count: 0)  // nothing
        series.observe(.nan, count: 4)  // ignored
        let parsed = try Exposition(parsing: registry.render())
        #expect(parsed.value("h_seconds_bucket", ["le": "0.1"]) == 1)
        #expect(parsed.value("h_seconds_bucket", ["le": "1"]) == 4)
        #expect(parsed.value("h_seconds_bucket", ["le": "+Inf"]) == 4)
        #expect(parsed.value("h_seconds_count") == 4)
        let sum = try #require(parsed.value("h_seconds_sum"))
        #expect(abs(sum - 1.55) < 1e-9)
    }

    @Test("exponential buckets for sizes")
    func exponentialBuckets() {
        #expect(Histogram.exponentialBuckets(start: 1, factor: 2, count: 5) == [1, 2, 4, 8, 16])
    }

    @Test("counters ignore negative and NaN increments")
    func counterMonotonic() {
        let counter = MetricsRegistry().counter("c_total", help: "h")
        counter.increment()
        counter.increment(by: -5)
        counter.increment(by: .nan)
        counter.increment(by: 0.5)
        #expect(counter.value == 1.5)
    }

    @Test("past maxSeries, new label sets share one _overflow series and totals stay right")
    func boundedSeries() throws {
        let registry = MetricsRegistry()
        let counter = registry.counter("bounded_total", help: "h", labelNames: ["reason", "kind"], maxSeries: 2)
        counter.labels(["a", "x"]).increment()
        counter.labels(["b", "x"]).increment()
        counter.labels(["c", "x"]).increment()
        counter.labels(["d", "y"]).increment(by: 2)
        counter.labels(["a", "x"]).increment()  // existing series keep working
        let parsed = try Exposition(parsing: registry.render())
        let samples = try #require(parsed.family("bounded_total")).samples
        #expect(samples.count == 3)
        #expect(parsed.value("bounded_total", ["reason": "a", "kind": "x"]) == 2)
        #expect(parsed.value("bounded_total", ["reason": "_overflow", "kind": "_overflow"]) == 3)
        #expect(samples.map(\.value).reduce(0, +) == 6)
    }

    @Test("collectors run before each render, so pulled values are current")
    func collectors() throws {
        let registry = MetricsRegistry()
        let lag = registry.gauge("attest_consumer_lag", help: "Messages behind the log end.")
        let source = LockedBox(0.0)
        registry.onCollect { lag.set(source.withLock { $0 }) }
        source.withLock { $0 = 17 }
        #expect(try Exposition(parsing: registry.render()).value("attest_consumer_lag") == 17)
        source.withLock { $0 = 3 }
        #expect(try Exposition(parsing: registry.render()).value("attest_consumer_lag") == 3)
    }

    @Test("updates from many threads are all counted, and renders meanwhile stay consistent")
    func concurrentUpdates() throws {
        let registry = MetricsRegistry()
        let counter = registry.counter("concurrent_total", help: "h", labelNames: ["kind"])
        let gauge = registry.gauge("concurrent_gauge", help: "h")
        let histogram = registry.histogram("concurrent_seconds", help: "h", labelNames: ["kind"], buckets: [0.5])
        let threads = 8
        let perThread = 20_000
        let renders = onThreads(threads + 1) { index -> [String] in
            if index == threads {
                // A scraper racing the writers: every snapshot must parse (histograms consistent).
                return (0..<50).map { _ in registry.render() }
            }
            let kind = index.isMultiple(of: 2) ? "attestation" : "assertion"
            let series = counter.labels([kind])
            let observations = histogram.labels([kind])
            for step in 0..<perThread {
                series.increment()
                gauge.increment()
                observations.observe(step.isMultiple(of: 2) ? 0.25 : 1)
                gauge.decrement()
            }
            return []
        }
        for text in renders.joined() { _ = try Exposition(parsing: text) }
        let parsed = try Exposition(parsing: registry.render())
        let half = Double(threads / 2 * perThread)
        #expect(parsed.value("concurrent_total", ["kind": "attestation"]) == half)
        #expect(parsed.value("concurrent_total", ["kind": "assertion"]) == half)
        #expect(parsed.value("concurrent_gauge") == 0)
        #expect(parsed.value("concurrent_seconds_count", ["kind": "assertion"]) == half)
        #expect(parsed.value("concurrent_seconds_bucket", ["kind": "assertion", "le": "0.5"]) == half / 2)
        #expect(parsed.value("concurrent_seconds_sum", ["kind": "assertion"]) == half / 2 * 1.25)
    }

    @Test(
        "Python's prometheus_client parser reads the same families and values",
        .enabled(if: PythonPrometheusParser.isAvailable, "python3-prometheus-client not installed")
    )
    func pythonParserAgrees() throws {
        let registry = sampleRegistry()
        registry.counter("escapes_total", help: "back\\slash\nnewline", labelNames: ["v"]).labels(["a\\b\"c\nd"])
            .increment()
        let lines = try PythonPrometheusParser.samples(registry.render())
        // The Python client names counter families without `_total`, and keeps `_total` on the samples.
        #expect(lines.contains("counter|attest_jobs_consumed_total{} 3.0"))
        let labels = #"code="'rejected'",kind="'assertion'",reason="'counter_not_increasing'""#
        #expect(lines.contains("counter|attest_verdicts_total{\(labels)} 2.0"))
        #expect(lines.contains("gauge|attest_jobs_in_flight{} 5.0"))
        #expect(lines.contains(#"histogram|attest_verification_seconds_bucket{kind="'attestation'",le="'+Inf'"} 3.0"#))
        #expect(lines.contains(#"histogram|attest_verification_seconds_sum{kind="'attestation'"} 4.75"#))
        #expect(lines.contains(#"counter|escapes_total{v="'a\\b"c\nd'"} 1.0"#))
        #expect(lines.count == 2 + 1 + 1 + 6 + 1)
    }
}

/// Conditions and reasons of a test process, declared in the order /readyz lists them.
enum TestCondition: String, ReadinessCondition {
    case broker, postgres, migrations
    var name: String { rawValue }
}

struct TestAdvisory: ReadinessAdvisory {
    var key: String
    var text: String
}

enum TestReason: ReadinessReason {
    case starting
    case because(String)
    var text: String {
        switch self {
        case .starting: "starting"
        case .because(let text): text
        }
    }
    var label: String {
        switch self {
        case .starting: "starting"
        case .because: "because"
        }
    }
}

@Suite("Readiness conditions")
struct ReadinessConditionsTests {
    @Test("not ready until every condition is marked, reasons in declaration order")
    func conditions() {
        let readiness = ReadinessConditions<TestCondition, TestReason, TestAdvisory>()
        #expect(readiness.check() == "broker: starting; postgres: starting; migrations: starting")
        readiness.markReady(.broker)
        readiness.markReady(.migrations)
        readiness.markNotReady(.postgres, .because("connection refused"))
        #expect(readiness.check() == "postgres: connection refused")
        readiness.markReady(.postgres)
        #expect(readiness.check() == nil)
        readiness.markNotReady(.broker, .because("all brokers down"))
        #expect(readiness.check() == "broker: all brokers down")
    }
}
