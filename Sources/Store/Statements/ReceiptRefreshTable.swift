import AttestCore
import DeviceIntelligence
import PostgresClient

/// The SQL of receipt refresh (migration 0012): the leases on `receipt_refresh`, the paused teams, the
/// metric history, and the device's receipt and risk row a refreshed receipt updates. Times are the
/// scheduler's clock, passed in; nothing reads the database's.
enum ReceiptRefreshTable {
    /// Leases the rows of `c` to `owner` until `now` + `leaseSeconds`, returning each with its device's columns.
    static func leaseTaken(owner: String, now: Timestamp, leaseSeconds: Int64) -> PGQuery {
        """
        UPDATE receipt_refresh s SET lease_owner = \(owner), lease_expires_at = \(now)::timestamptz + \(leaseSeconds)::bigint * interval '1 second'
        FROM c LEFT JOIN devices d ON d.key_id = c.key_id
        WHERE s.key_id = c.key_id
        RETURNING s.key_id, s.attempts, d.team_id, d.bundle_id, d.environment, d.receipt, d.public_key, d.device_id,
            d.fingerprint, (extract(epoch FROM d.last_seen_at) * 1000000)::bigint AS last_seen_at_us, d.revoked_at IS NOT NULL AS revoked
        """
    }

    /// Leases up to `limit` due rows whose lease is free or expired to `owner` until `now + leaseSeconds`,
    /// rows another claim holds skipped; teams paused at `now` are left alone. Each row comes with its device.
    struct Claim: PGStatement {
        typealias Row = ClaimedRefresh
        let owner: String
        let now: Timestamp
        let limit: Int
        let leaseSeconds: Int64

        var query: PGQuery {
            """
            WITH c AS (
                SELECT s.key_id FROM receipt_refresh s
                WHERE s.next_due_at <= \(now)::timestamptz AND (s.lease_expires_at IS NULL OR s.lease_expires_at <= \(now)::timestamptz)
                    AND NOT EXISTS (
                        SELECT 1 FROM devices d JOIN receipt_refresh_teams t ON t.team_id = d.team_id
                        WHERE d.key_id = s.key_id AND t.paused_until > \(now)::timestamptz)
                ORDER BY s.next_due_at LIMIT \(limit)
                FOR UPDATE OF s SKIP LOCKED)
            \(leaseTaken(owner: owner, now: now, leaseSeconds: leaseSeconds))
            """
        }
    }

    /// Writes a try's result and frees the lease, only while `owner` holds it; the result is 1, or 0 when
    /// the lease was lost (expired and taken by another worker, whose result then stands).
    struct Settle: PGAffectedRowsStatement {
        let keyId: [UInt8]
        let owner: String
        let next: NextRefresh
        let now: Timestamp
        /// Whether Apple was asked (a wait decided here is not an attempt).
        let called: Bool

        var query: PGQuery {
            """
            UPDATE receipt_refresh SET next_due_at = \(next.dueAt)::timestamptz, attempts = \(next.attempts),
                last_status = \(next.status.rawValue), last_error = \(next.error.map(NextRefresh.bounded)),
                last_attempt_at = CASE WHEN \(called) THEN \(now)::timestamptz ELSE last_attempt_at END,
                refreshed_at = CASE WHEN \(next.status.rawValue) = 'refreshed' THEN \(now)::timestamptz ELSE refreshed_at END,
                lease_owner = NULL, lease_expires_at = NULL
            WHERE key_id = \(keyId) AND lease_owner = \(owner)
            """
        }
    }

    /// Replaces the device's receipt with the refreshed one.
    /// Replaces the receipt only while it is still `replacing`, the one Apple was sent: a receipt stored
    /// meanwhile (the device attested again) is newer than anything this refresh knew of, and stands.
    struct StoreReceipt: PGAffectedRowsStatement {
        let keyId: [UInt8]
        let der: [UInt8]
        let replacing: [UInt8]

        var query: PGQuery { "UPDATE devices SET receipt = \(der) WHERE key_id = \(keyId) AND receipt = \(replacing)" }
    }

    /// Appends a refreshed metric to the history; the same receipt stored again adds nothing.
    struct AppendMetric: PGCommandStatement {
        let keyId: [UInt8]
        let createdAt: Timestamp
        let metric: Int
        let storedAt: Timestamp

