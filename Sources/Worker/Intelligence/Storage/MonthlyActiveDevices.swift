import PostgresClient

/// One app's monthly active devices in one UTC month, as billing reads them (view `billing_mad_monthly`).
public struct MonthlyActiveDevices: Sendable, Equatable {
    public var teamId: String
    public var bundleId: String
    /// "YYYY-MM"
    public var month: String
    public var devices: Int
}

extension AttestStore {
    /// The billing view's rows, newest month first: one app or all, one month or the `recentMonths` up
    /// to the current one.
    public func monthlyActiveDevices(teamId: String?, bundleId: String?, month: String?, recentMonths: Int) throws(PGError)
        -> [MonthlyActiveDevices]
    {
        let rows = try connection.run { c throws(PGError) in
            try c.execute(
                """
                SELECT team_id, bundle_id, month, devices FROM billing_mad_monthly
                WHERE ($1::text IS NULL OR team_id = $1) AND ($2::text IS NULL OR bundle_id = $2)
                    AND CASE WHEN $3::text IS NULL
                        THEN month >= to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - make_interval(months => $4::int - 1), 'YYYY-MM')
                        ELSE month = $3 END
                ORDER BY month DESC, team_id, bundle_id
                """,
                [
                    teamId.map(PGValue.text) ?? .null, bundleId.map(PGValue.text) ?? .null, month.map(PGValue.text) ?? .null,
                    .int(Int64(recentMonths)),
                ])
        }
        return (0..<rows.count).map { r in
            MonthlyActiveDevices(
                teamId: rows.string(r, 0) ?? "", bundleId: rows.string(r, 1) ?? "", month: rows.string(r, 2) ?? "",
                devices: Int(rows.int(r, 3) ?? 0))
        }
    }
}
