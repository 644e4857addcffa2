import Foundation
import PostgresClient
import Worker

/// The database connection of the commands that only need PostgreSQL (`migrate`, `app`): `--database-url`,
/// else ATTEST_DATABASE_URL from the environment or the configuration file (`--config` or ATTEST_CONFIG).
public enum DatabaseOptions {
    public static let help = """
          --database-url URL     libpq connection string (default: ATTEST_DATABASE_URL)
          --config FILE          configuration file (default: ATTEST_CONFIG)
        """

    public static func url(_ args: inout Arguments) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let file = try args.option("config") ?? environment["ATTEST_CONFIG"]
        let values = try WorkerConfiguration.values(file: file, environment: environment)
        guard let url = try args.option("database-url") ?? values["ATTEST_DATABASE_URL"], !url.isEmpty else {
            throw Arguments.UsageError(description: "set ATTEST_DATABASE_URL or pass --database-url")
        }
        return url
    }

    public static func connect(_ args: inout Arguments) throws -> PGConnection {
        let url = try url(&args)
        do {
            return try PGConnection(conninfo: url)
        } catch {
            throw Arguments.UsageError(description: "cannot connect to PostgreSQL: \(error.message)")
        }
    }
}