        var query: PGQuery {
            """
            INSERT INTO receipt_metrics (key_id, receipt_created_at, metric, stored_at)
            VALUES (\(keyId), \(createdAt)::timestamptz, \(metric), \(storedAt)::timestamptz)
            ON CONFLICT (key_id, receipt_created_at) DO NOTHING
            """
        }
    }

    /// Pauses a team's refreshes until `until` (Apple refused its key), and makes its free devices due
    /// then, so claims do not walk past them while it lasts (a pause comes at most once per pause interval
    /// per team).
    struct PauseTeam: PGCommandStatement {
        let teamId: String
        let until: Timestamp
        let status: Int
        let reason: String
        let now: Timestamp

        var query: PGQuery {
            """
            WITH later AS (
                UPDATE receipt_refresh s SET next_due_at = \(until)::timestamptz
                FROM devices d
                WHERE d.team_id = \(teamId) AND s.key_id = d.key_id AND s.next_due_at < \(until)::timestamptz AND s.lease_owner IS NULL)
            INSERT INTO receipt_refresh_teams (team_id, paused_until, status, reason, updated_at)
            VALUES (\(teamId), \(until)::timestamptz, \(status), \(NextRefresh.bounded(reason)), \(now)::timestamptz)
            ON CONFLICT (team_id) DO UPDATE SET paused_until = greatest(receipt_refresh_teams.paused_until, EXCLUDED.paused_until),
                status = EXCLUDED.status, reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at
            """
        }
    }

    /// Ends the team's pause: Apple has just accepted its key, so the refusal is over (the devices the pause
    /// deferred keep their times).
    struct ResumeTeam: PGCommandStatement {
        let teamId: String
        let now: Timestamp

        var query: PGQuery {
            """
            UPDATE receipt_refresh_teams SET paused_until = \(now)::timestamptz, updated_at = \(now)::timestamptz
            WHERE team_id = \(teamId) AND paused_until > \(now)::timestamptz
            """
        }
    }

    /// The teams paused at `now`, with why.
    struct PausedTeams: PGStatement {
        let now: Timestamp

        var query: PGQuery {
            """
            SELECT team_id, status, reason, (extract(epoch FROM paused_until) * 1000000)::bigint AS paused_until_us
            FROM receipt_refresh_teams WHERE paused_until > \(now)::timestamptz ORDER BY team_id
            """
        }

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
        let before: Timestamp
        let limit: Int

        var query: PGQuery {
            """
            DELETE FROM receipt_metrics WHERE (key_id, receipt_created_at) IN (
                SELECT key_id, receipt_created_at FROM receipt_metrics WHERE stored_at < \(before)::timestamptz
                ORDER BY stored_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            """
        }
    }

    /// The device's risk row, locked until the transaction ends so a batch's upsert of it waits, with its
    /// app's risk settings; none when the device was never scored.
    struct LockRisk: PGOptionalRowStatement {
        let device: AppDevice

        init(_ device: AppDevice) { self.device = device }

        var query: PGQuery {
            """
            SELECT r.device_id, r.receipt_risk_metric, (extract(epoch FROM r.receipt_metric_at) * 1000000)::bigint AS receipt_metric_at_us,
                r.receipt_metric_growth, r.score, r.category, r.factors::text AS factors, a.risk_weights::text AS risk_weights
            FROM device_risk r LEFT JOIN apps a ON a.team_id = r.team_id AND a.bundle_id = r.bundle_id
            WHERE r.team_id = \(device.teamId) AND r.bundle_id = \(device.bundleId) AND r.identity = \(device.identity.value)
            FOR UPDATE OF r
            """
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
        let device: AppDevice
        let cause: String
        let history: DeviceHistory
        let assessment: RiskAssessment
        let now: Timestamp

        init(_ device: AppDevice, cause: String, history: DeviceHistory, assessment: RiskAssessment, now: Timestamp) {
            self.device = device
            self.cause = cause
            self.history = history
            self.assessment = assessment
            self.now = now
        }

        var query: PGQuery {
            let (team, bundle, identity) = (device.teamId, device.bundleId, device.identity.value)
            let (score, category, factors) = (assessment.score, assessment.category.rawValue, assessment.factorsJSON)
            return """
            WITH h AS (
                INSERT INTO device_risk_history (team_id, bundle_id, identity, job_id, score, category, factors, scored_at)
                SELECT \(team), \(bundle), \(identity), \(cause), \(score), \(category), \(factors)::jsonb, \(now)::timestamptz
                WHERE \(score) IS DISTINCT FROM (SELECT score FROM device_risk WHERE team_id = \(team) AND bundle_id = \(bundle) AND identity = \(identity))
                RETURNING 1)
            UPDATE device_risk SET receipt_risk_metric = \(history.receiptRiskMetric), receipt_metric_at = \(history.receiptRiskMetricAt)::timestamptz,
                receipt_metric_growth = \(history.receiptRiskMetricGrowth),
                score = \(score), category = \(category), factors = \(factors)::jsonb, updated_at = greatest(updated_at, \(now)::timestamptz)
            WHERE team_id = \(team) AND bundle_id = \(bundle) AND identity = \(identity)
            """
        }
    }

