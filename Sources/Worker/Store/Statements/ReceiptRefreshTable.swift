import AttestCore
import DeviceIntelligence
import PostgresClient

/// The SQL of receipt refresh (migration 0012): the leases on `receipt_refresh`, the paused teams, the
/// metric history, and the device's receipt and risk row a refreshed receipt updates. Times are the
/// scheduler's clock, passed in; nothing reads the database's.
enum ReceiptRefreshTable {
    /// Leases the rows of `c` to $3 until $1 + $4 seconds, returning each with its device's columns.
    static let leaseTaken = """
        UPDATE receipt_refresh s SET lease_owner = $3, lease_expires_at = $1::timestamptz + $4::bigint * interval '1 second'
        FROM c LEFT JOIN devices d ON d.key_id = c.key_id
        WHERE s.key_id = c.key_id
        RETURNING s.key_id, s.attempts, d.team_id, d.bundle_id, d.environment, d.receipt, d.public_key, d.device_id,
            d.fingerprint, (extract(epoch FROM d.last_seen_at) * 1000000)::bigint AS last_seen_at_us, d.revoked_at IS NOT NULL AS revoked
        """

    /// Leases up to `limit` due rows whose lease is free or expired to `owner` until `now + leaseSeconds`,
    /// rows another claim holds skipped; teams paused at `now` are left alone. Each row comes with its device.
    struct Claim: PGStatement {
        static let sql = """
            WITH c AS (
                SELECT s.key_id FROM receipt_refresh s
                WHERE s.next_due_at <= $1::timestamptz AND (s.lease_expires_at IS NULL OR s.lease_expires_at <= $1::timestamptz)
                    AND NOT EXISTS (
                        SELECT 1 FROM devices d JOIN receipt_refresh_teams t ON t.team_id = d.team_id
                        WHERE d.key_id = s.key_id AND t.paused_until > $1::timestamptz)
                ORDER BY s.next_due_at LIMIT $2
                FOR UPDATE OF s SKIP LOCKED)
            \(leaseTaken)
            """
        typealias Row = ClaimedRefresh
        let parameters: [PGValue]

        init(owner: String, now: Timestamp, limit: Int, leaseSeconds: Int64) {
            parameters = [.text(now.rfc3339), .int(Int64(limit)), .text(owner), .int(leaseSeconds)]
        }
    }

    /// Writes a try's result and frees the lease, only while `owner` holds it; the result is 1, or 0 when
    /// the lease was lost (expired and taken by another worker, whose result then stands).
    struct Settle: PGAffectedRowsStatement {
        static let sql = """
            UPDATE receipt_refresh SET next_due_at = $3::timestamptz, attempts = $4, last_status = $5, last_error = $6,
                last_attempt_at = CASE WHEN $8 THEN $7::timestamptz ELSE last_attempt_at END,
                refreshed_at = CASE WHEN $5 = 'refreshed' THEN $7::timestamptz ELSE refreshed_at END,
                lease_owner = NULL, lease_expires_at = NULL
            WHERE key_id = $1 AND lease_owner = $2
            """
        let parameters: [PGValue]

        /// - Parameter called: whether Apple was asked (a wait decided here is not an attempt).
        init(keyId: [UInt8], owner: String, next: RefreshPlanner.Next, now: Timestamp, called: Bool) {
            parameters = [
                .bytes(keyId), .text(owner), .text(next.dueAt.rfc3339), .int(Int64(next.attempts)), .text(next.status.rawValue),
                next.error.map { .text(RefreshPlanner.bounded($0)) } ?? .null, .text(now.rfc3339), .bool(called),
            ]
        }
    }

    /// Replaces the device's receipt with the refreshed one.
    /// Replaces the receipt only while it is still `replacing`, the one Apple was sent: a receipt stored
    /// meanwhile (the device attested again) is newer than anything this refresh knew of, and stands.
    struct StoreReceipt: PGAffectedRowsStatement {
        static let sql = "UPDATE devices SET receipt = $2 WHERE key_id = $1 AND receipt = $3"
        let parameters: [PGValue]

