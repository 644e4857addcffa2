import AttestCore
import DeviceIntelligence
import PostgresClient

/// The SQL of the events outbox (`events`, migration 0009): the rows a batch's commit writes with their
/// causes, and the publisher's claim, mark, purge and grace check.
public enum EventsTable {
    /// Writes these events to the outbox, each at most once: an event already there (the same cause
    /// written by a redelivery or another worker) is left as it is. Run it in the transaction that stores
    /// the events' cause, so an event exists exactly when its cause does.
    struct Insert: PGCommandStatement {
        let events: [OutboxEvent]

        init(_ events: [OutboxEvent]) { self.events = events }

        var query: PGQuery {
            """
            INSERT INTO events (event_id, kind, partition_key, team_id, bundle_id, occurred_at, detail)
            SELECT x.id, x.kind, x.key, x.t, x.b, x.at, x.detail::jsonb
            FROM unnest(\(events.map(\.eventId))::text[], \(events.map(\.kind.rawValue))::text[], \(events.map(\.partitionKey))::text[],
                \(events.map(\.teamId))::text[], \(events.map(\.bundleId))::text[], \(events.map(\.occurredAt))::timestamptz[],
                \(events.map { JSONValue.object($0.detail).serialized() })::text[])
                AS x(id, kind, key, t, b, at, detail)
            ORDER BY x.id
            ON CONFLICT (event_id) DO NOTHING
            """
        }
    }

    /// The SQL twin of ``OutboxEvent/eventId(_:_:)`` over text expressions (the database's encoding is
    /// UTF-8, so `octet_length` is the Swift side's UTF-8 count).
    static func eventIdSQL(kind: String, _ fields: [String]) -> String {
        let parts = fields.map { "E'\\n' || octet_length(\($0))::text || ':' || \($0)" }
        return "encode(sha256(convert_to(\(([kind] + parts).joined(separator: " || ")), 'UTF8')), 'hex')"
    }

    /// The SQL twins of ``OutboxEvent/appKey(teamId:bundleId:)`` and ``OutboxEvent/deviceKey(teamId:bundleId:identity:)``.
    static func appKeySQL(team: String, bundle: String) -> String { "\(team) || '.' || \(bundle)" }
    static func deviceKeySQL(team: String, bundle: String, identity: String) -> String {
        "\(appKeySQL(team: team, bundle: bundle)) || '/' || \(identity)"
    }