    /// The `device.risk_category_changed` event of a refreshed metric that moved the device's category;
    /// its id is the receipt's cause, so the same receipt applied twice writes it once.
    struct CategoryChanged: PGCommandStatement {
        let device: AppDevice
        let deviceId: String
        let cause: String
        let from: String
        let assessment: RiskAssessment
        let at: Timestamp

        init(_ device: AppDevice, deviceId: String, cause: String, from: String, to assessment: RiskAssessment, at: Timestamp) {
            self.device = device
            self.deviceId = deviceId
            self.cause = cause
            self.from = from
            self.assessment = assessment
            self.at = at
        }

        var query: PGQuery {
            let (team, bundle, identity) = (device.teamId, device.bundleId, device.identity.value)
            return """
            INSERT INTO events (event_id, kind, partition_key, team_id, bundle_id, occurred_at, detail)
            VALUES (\(OutboxEvent.eventId(.riskCategoryChanged, [team, bundle, identity, cause])), '\(unescaped: EventKind.riskCategoryChanged.rawValue)',
                \(OutboxEvent.deviceKey(teamId: team, bundleId: bundle, identity: identity)), \(team), \(bundle), \(at)::timestamptz,
                jsonb_build_object('identity', \(identity)::text, 'deviceId', \(deviceId)::text, 'jobId', \(cause)::text, 'from', \(from)::text,
                    'to', \(assessment.category.rawValue)::text, 'score', \(assessment.score)::int))
            ON CONFLICT (event_id) DO NOTHING
            """
        }
    }

    /// The receipt, its refresh state and its metric history, for `attest-worker receipt show`; no row when
    /// the key is not stored.
    struct Show: PGOptionalRowStatement {
        typealias Row = StoredReceipt
        let keyId: [UInt8]
        let metrics: Int

        var query: PGQuery {
            """
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
                    FROM (SELECT * FROM receipt_metrics WHERE key_id = d.key_id ORDER BY receipt_created_at DESC LIMIT \(metrics)) m),
                    '[]')::text AS metrics
            FROM devices d LEFT JOIN receipt_refresh s ON s.key_id = d.key_id
            WHERE d.key_id = \(keyId)
            """
        }
    }

    /// Leases one device's row, due or not (`attest-worker receipt refresh`), unless another holds it; no
    /// row when the key has no refresh state (no receipt), is not the app's, or is leased.
    struct LeaseOne: PGOptionalRowStatement {
        typealias Row = ClaimedRefresh
        let keyId: [UInt8]
        let app: (teamId: String?, bundleId: String?)
        let owner: String
        let now: Timestamp
        let leaseSeconds: Int64

        var query: PGQuery {
            """
            WITH c AS (
                SELECT s.key_id FROM receipt_refresh s JOIN devices d ON d.key_id = s.key_id
                WHERE s.key_id = \(keyId) AND (\(app.teamId)::text IS NULL OR d.team_id = \(app.teamId))
                    AND (\(app.bundleId)::text IS NULL OR d.bundle_id = \(app.bundleId))
                    AND (s.lease_expires_at IS NULL OR s.lease_expires_at <= \(now)::timestamptz)
                FOR UPDATE OF s SKIP LOCKED)
            \(leaseTaken(owner: owner, now: now, leaseSeconds: leaseSeconds))
            """
        }
    }
}
