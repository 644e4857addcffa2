import AttestCore
import PostgresClient

/// The SQL of `android_status_list` (migration 0015; the worker's `AndroidStatusListRefresher` carries out the rules).
public enum AndroidStatusListTable {
    /// What a round reads every time: the stored list's digest, size and age, and when its next fetch is due.
    public struct Current: PGOptionalRowStatement {
        public init() {}

        public var query: PGQuery {
            """
            SELECT sha256, entries, source, (extract(epoch FROM fetched_at) * 1000000)::bigint AS fetched_at_us,
                (extract(epoch FROM next_fetch_at) * 1000000)::bigint AS next_fetch_at_us
            FROM android_status_list
            """
        }

        public struct Row: PGRowDecodable {
            public let sha256: [UInt8]
            public let entries: Int
            public let source: String
            public let fetchedAt: Timestamp
            public let nextFetchAt: Timestamp

            public init(row: PGRow) throws(PGError) {
                sha256 = try row.decode("sha256")
                entries = try row.decode("entries")
                source = try row.decode("source")
                fetchedAt = Timestamp(microseconds: try row.decode("fetched_at_us"))
                nextFetchAt = Timestamp(microseconds: try row.decode("next_fetch_at_us"))
            }
        }
    }

    /// The stored list with its bytes, read only when its digest differs from the one a worker holds.
    public struct Body: PGOptionalRowStatement {
        public init() {}

        public var query: PGQuery {
            """
            SELECT body, sha256, source, (extract(epoch FROM fetched_at) * 1000000)::bigint AS fetched_at_us
            FROM android_status_list
            """
        }

        public struct Row: PGRowDecodable {
            public let body: [UInt8]
            public let sha256: [UInt8]
            public let source: String
            public let fetchedAt: Timestamp

            public init(row: PGRow) throws(PGError) {
                body = try row.decode("body")
                sha256 = try row.decode("sha256")
                source = try row.decode("source")
                fetchedAt = Timestamp(microseconds: try row.decode("fetched_at_us"))
            }
        }
    }

    /// Takes the due fetch: moves next_fetch_at to `leaseUntil` when it is due at `now`, so the other
    /// workers' rounds find it not due. One row changed: this worker fetches; none: not due, or another's.
    public struct TakeFetch: PGAffectedRowsStatement {
        let now: Timestamp
        let leaseUntil: Timestamp

        public init(now: Timestamp, leaseUntil: Timestamp) {
            self.now = now
            self.leaseUntil = leaseUntil
        }

        public var query: PGQuery {
            """
            UPDATE android_status_list SET next_fetch_at = \(leaseUntil)::timestamptz WHERE next_fetch_at <= \(now)::timestamptz
            """
        }
    }

    /// Stores a list unless the stored one is newer (a list from a file older than what was fetched since).
    public struct Store: PGAffectedRowsStatement {
        let body: [UInt8]
        let sha256: [UInt8]
        let entries: Int
        let source: String
        let fetchedAt: Timestamp
        let nextFetchAt: Timestamp

        public init(body: [UInt8], sha256: [UInt8], entries: Int, source: String, fetchedAt: Timestamp, nextFetchAt: Timestamp) {
            self.body = body
            self.sha256 = sha256
            self.entries = entries
            self.source = source
            self.fetchedAt = fetchedAt
            self.nextFetchAt = nextFetchAt
        }

        public var query: PGQuery {
            """
            INSERT INTO android_status_list (body, sha256, entries, source, fetched_at, next_fetch_at)
            VALUES (\(body), \(sha256), \(entries), \(source), \(fetchedAt)::timestamptz, \(nextFetchAt)::timestamptz)
            ON CONFLICT (id) DO UPDATE SET body = excluded.body, sha256 = excluded.sha256, entries = excluded.entries,
                source = excluded.source, fetched_at = excluded.fetched_at, next_fetch_at = excluded.next_fetch_at,
                last_failure = NULL, last_failure_at = NULL
            WHERE android_status_list.fetched_at <= excluded.fetched_at
            """
        }
    }

    /// A fetch that failed: why and when, and when to try again; the stored list stays.
    public struct Failure: PGAffectedRowsStatement {
        let reason: String
        let now: Timestamp
        let retryAt: Timestamp

        public init(reason: String, at now: Timestamp, retryAt: Timestamp) {
            self.reason = String(reason.prefix(512))
            self.now = now
            self.retryAt = retryAt
        }

        public var query: PGQuery {
            """
            UPDATE android_status_list SET last_failure = \(reason), last_failure_at = \(now)::timestamptz, next_fetch_at = \(retryAt)::timestamptz
            """
        }
    }
}
