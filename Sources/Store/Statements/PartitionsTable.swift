import AttestCore
import PostgresClient

/// The SQL of partition maintenance (``PartitionMaintainer``): the partitions of `verdicts` and
/// `device_risk_history` as the catalog has them, the lock that lets one worker at a time change them, and
/// the changes (through migration 0011's functions, which build the DDL from checked names), plus the
/// row retention of what partitions do not cover: the DEFAULT partitions and the billing months.
public enum PartitionsTable {
    /// The tables maintained, as their SQL names.
    static let tables = ["verdicts", "device_risk_history"]

    /// Every partition of both tables: its bounds in microseconds (nil for MINVALUE/MAXVALUE, both nil for
    /// the DEFAULT partition).
    struct Catalog: PGStatement {
        var query: PGQuery {
            """
            WITH parts AS (
                SELECT p.relname::text AS parent, c.relname::text AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
                FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
                WHERE i.inhparent IN (to_regclass('verdicts'), to_regclass('device_risk_history')))
            SELECT parent, name, bound = 'DEFAULT' AS is_default,
                (extract(epoch FROM substring(bound FROM 'FROM \\(''([^'']*)''\\)')::timestamptz) * 1000000)::bigint AS lower_us,
                (extract(epoch FROM substring(bound FROM 'TO \\(''([^'']*)''\\)')::timestamptz) * 1000000)::bigint AS upper_us
            FROM parts ORDER BY parent, name
            """
        }

        struct Row: PGRowDecodable {
            let table: String
            let isDefault: Bool
            let partition: PartitionPlanner.Partition

            init(row: PGRow) throws(PGError) {
                table = try row.decode("parent")
                isDefault = try row.decode("is_default")
                let lower: Int64? = try row.decode("lower_us")
                let upper: Int64? = try row.decode("upper_us")
                partition = PartitionPlanner.Partition(
                    name: try row.decode("name"), lower: lower.map(Timestamp.init(microseconds:)),
                    upper: upper.map(Timestamp.init(microseconds:)))
            }
        }
    }

    /// How many rows the DEFAULT partitions hold, counted up to `cap` (a bounded scan).
    struct DefaultRows: PGOneRowStatement {
        let cap: Int64

        var query: PGQuery {
            """
            SELECT (SELECT count(*) FROM (SELECT 1 FROM verdicts_default LIMIT \(cap)) v) AS verdicts,
                (SELECT count(*) FROM (SELECT 1 FROM device_risk_history_default LIMIT \(cap)) r) AS device_risk_history
            """
        }

        struct Row: PGRowDecodable {
            let verdicts: Int64
            let riskHistory: Int64

            init(row: PGRow) throws(PGError) {
                verdicts = try row.decode("verdicts")
                riskHistory = try row.decode("device_risk_history")
            }
        }
    }

    /// Bounds every lock wait of the transaction: dropping and attaching wait for the tables' locks, and
    /// a wait must not hold the batches queued behind it for long (the next round tries again).
    struct LockTimeout: PGCommandStatement {
        var query: PGQuery { "SET LOCAL lock_timeout = '2s'" }
    }

    /// Whether this transaction holds the maintenance lock (released when it ends, so a worker killed in
    /// the middle never keeps it). Advisory locks are the database's: the second key is the schema's, so
    /// deployments in two schemas of one database do not wait for each other.
    struct TryLock: PGOneRowStatement {
        let key: Int32

        var query: PGQuery { "SELECT pg_try_advisory_xact_lock(\(key)::int4, hashtext(current_schema())) AS locked" }

        struct Row: PGRowDecodable {
            let locked: Bool
            init(row: PGRow) throws(PGError) { locked = try row.decode("locked") }
        }
    }

    /// The session-scoped form of ``TryLock``, for work that cannot run in a transaction (a concurrent
    /// index build): held until ``SessionUnlock`` or the session's end, so a worker killed in the middle
    /// never keeps it. It excludes the transaction-scoped one, so one worker at a time does either.
    struct TrySessionLock: PGOneRowStatement {
        typealias Row = TryLock.Row
        let key: Int32