        init(keyId: [UInt8], der: [UInt8], replacing: [UInt8]) { parameters = [.bytes(keyId), .bytes(der), .bytes(replacing)] }
    }

    /// Appends a refreshed metric to the history; the same receipt stored again adds nothing.
    struct AppendMetric: PGCommandStatement {
        static let sql = """
            INSERT INTO receipt_metrics (key_id, receipt_created_at, metric, stored_at)
            VALUES ($1, $2::timestamptz, $3, $4::timestamptz)
            ON CONFLICT (key_id, receipt_created_at) DO NOTHING
            """
        let parameters: [PGValue]

        init(keyId: [UInt8], createdAt: Timestamp, metric: Int, storedAt: Timestamp) {
            parameters = [.bytes(keyId), .text(createdAt.rfc3339), .int(Int64(metric)), .text(storedAt.rfc3339)]
        }
    }

    /// Pauses a team's refreshes until `until` (Apple refused its key), and makes its free devices due
    /// then, so claims do not walk past them while it lasts (a pause comes at most once per pause interval
    /// per team).
    struct PauseTeam: PGCommandStatement {
        static let sql = """
            WITH later AS (
                UPDATE receipt_refresh s SET next_due_at = $2::timestamptz
                FROM devices d
                WHERE d.team_id = $1 AND s.key_id = d.key_id AND s.next_due_at < $2::timestamptz AND s.lease_owner IS NULL)
            INSERT INTO receipt_refresh_teams (team_id, paused_until, status, reason, updated_at)
            VALUES ($1, $2::timestamptz, $3, $4, $5::timestamptz)
            ON CONFLICT (team_id) DO UPDATE SET paused_until = greatest(receipt_refresh_teams.paused_until, EXCLUDED.paused_until),
                status = EXCLUDED.status, reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at
            """
        let parameters: [PGValue]

        init(teamId: String, until: Timestamp, status: Int, reason: String, now: Timestamp) {
            parameters = [.text(teamId), .text(until.rfc3339), .int(Int64(status)), .text(RefreshPlanner.bounded(reason)), .text(now.rfc3339)]
        }
    }

    /// Ends the team's pause: Apple has just accepted its key, so the refusal is over (the devices the pause
    /// deferred keep their times).
    struct ResumeTeam: PGCommandStatement {
        static let sql = """
            UPDATE receipt_refresh_teams SET paused_until = $2::timestamptz, updated_at = $2::timestamptz
            WHERE team_id = $1 AND paused_until > $2::timestamptz
            """
        let parameters: [PGValue]

        init(teamId: String, now: Timestamp) { parameters = [.text(teamId), .text(now.rfc3339)] }
    }

    /// The teams paused at `now`, with why.
    struct PausedTeams: PGStatement {
        static let sql = """
            SELECT team_id, status, reason, (extract(epoch FROM paused_until) * 1000000)::bigint AS paused_until_us
            FROM receipt_refresh_teams WHERE paused_until > $1::timestamptz ORDER BY team_id
            """
        let parameters: [PGValue]

        init(now: Timestamp) { parameters = [.text(now.rfc3339)] }

        struct Row: PGRowDecodable {
            let teamId: String
            let status: Int
            let reason: String?
            let pausedUntil: Timestamp

            init(row: PGRow) throws(PGError) {
                teamId = try row.decode("team_id")
                status = try row.decode("status")
                reason = try row.decode("reason")
                pausedUntil = Timestamp(microseconds: try row.decode("paused_until_us"))
            }
        }
    }

    /// Deletes up to `limit` metrics stored before `before`.
    struct PurgeMetrics: PGAffectedRowsStatement {
        static let sql = """
            DELETE FROM receipt_metrics WHERE (key_id, receipt_created_at) IN (
                SELECT key_id, receipt_created_at FROM receipt_metrics WHERE stored_at < $1::timestamptz
                ORDER BY stored_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """
        let parameters: [PGValue]

