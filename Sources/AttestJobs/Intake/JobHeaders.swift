import AttestCore

/// The Kafka headers a job may carry and a verdict passes on (CONTRACT 2): where to send a copy of the
/// verdict (`reply-to`, `reply-partition`), an opaque `correlation-id`, and W3C Trace Context
/// (`traceparent`, `tracestate`). Read from the headers the consumer kept (KafkaMessage.Limits bounds
/// them), each checked here: a value that breaks its rule, or a header given more than once, is not passed
/// on, so the worker never forwards what it could not vouch for the shape of.
public struct JobHeaders: Sendable, Equatable {
    public static let jobId = "jobId"
    public static let replyTo = "reply-to"
    public static let replyPartition = "reply-partition"
    public static let correlationId = "correlation-id"
    public static let traceparent = "traceparent"
    public static let tracestate = "tracestate"

    public static let maxCorrelationIdBytes = 256
    public static let maxTracestateBytes = 512
    /// Kafka's own limit on a topic name.
    public static let maxTopicBytes = 249

    /// Where the job asked for its verdict besides the verdicts topic.
    public enum Reply: Sendable, Equatable {
        /// No `reply-to` header.
        case none
        case topic(String, partition: Int32?)
        /// `reply-to` (or `reply-partition`) is present but unusable: no reply, the reason says why.
        case malformed(String)
    }

    public var reply: Reply
    public var correlationId: [UInt8]?
    public var traceparent: String?
    /// Only with a valid `traceparent` (Trace Context: a tracestate alone is discarded).
    public var tracestate: String?

    /// `allKept`: false when the message had more headers than the consumer kept (its bounds): then a
    /// header seen once may be given again past them, and counts as given twice.
    public init(_ headers: [(name: String, value: [UInt8])], allKept: Bool = true) {
        func only(_ name: String) -> [UInt8]?? {
            let values = headers.filter { $0.name == name }.map(\.value)
            guard !values.isEmpty else { return .none }
            return values.count == 1 && allKept ? .some(values[0]) : .some(nil)
        }
        let twice = allKept ? "given more than once" : "given more than once, or with headers past the ones read"
        switch (only(Self.replyTo), only(Self.replyPartition)) {
        case (.none, _): reply = .none
        case (.some(nil), _): reply = .malformed("reply-to \(twice)")
        case (_, .some(nil)): reply = .malformed("reply-partition \(twice)")
        case (.some(let topic?), let partition):
            if let name = Self.topicName(topic) {
                if case .some(let bytes?) = partition {
                    if let number = Self.partition(bytes) {
                        reply = .topic(name, partition: number)
                    } else {
                        reply = .malformed("reply-partition is not a partition number")
                    }
                } else {
                    reply = .topic(name, partition: nil)
                }
            } else {
                reply = .malformed("reply-to is not a topic name")
            }
        }
        if case .some(let id?) = only(Self.correlationId), (1...Self.maxCorrelationIdBytes).contains(id.count) {
            correlationId = id
        }
        if case .some(let parent?) = only(Self.traceparent), Self.isTraceparent(parent) {
            traceparent = String(decoding: parent, as: UTF8.self)
            if case .some(let state?) = only(Self.tracestate), Self.isTracestate(state) {
                tracestate = String(decoding: state, as: UTF8.self)
            }
        }
    }

    /// The headers a verdict carries after `jobId`, those present and valid, in this order.
    public var passedOn: [(name: String, value: [UInt8])] {
        var headers: [(name: String, value: [UInt8])] = []
        if let correlationId { headers.append((Self.correlationId, correlationId)) }
        if let traceparent { headers.append((Self.traceparent, Array(traceparent.utf8))) }
        if let tracestate { headers.append((Self.tracestate, Array(tracestate.utf8))) }
        return headers
    }

    /// What a log line about the job carries to find it again (the correlation id as text, invalid UTF-8
    /// replaced).
    public var logFields: [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = []
        if let correlationId { fields.append(("correlationId", .string(String(decoding: correlationId, as: UTF8.self)))) }
        if let traceparent { fields.append(("traceparent", .string(traceparent))) }
        return fields
    }

    /// A Kafka topic name: 1 to 249 of `[A-Za-z0-9._-]`, not `.` or `..`.
    public static func topicName(_ bytes: [UInt8]) -> String? {
        guard (1...maxTopicBytes).contains(bytes.count), bytes != [0x2e], bytes != [0x2e, 0x2e],
            bytes.allSatisfy(isTopicByte)
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func isTopicByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// A decimal partition number from 0 to Int32.max: digits only (no sign, space or leading zero).
    static func partition(_ bytes: [UInt8]) -> Int32? {
        guard (1...10).contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }),
            bytes.count == 1 || bytes[0] != 0x30
        else { return nil }
        return Int32(String(decoding: bytes, as: UTF8.self))
    }

    /// W3C Trace Context `traceparent`: `version-traceid-parentid-flags` in lowercase hex, version not `ff`,
    /// ids not all zero; version 00 is exactly 55 bytes, a later version may add `-`-prefixed fields (up to
    /// 512 bytes here, printable ASCII).
    static func isTraceparent(_ b: [UInt8]) -> Bool {
        guard b.count >= 55, b.count <= 512, b[2] == 0x2d, b[35] == 0x2d, b[52] == 0x2d else { return false }
        let hex: (ArraySlice<UInt8>) -> Bool = { $0.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) } }
        let zero: (ArraySlice<UInt8>) -> Bool = { $0.allSatisfy { $0 == 0x30 } }
        guard hex(b[0..<2]), b[0..<2] != [0x66, 0x66], hex(b[3..<35]), !zero(b[3..<35]), hex(b[36..<52]),
            !zero(b[36..<52]), hex(b[53..<55])
        else { return false }
        if b[0..<2] == [0x30, 0x30] { return b.count == 55 }
        return b.count == 55 || (b[55] == 0x2d && b[56...].allSatisfy { (0x20...0x7e).contains($0) })
    }

    /// W3C Trace Context `tracestate`: at most 512 bytes of printable ASCII (its members are passed on as
    /// given, not interpreted).
    static func isTracestate(_ b: [UInt8]) -> Bool {
        b.count <= maxTracestateBytes && b.allSatisfy { (0x20...0x7e).contains($0) }
    }
}