    /// RFC 3339 in UTC with microseconds, for instants in an event's detail.
    static func rfc3339SQL(_ instant: String) -> String {
        "to_char(\(instant) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    }

    /// The grace period of a quota event `q` joined with its app `a`, as `MonthlyQuota` bounds it.
    static let graceEndSQL = "q.reached_at + make_interval(days => least(greatest(a.grace_days, 0), 366))"

    /// The quota events of these app months that this transaction recorded (after
    /// ``MonthlyCountsTable/Count`` in the same transaction): 80% gives `mad.quota_warning`, 100% gives
    /// `mad.quota_reached` and `mad.grace_started`. A crossing recorded before, by a redelivery or another
    /// worker, writes nothing.
    struct QuotaCrossings: PGCommandStatement {
        let months: [AppMonth]

        init(_ months: [AppMonth]) { self.months = months }

        var query: PGQuery {
            """
            WITH q AS (
                SELECT e.team_id, e.bundle_id, e.month, e.threshold, e.devices, e.mad_limit, e.reached_at
                FROM (SELECT DISTINCT * FROM unnest(\(months.map(\.teamId))::text[], \(months.map(\.bundleId))::text[],
                    \(months.map(\.month))::text[])) AS x(t, b, m)
                    CROSS JOIN LATERAL (
                        SELECT * FROM mad_quota_events
                        WHERE team_id = x.t AND bundle_id = x.b AND month = to_date(x.m, 'YYYY-MM')
                            AND \(unescaped: DeviceRiskTable.insertedHere)) e),
            k AS (
                SELECT q.*, to_char(q.month, 'YYYY-MM') AS m, k.kind, \(unescaped: graceEndSQL) AS grace_end, a.grace_days
                FROM q JOIN apps a USING (team_id, bundle_id)
                    JOIN (VALUES ('\(unescaped: EventKind.quotaWarning.rawValue)', 80), ('\(unescaped: EventKind.quotaReached.rawValue)', 100),
                        ('\(unescaped: EventKind.graceStarted.rawValue)', 100)) AS k(kind, threshold) USING (threshold))
            INSERT INTO events (event_id, kind, partition_key, team_id, bundle_id, occurred_at, detail)
            SELECT \(unescaped: eventIdSQL(kind: "k.kind", ["k.team_id", "k.bundle_id", "k.m"])), k.kind, \(unescaped: appKeySQL(team: "k.team_id", bundle: "k.bundle_id")),
                k.team_id, k.bundle_id, k.reached_at,
                CASE WHEN k.kind = '\(unescaped: EventKind.graceStarted.rawValue)'
                    THEN jsonb_build_object('month', k.m, 'devices', k.devices, 'limit', k.mad_limit,
                        'graceDays', least(greatest(k.grace_days, 0), 366), 'graceEndsAt', \(unescaped: rfc3339SQL("k.grace_end")))
                    ELSE jsonb_build_object('month', k.m, 'threshold', k.threshold, 'devices', k.devices, 'limit', k.mad_limit)
                END
            FROM k ORDER BY 1
            ON CONFLICT (event_id) DO NOTHING
            """
        }
    }
    /// The risk category changes of a round of decisions of distinct devices, written just before the
    /// round's ``DeviceRiskTable/Upserts`` (so each reads the category its row has before its decision,
    /// locking, in (app, identity) order, the rows the upserts then write): only for decisions whose verdict
    /// was stored by this transaction and whose category differs from the row's (a device without a row was
    /// trusted). Each row is looked up by its key, in key order: as a semi-join (`IN (SELECT …)`) the plan
    /// made while `device_risk` was empty walked the whole table for each batch once it had filled.
    struct RiskCategoryChanges: PGCommandStatement {
        let decisions: [Decision]

        /// - Precondition: every decision writes risk (``DeviceRiskTable/Upserts/writes(_:)``), and no two are
        ///   of one device.
        init(_ decisions: [Decision]) { self.decisions = decisions }

        var query: PGQuery {
            let c = decisions.map { $0.intelligence! }
            // The event's id and key are computed by the statement, for the few rows whose category changes.
            return """
            WITH x AS (
                SELECT * FROM unnest(\(decisions.map(\.jobId))::text[], \(c.map(\.device.teamId))::text[], \(c.map(\.device.bundleId))::text[],
                    \(c.map(\.device.identity.value))::text[], \(decisions.map { $0.receivedAt! })::timestamptz[], \(c.map(\.deviceId))::text[],
                    \(c.map(\.riskCategory.rawValue))::text[], \(c.map { Int32(clamping: $0.assessment.score) })::int4[],
                    \(decisions.map(\.storedPartitionAt))::timestamptz[])
                    AS x(job, team, bundle, identity, received, device_id, category, score, pat)),
            p AS (
                SELECT d.team_id, d.bundle_id, d.identity, d.category
                FROM (SELECT team, bundle, identity FROM x ORDER BY team, bundle, identity) k
                    CROSS JOIN LATERAL (
                        SELECT team_id, bundle_id, identity, category FROM device_risk
                        WHERE team_id = k.team AND bundle_id = k.bundle AND identity = k.identity FOR UPDATE) d),
            was AS (
                SELECT x.*, coalesce(p.category, '\(unescaped: RiskCategory.trusted.rawValue)') AS previous
                FROM x LEFT JOIN p ON p.team_id = x.team AND p.bundle_id = x.bundle AND p.identity = x.identity)
            INSERT INTO events (event_id, kind, partition_key, team_id, bundle_id, occurred_at, detail)
            SELECT \(unescaped: eventIdSQL(kind: "'\(EventKind.riskCategoryChanged.rawValue)'", ["was.team", "was.bundle", "was.identity", "was.job"])),
                '\(unescaped: EventKind.riskCategoryChanged.rawValue)', \(unescaped: deviceKeySQL(team: "was.team", bundle: "was.bundle", identity: "was.identity")),
                was.team, was.bundle, was.received,
                jsonb_build_object('identity', was.identity, 'deviceId', was.device_id, 'jobId', was.job, 'from', was.previous,
                    'to', was.category, 'score', was.score)
            FROM was
            WHERE was.previous IS DISTINCT FROM was.category
                AND EXISTS (
                    SELECT 1 FROM verdicts WHERE team_id = was.team AND bundle_id = was.bundle AND job_id = was.job
                        AND partition_at = was.pat AND \(unescaped: DeviceRiskTable.insertedHere))
            ON CONFLICT (event_id) DO NOTHING
            """
        }
    }

    /// The grace periods that passed by `now` without their `mad.grace_ended` event: each is marked on its
    /// quota row (which outlives the event's purge, so it is written once) and its event written, up to
    /// `limit` per statement, rows another publisher is marking skipped.
    public struct GraceEnded: PGAffectedRowsStatement {
        let now: Timestamp
        let limit: Int

        public init(now: Timestamp, limit: Int) {
            self.now = now
            self.limit = limit
        }

        public var query: PGQuery {
            """
            WITH due AS (
                SELECT q.team_id, q.bundle_id, q.month, \(unescaped: graceEndSQL) AS grace_end
                FROM mad_quota_events q JOIN apps a USING (team_id, bundle_id)
                WHERE q.threshold = 100 AND NOT q.grace_ended_event AND \(unescaped: graceEndSQL) <= \(now)::timestamptz
                ORDER BY q.reached_at LIMIT \(limit)
                FOR UPDATE OF q SKIP LOCKED),
            m AS (
                UPDATE mad_quota_events q SET grace_ended_event = true FROM due
                WHERE q.team_id = due.team_id AND q.bundle_id = due.bundle_id AND q.month = due.month AND q.threshold = 100
                RETURNING q.team_id, q.bundle_id, to_char(q.month, 'YYYY-MM') AS m, due.grace_end)
            INSERT INTO events (event_id, kind, partition_key, team_id, bundle_id, occurred_at, detail)
            SELECT \(unescaped: eventIdSQL(kind: "'\(EventKind.graceEnded.rawValue)'", ["m.team_id", "m.bundle_id", "m.m"])),
                '\(unescaped: EventKind.graceEnded.rawValue)', \(unescaped: appKeySQL(team: "m.team_id", bundle: "m.bundle_id")), m.team_id, m.bundle_id, m.grace_end,
                jsonb_build_object('month', m.m)
            FROM m ORDER BY 1
            ON CONFLICT (event_id) DO NOTHING
            """
        }
    }

    /// Up to `limit` unpublished events, oldest first, locked until the claiming transaction ends; rows
    /// another publisher holds are skipped, so two publishers never send one event at the same time. Only
    /// the kinds this build knows: a newer worker's kind waits for a newer publisher instead of failing
    /// every claim.
    public struct Claim: PGStatement {
        public typealias Row = OutboxEvent
        let limit: Int

        public init(limit: Int) { self.limit = limit }

        public var query: PGQuery {
            """
            SELECT event_id, kind, partition_key, team_id, bundle_id,
                (extract(epoch FROM occurred_at) * 1000000)::bigint AS occurred_at_us, detail::text AS detail
            FROM events WHERE published_at IS NULL AND kind = ANY(\(EventKind.allCases.map(\.rawValue))::text[])
            ORDER BY created_at, event_id LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
            """
        }
    }

    /// Marks these events published (the broker acknowledged them) at `now`.
    public struct MarkPublished: PGAffectedRowsStatement {
        let eventIds: [String]
        let now: Timestamp

        public init(_ eventIds: [String], now: Timestamp) {
            self.eventIds = eventIds
            self.now = now
        }

        public var query: PGQuery { "UPDATE events SET published_at = \(now)::timestamptz WHERE event_id = ANY(\(eventIds)::text[])" }
    }

    /// Deletes up to `limit` events published before `before`.
    /// How long the oldest unpublished event has waited, by the database's clock (the one that stamped
    /// it); 0 when none waits. Read from the unpublished rows' index: one row, however long the backlog.
    public struct OldestUnpublished: PGOneRowStatement {
        public init() {}

        public var query: PGQuery {
            """
            SELECT coalesce(extract(epoch FROM now() - min(created_at)) * 1000, 0)::bigint AS age_ms
            FROM events WHERE published_at IS NULL
            """
        }

        public struct Row: PGRowDecodable {
            public let seconds: Double
            public init(row: PGRow) throws(PGError) {
                let milliseconds: Int64 = try row.decode("age_ms")
                seconds = Double(milliseconds) / 1000
            }
        }
    }

    public struct Purge: PGAffectedRowsStatement {
        let before: Timestamp
        let limit: Int

        public init(before: Timestamp, limit: Int) {
            self.before = before
            self.limit = limit
        }

        public var query: PGQuery {
            """
            DELETE FROM events WHERE event_id IN (
                SELECT event_id FROM events WHERE published_at < \(before)::timestamptz
                ORDER BY published_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            """
        }
    }
}

extension OutboxEvent: PGRowDecodable {
    /// A stored detail that is not a JSON object (nothing this build writes) is a type mismatch.
    public init(row: PGRow) throws(PGError) {
        let kindText: String = try row.decode("kind")
        let detail = try row.decodeJSON("detail") { json -> [(String, JSONValue)]? in
            if case .object(let members) = json { members } else { nil }
        }
        guard let kind = EventKind(rawValue: kindText), let detail else {
            throw PGError(code: .typeMismatch, message: "events: kind \(kindText) or its detail is not one this build reads")
        }
        self.init(
            eventId: try row.decode("event_id"), kind: kind, partitionKey: try row.decode("partition_key"),
            teamId: try row.decode("team_id"), bundleId: try row.decode("bundle_id"),
            occurredAt: Timestamp(microseconds: try row.decode("occurred_at_us")), detail: detail)
    }
}