        init(before: Timestamp, limit: Int) { parameters = [.text(before.rfc3339), .int(Int64(limit))] }
    }

    /// The device's risk row, locked until the transaction ends so a batch's upsert of it waits, with its
    /// app's risk settings; none when the device was never scored.
    struct LockRisk: PGOptionalRowStatement {
        static let sql = """
            SELECT r.device_id, r.receipt_risk_metric, (extract(epoch FROM r.receipt_metric_at) * 1000000)::bigint AS receipt_metric_at_us,
                r.receipt_metric_growth, r.score, r.category, r.factors::text AS factors, a.risk_weights::text AS risk_weights
            FROM device_risk r LEFT JOIN apps a ON a.team_id = r.team_id AND a.bundle_id = r.bundle_id
            WHERE r.team_id = $1 AND r.bundle_id = $2 AND r.identity = $3
            FOR UPDATE OF r
            """
        let parameters: [PGValue]

        init(_ device: AppDevice) {
            parameters = [.text(device.teamId), .text(device.bundleId), .text(device.identity.value)]
        }

        struct Row: PGRowDecodable {
            let deviceId: String
            let history: DeviceHistory
            /// Nil when the stored factors no longer parse.
            let held: HeldScore?
            let category: String
            /// The app's policy; the defaults when the app is not registered or its settings do not parse.
            let policy: RiskPolicy

            init(row: PGRow) throws(PGError) {
                deviceId = try row.decode("device_id")
                var history = DeviceHistory()
                history.receiptRiskMetric = try row.decode("receipt_risk_metric")
                history.receiptRiskMetricAt = (try row.decode("receipt_metric_at_us") as Int64?).map(Timestamp.init(microseconds:))
                history.receiptRiskMetricGrowth = try row.decode("receipt_metric_growth")
                self.history = history
                let score: Int = try row.decode("score")
                held = try row.decodeJSON("factors") { HeldScore(score: score, factors: $0) }
                category = try row.decode("category")
                policy = try row.decodeJSON("risk_weights") { try RiskPolicy(json: $0) } ?? RiskPolicy()
            }
        }
    }

    /// Writes the refreshed metric and the score it gives to the risk row (locked by ``LockRisk``), and a
    /// risk history row, named by the receipt's cause, when the score changed.
    struct UpdateRisk: PGCommandStatement {
        static let sql = """
            WITH h AS (
                INSERT INTO device_risk_history (team_id, bundle_id, identity, job_id, score, category, factors, scored_at)
                SELECT $1, $2, $3, $4, $7, $8, $9::jsonb, $10::timestamptz
                WHERE $7 IS DISTINCT FROM (SELECT score FROM device_risk WHERE team_id = $1 AND bundle_id = $2 AND identity = $3)
                RETURNING 1)
            UPDATE device_risk SET receipt_risk_metric = $5, receipt_metric_at = $6::timestamptz, receipt_metric_growth = $11,
                score = $7, category = $8, factors = $9::jsonb, updated_at = greatest(updated_at, $10::timestamptz)
            WHERE team_id = $1 AND bundle_id = $2 AND identity = $3
            """
        let parameters: [PGValue]

        init(_ device: AppDevice, cause: String, history: DeviceHistory, assessment: RiskAssessment, now: Timestamp) {
            parameters = [
                .text(device.teamId), .text(device.bundleId), .text(device.identity.value), .text(cause),
                history.receiptRiskMetric.map { .int(Int64($0)) } ?? .null, history.receiptRiskMetricAt.map { .text($0.rfc3339) } ?? .null,
                .int(Int64(assessment.score)), .text(assessment.category.rawValue), .json(assessment.factorsJSON.serialized()),
                .text(now.rfc3339), history.receiptRiskMetricGrowth.map { .int(Int64($0)) } ?? .null,
            ]
        }
    }

