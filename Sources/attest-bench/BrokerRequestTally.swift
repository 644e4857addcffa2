import KafkaClient

/// The requests each client of a run sent to the broker: the benchmark's job producer and verdict reader
/// (their librdkafka statistics) and the worker's consumer and producer (its `attest_kafka_requests_total`).
/// A broker's work grows with its requests, so next to the broker's CPU this says who made it work, and how
/// much one request cost it.
///
/// Every client reports its statistics every ``statisticsIntervalMs``: a reading is up to that old, which is
/// why the benchmark waits that long (idle but for the clients' empty fetches) before the closing one.
struct BrokerRequestTally {
    static let statisticsIntervalMs = 1000
    static let metric = "attest_kafka_requests_total"

    /// By client: "bench producer", "bench reader", "worker consumer", "worker producer".
    var clients: [String: BrokerRequests]

    init(clients: [String: BrokerRequests]) { self.clients = clients }

    /// The benchmark's clients as they last reported, beside the worker's counts in `exposition` (its
    /// /metrics); a client with no statistics yet counts nothing.
    init(producer: BrokerRequests?, reader: BrokerRequests?, workerExposition exposition: String) {
        var clients = ["bench producer": producer ?? BrokerRequests(), "bench reader": reader ?? BrokerRequests()]
        for sample in Exposition.samples(of: Self.metric, in: exposition) {
            guard let client = Exposition.label("client", in: sample.labels), let request = Exposition.label("request", in: sample.labels),
                let value = sample.count(below: 9e18)
            else { continue }
            clients["worker " + client, default: BrokerRequests()].counts[request] = Int64(value)
        }
        self.clients = clients
    }

    /// What each client sent between `before` and this reading.
    func since(_ before: BrokerRequestTally) -> BrokerRequestTally {
        var sent: [String: BrokerRequests] = [:]
        for (client, requests) in clients { sent[client] = requests.since(before.clients[client] ?? BrokerRequests()) }
        return BrokerRequestTally(clients: sent)
    }

    /// All clients' requests (saturating: the counts are the clients' word).
    var total: Int64 {
        clients.values.reduce(0) { sum, requests in
            let (next, overflow) = sum.addingReportingOverflow(requests.total)
            return overflow ? .max : next
        }
    }

    /// Each client's requests by name, largest first.
    var rows: [(client: String, request: String, count: Int64)] {
        clients.flatMap { client, requests in requests.counts.map { (client, $0.key, $0.value) } }
            .sorted { ($0.count, $1.client, $1.request) > ($1.count, $0.client, $0.request) }
    }
}
