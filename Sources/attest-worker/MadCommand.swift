import AttestCLI
import AttestCore
import AttestJobs
import Foundation
import PostgresClient
import Store
import Worker

/// `attest-worker mad`: monthly active devices per app and UTC month, from the billing view.
enum MadCommand: Subcommand {
    static let help = """
        usage: attest-worker mad [--app TEAM.BUNDLE] [--month YYYY-MM] [--months N] [--json]

        Prints monthly active devices (each device once per app and UTC month) from the billing view
        billing_mad_monthly, newest month first: the last N months up to the current one (default 12),
        or only --month.

          --json                 a JSON array of {"teamId", "bundleId", "month", "devices"}

        \(DatabaseOptions.help)
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let json = args.flag("json")
        let app = try args.option("app")
        let month = try args.option("month")
        let months = try args.option("months")
        let url = try DatabaseOptions.url(&args)
        _ = try args.positionals(max: 0)
        var team: String?
        var bundle: String?
        if let app {
            // The team has no dot, so the first one splits the App ID; both halves must be valid.
            guard let dot = app.firstIndex(of: "."),
                let identity = AppIdentity(validating: String(app[..<dot]), String(app[app.index(after: dot)...]))
            else {
                throw Arguments.UsageError(
                    description: "--app must be TEAM.BUNDLE with a 10-character A-Z/0-9 team and a bundle identifier, for example A1B2C3D4E5.com.example.app")
            }
            team = identity.teamId
            bundle = identity.bundleId
        }
        if let month, month.utf8.count != 7 || Int(month.prefix(4)) == nil || !(1...12).contains(Int(month.suffix(2)) ?? 0)
            || month.dropFirst(4).first != "-"
        {
            throw Arguments.UsageError(description: "--month must be YYYY-MM")
        }
        let recent = try months.map { try Arguments.wholeNumber($0, "--months", min: 1) } ?? 12
        let store = AttestStore(connection: PGReconnectingConnection(conninfo: url, retryTimeout: .seconds(10)))
        let rows = try store.monthlyActiveDevices(teamId: team, bundleId: bundle, month: month, recentMonths: recent)
        if json {
            print(JSONValue.array(rows.map { row in
                .object([
                    ("teamId", .string(row.teamId)), ("bundleId", .string(row.bundleId)), ("month", .string(row.month)),
                    ("devices", .int(Int64(row.devices))),
                ])
            }).serialized())
        } else {
            let header = ["TEAM", "BUNDLE", "MONTH", "DEVICES"]
            let lines = [header] + rows.map { [$0.teamId, $0.bundleId, $0.month, String($0.devices)] }
            let widths = header.indices.map { c in lines.map { $0[c].count }.max() ?? 0 }
            for line in lines {
                print(line.indices.map { c in
                    c == line.count - 1 ? line[c] : line[c].padding(toLength: widths[c], withPad: " ", startingAt: 0)
                }.joined(separator: "  "))
            }
        }
        return 0
    }
}