        var query: PGQuery { "SELECT pg_try_advisory_lock(\(key)::int4, hashtext(current_schema())) AS locked" }
    }

    /// Releases ``TrySessionLock``.
    struct SessionUnlock: PGOneRowStatement {
        typealias Row = TryLock.Row
        let key: Int32

        var query: PGQuery { "SELECT pg_advisory_unlock(\(key)::int4, hashtext(current_schema())) AS locked" }
    }

    /// Bounds, for the rest of the session, how long a statement waits for a lock. A concurrent index
    /// build waits for every transaction older than it in the database, whatever the schema: past this it
    /// fails, and the next round drops what it left and tries again, so the maintenance lock it holds meanwhile
    /// is never held behind someone else's long transaction.
    struct SessionLockTimeout: PGCommandStatement {
        let milliseconds: Int

        var query: PGQuery { "SELECT set_config('lock_timeout', \(String(milliseconds)), false)" }
    }

    /// Back to the session's configured lock timeout.
    struct ResetLockTimeout: PGCommandStatement {
        var query: PGQuery { "RESET lock_timeout" }
    }

    /// Where migration 0019's BRIN index of verdicts by decision time stands: whether the table's index
    /// exists (not before 0019), whether it is valid (every partition's attached) and whether the btree it
    /// replaces is still there.
    struct TimeIndexState: PGOneRowStatement {
        var query: PGQuery {
            """
            SELECT to_regclass('verdicts_decided_brin') IS NOT NULL AS present,
                coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('verdicts_decided_brin')), false) AS valid,
                to_regclass('verdicts_decided') IS NOT NULL AS btree
            """
        }

        struct Row: PGRowDecodable {
            let present: Bool
            let valid: Bool
            let btree: Bool

            init(row: PGRow) throws(PGError) {
                present = try row.decode("present")
                valid = try row.decode("valid")
                btree = try row.decode("btree")
            }
        }
    }

    /// For each partition of verdicts without its index by decision time attached (only once migration
    /// 0019 is applied, which names them): the statements that build it, each to run on its own outside a
    /// transaction, quoted by the database (`format`'s %I). First drops what an interrupted build left (an
    /// invalid index under that name), then builds it `CONCURRENTLY` (inserts go on), then attaches it.
    struct TimeIndexWork: PGStatement {
        var query: PGQuery {
            """
            SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I.%I', n.nspname, attest_time_index_name(c.relname)) AS drop_sql,
                format('CREATE INDEX CONCURRENTLY %I ON %I.%I USING brin (decided_at)',
                    attest_time_index_name(c.relname), n.nspname, c.relname) AS create_sql,
                format('ALTER INDEX %I.verdicts_decided_brin ATTACH PARTITION %I.%I',
                    pn.nspname, n.nspname, attest_time_index_name(c.relname)) AS attach_sql
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace pn ON pn.oid = p.relnamespace
            WHERE i.inhparent = to_regclass('verdicts')
                AND NOT EXISTS (
                    SELECT FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
                    WHERE ii.inhparent = to_regclass('verdicts_decided_brin') AND x.indrelid = c.oid)
            ORDER BY c.relname
            """
        }

        struct Row: PGRowDecodable {
            let drop: String
            let create: String
            let attach: String

            init(row: PGRow) throws(PGError) {
                drop = try row.decode("drop_sql")
                create = try row.decode("create_sql")
                attach = try row.decode("attach_sql")
            }
        }
    }

    /// Drops the btree that migration 0019's BRIN index replaces, once that index is valid (checked again
    /// under the caller's lock, by the migration's function that its last step also calls).
    struct DropTimeBtree: PGCommandStatement {
        var query: PGQuery { "SELECT attest_time_btree_drop()" }
    }

    /// Creates the partition [lower, upper) of `table`, moving into it the rows the DEFAULT partition holds
    /// in that range; returns how many it moved. Public for `attest-bench lane --stored-days`, which makes
    /// a retention's partitions as maintenance does.
    public struct Create: PGOneRowStatement {
        let table: String
        let lower: Timestamp
        let upper: Timestamp