    /// The `device.risk_category_changed` event of a refreshed metric that moved the device's category;
    /// its id is the receipt's cause, so the same receipt applied twice writes it once.
    struct CategoryChanged: PGCommandStatement {
        static let sql = """
            INSERT INTO events (event_id, kind, partition_key, team_id, bundle_id, occurred_at, detail)
            VALUES ($1, '\(EventKind.riskCategoryChanged.rawValue)', $2, $3, $4, $5::timestamptz,
                jsonb_build_object('identity', $6::text, 'deviceId', $7::text, 'jobId', $8::text, 'from', $9::text,
                    'to', $10::text, 'score', $11::int))
            ON CONFLICT (event_id) DO NOTHING
            """
        let parameters: [PGValue]

        init(_ device: AppDevice, deviceId: String, cause: String, from: String, to assessment: RiskAssessment, at: Timestamp) {
            let (team, bundle, identity) = (device.teamId, device.bundleId, device.identity.value)
            parameters = [
                .text(OutboxEvent.eventId(.riskCategoryChanged, [team, bundle, identity, cause])),
                .text(OutboxEvent.deviceKey(teamId: team, bundleId: bundle, identity: identity)), .text(team), .text(bundle),
                .text(at.rfc3339), .text(identity), .text(deviceId), .text(cause), .text(from),
                .text(assessment.category.rawValue), .int(Int64(assessment.score)),
            ]
        }
    }

    /// The receipt, its refresh state and its metric history, for `attest-worker receipt show`; no row when
    /// the key is not stored.
    struct Show: PGOptionalRowStatement {
        static let sql = """
            SELECT d.key_id, d.team_id, d.bundle_id, d.environment, d.receipt,
                to_char(s.next_due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS next_due_at,
                s.attempts, s.last_status, s.last_error,
                to_char(s.last_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_attempt_at,
                to_char(s.refreshed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS refreshed_at,
                coalesce((SELECT jsonb_agg(jsonb_build_object(
                        'metric', m.metric,
                        'receiptCreatedAt', to_char(m.receipt_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                        'storedAt', to_char(m.stored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                    ORDER BY m.receipt_created_at)
                    FROM (SELECT * FROM receipt_metrics WHERE key_id = d.key_id ORDER BY receipt_created_at DESC LIMIT $2) m),
                    '[]')::text AS metrics
            FROM devices d LEFT JOIN receipt_refresh s ON s.key_id = d.key_id
            WHERE d.key_id = $1
            """
        typealias Row = StoredReceipt
        let parameters: [PGValue]

        init(keyId: [UInt8], metrics: Int) { parameters = [.bytes(keyId), .int(Int64(metrics))] }
    }

    /// Leases one device's row, due or not (`attest-worker receipt refresh`), unless another holds it; no
    /// row when the key has no refresh state (no receipt), is not the app's, or is leased.
    struct LeaseOne: PGOptionalRowStatement {
        static let sql = """
            WITH c AS (
                SELECT s.key_id FROM receipt_refresh s JOIN devices d ON d.key_id = s.key_id
                WHERE s.key_id = $2 AND ($5::text IS NULL OR d.team_id = $5) AND ($6::text IS NULL OR d.bundle_id = $6)
                    AND (s.lease_expires_at IS NULL OR s.lease_expires_at <= $1::timestamptz)
                FOR UPDATE OF s SKIP LOCKED)
            \(leaseTaken)
            """
        typealias Row = ClaimedRefresh
        let parameters: [PGValue]

        init(keyId: [UInt8], app: (teamId: String?, bundleId: String?), owner: String, now: Timestamp, leaseSeconds: Int64) {
            parameters = [
                .text(now.rfc3339), .bytes(keyId), .text(owner), .int(leaseSeconds), app.teamId.map(PGValue.text) ?? .null,
                app.bundleId.map(PGValue.text) ?? .null,
            ]
        }
    }
}
