internal import CRdKafka

/// Owns an `rd_kafka_headers_t` built for one produce call until a queued message takes it over.
///
/// `rd_kafka_produceva` takes the list only when it queues the message; when it fails the list is still
/// the caller's. So this object frees it in `deinit` unless ``relinquish()`` recorded the transfer.
final class RDKafkaHeaders {
    private(set) var pointer: OpaquePointer?

    init(_ headers: [(name: String, value: [UInt8])]) {
        pointer = rd_kafka_headers_new(headers.count)
        for header in headers {
            // Copies name and value; never fails on a list the caller owns (it is not read-only).
            _ = header.value.withUnsafeBytes {
                rd_kafka_header_add(pointer, header.name, -1, $0.baseAddress, $0.count)
            }
        }
    }

    /// Called right after the message was queued: it frees the list with itself.
    func relinquish() {
        pointer = nil
    }

    deinit {
        if let pointer { rd_kafka_headers_destroy(pointer) }
    }
}