        public init(table: String, lower: Timestamp, upper: Timestamp) {
            self.table = table
            self.lower = lower
            self.upper = upper
        }

        public var query: PGQuery { "SELECT attest_partition_create(\(table), \(lower)::timestamptz, \(upper)::timestamptz) AS moved" }

        public struct Row: PGRowDecodable {
            public let moved: Int64
            public init(row: PGRow) throws(PGError) { moved = try row.decode("moved") }
        }
    }

    /// Drops one partition of `table` with its rows.
    struct Drop: PGCommandStatement {
        let table: String
        let partition: String

        var query: PGQuery { "SELECT attest_partition_drop(\(table), \(partition))" }
    }

    /// Deletes up to `limit` rows of each DEFAULT partition older than its table's retention.
    struct PurgeDefaults: PGOneRowStatement {
        let verdictsBefore: Timestamp
        let riskHistoryBefore: Timestamp
        let limit: Int64

        var query: PGQuery {
            """
            WITH v AS (
                DELETE FROM verdicts_default WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM verdicts_default
                    WHERE partition_at < \(verdictsBefore)::timestamptz LIMIT \(limit)))
                RETURNING 1),
            r AS (
                DELETE FROM device_risk_history_default WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM device_risk_history_default
                    WHERE scored_at < \(riskHistoryBefore)::timestamptz LIMIT \(limit)))
                RETURNING 1)
            SELECT (SELECT count(*) FROM v) + (SELECT count(*) FROM r) AS deleted
            """
        }

        struct Row: PGRowDecodable {
            let deleted: Int64
            init(row: PGRow) throws(PGError) { deleted = try row.decode("deleted") }
        }
    }

    /// Deletes up to `limit` rows of each billing table (counted devices, monthly totals, quota crossings)
    /// of the UTC months before the one `months` before now's. The counted devices are reached through
    /// their primary key, app by app (each next app found by the key's first two columns, then its months
    /// before the cutoff), since they have no index by month (migration 0021).
    struct PurgeBilling: PGOneRowStatement {
        let now: Timestamp
        let months: Int
        let limit: Int64

        var query: PGQuery {
            """
            WITH cutoff AS (
                SELECT (date_trunc('month', \(now)::timestamptz AT TIME ZONE 'UTC')
                    - make_interval(months => \(months)::int))::date AS month),
            d AS (
                DELETE FROM mad_devices WHERE ctid = ANY(ARRAY(
                    WITH RECURSIVE apps (team_id, bundle_id) AS (
                        (SELECT team_id, bundle_id FROM mad_devices ORDER BY team_id, bundle_id LIMIT 1)
                        UNION ALL
                        SELECT n.team_id, n.bundle_id FROM apps a CROSS JOIN LATERAL (
                            SELECT team_id, bundle_id FROM mad_devices m WHERE (m.team_id, m.bundle_id) > (a.team_id, a.bundle_id)
                            ORDER BY team_id, bundle_id LIMIT 1) n)
                    SELECT o.ctid FROM apps CROSS JOIN LATERAL (
                        SELECT ctid FROM mad_devices m
                        WHERE m.team_id = apps.team_id AND m.bundle_id = apps.bundle_id AND m.month < (SELECT month FROM cutoff)
                        LIMIT \(limit)) o
                    LIMIT \(limit)))
                RETURNING 1),
            t AS (
                DELETE FROM mad_totals WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM mad_totals WHERE month < (SELECT month FROM cutoff) LIMIT \(limit)))
                RETURNING 1),
            q AS (
                DELETE FROM mad_quota_events WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM mad_quota_events WHERE month < (SELECT month FROM cutoff) LIMIT \(limit)))
                RETURNING 1)
            SELECT (SELECT count(*) FROM d) + (SELECT count(*) FROM t) + (SELECT count(*) FROM q) AS deleted
            """
        }

        struct Row: PGRowDecodable {
            let deleted: Int64
            init(row: PGRow) throws(PGError) { deleted = try row.decode("deleted") }
        }
    }
}
