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
        try connection.run { c throws(PGError) in
            try c.execute(
                MonthlyCountsTable.Billing(teamId: teamId, bundleId: bundleId, month: month, recentMonths: recentMonths))
        }
    }
}
