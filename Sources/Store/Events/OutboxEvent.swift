import AttestCore
import AttestCrypto

/// One row of the events outbox: an event as it is stored until the publisher has it on the events topic.
/// The event JSON is the common members (eventId, kind, teamId, bundleId, occurredAt) followed by the
/// kind's `detail`.
public struct OutboxEvent: Sendable, Equatable {
    /// Deterministic: the same cause always gives the same id, so the outbox's primary key writes it once
    /// and consumers dedupe redelivered messages by it.
    public let eventId: String
    public let kind: EventKind
    /// The message key: the app for quota events, the device for device events.
    public let partitionKey: String
    public let teamId: String
    public let bundleId: String
    public let occurredAt: Timestamp
    /// The kind's own members, in order.
    public let detail: [(String, JSONValue)]

    public init(
        eventId: String, kind: EventKind, partitionKey: String, teamId: String, bundleId: String, occurredAt: Timestamp,
        detail: [(String, JSONValue)]
    ) {
        self.eventId = eventId
        self.kind = kind
        self.partitionKey = partitionKey
        self.teamId = teamId
        self.bundleId = bundleId
        self.occurredAt = occurredAt
        self.detail = detail
    }

    public static func == (a: OutboxEvent, b: OutboxEvent) -> Bool {
        a.eventId == b.eventId && a.kind == b.kind && a.partitionKey == b.partitionKey && a.teamId == b.teamId
            && a.bundleId == b.bundleId && a.occurredAt == b.occurredAt && JSONValue.object(a.detail) == .object(b.detail)
    }

    /// The id of the event of `kind` about `cause` (the fields that make it unique, e.g. app and month): the
    /// SHA-256 of the kind and the fields, each field length-prefixed so no two lists share an encoding.
    public static func eventId(_ kind: EventKind, _ cause: [String]) -> String {
        var bytes = Array(kind.rawValue.utf8)
        for field in cause {
            let utf8 = Array(field.utf8)
            bytes += Array("\n\(utf8.count):".utf8) + utf8
        }
        return Hex.encode(Digest.sha256(bytes))
    }

    /// The key of an app's events.
    public static func appKey(teamId: String, bundleId: String) -> String { "\(teamId).\(bundleId)" }

    /// The key of a device's events: its app's key and its identity (DeviceIdentity's stored value).
    public static func deviceKey(teamId: String, bundleId: String, identity: String) -> String {
        "\(appKey(teamId: teamId, bundleId: bundleId))/\(identity)"
    }

    /// The event as published.
    public var json: JSONValue {
        .object(
            [
                ("eventId", .string(eventId)), ("kind", .string(kind.rawValue)), ("teamId", .string(teamId)),
                ("bundleId", .string(bundleId)), ("occurredAt", .string(occurredAt.rfc3339)),
            ] + detail)
    }
}
