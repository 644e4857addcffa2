import AttestCore
import PostgresClient

/// The SQL of the events outbox (`events`, migration 0009).
enum EventsTable {
    /// Writes these events to the outbox, each at most once: an event already there (the same cause
    /// written by a redelivery or another worker) is left as it is. Run it in the transaction that stores
    /// the events' cause, so an event exists exactly when its cause does.
    struct Insert: PGCommandStatement {
        static let sql = """
            INSERT INTO events (event_id, kind, partition_key, team_id, bundle_id, occurred_at, detail)
            SELECT x.id, x.kind, x.key, x.t, x.b, x.at, x.detail::jsonb
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[])
                AS x(id, kind, key, t, b, at, detail)
            ORDER BY x.id
            ON CONFLICT (event_id) DO NOTHING
            """
        let parameters: [PGValue]

        init(_ events: [OutboxEvent]) {
            let columns: [PGArray] = [
                .text(events.map(\.eventId)), .text(events.map(\.kind.rawValue)), .text(events.map(\.partitionKey)),
                .text(events.map(\.teamId)), .text(events.map(\.bundleId)),
                .timestamptz(unixMicroseconds: events.map(\.occurredAt.microseconds)),
                .text(events.map { JSONValue.object($0.detail).serialized() }),
            ]
            parameters = columns.map(PGValue.array)
        }
    }
}
