import AttestCLI
import AttestVerifier
import Durations
import Foundation
import HTTPClient

/// `attest-worker status-list fetch`: Google's Android attestation certificate status list over HTTPS with
/// the project's libcurl client, checked to parse as a status list before it replaces the file `verify
/// --android-status-list` reads, so a backend verifying offline keeps its list fresh from cron.
enum StatusListCommand: Subcommand {
    /// Where Google publishes the list (developer.android.com, "Key attestation").
    static let googleURL = "https://android.googleapis.com/attestation/status"

    static let help = """
        usage: attest-worker status-list fetch [--url URL] [--out FILE] [--timeout SECONDS] [--ca-file PEM]

        GETs Android's attestation certificate status list (default \(googleURL)), checks that it
        is a status list (a JSON object of hex serial numbers each with a status; at most 16 MiB) and writes
        it to FILE (replaced whole, never half-written) or stdout, for `attest-worker verify
        --android-status-list FILE`. One line on stderr says how many entries it holds.

          --url URL            another source (an http or https URL: a mirror, a test stand-in)
          --out FILE           write here instead of stdout
          --timeout SECONDS    the whole request, connect included (default 30)
          --ca-file PEM        trust these CA certificates instead of the system's (tests)

        Exit status: 0 written; 2 when the list could not be fetched or is not a status list (FILE is
        then left as it was), or on usage errors.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        let url = try args.option("url") ?? googleURL
        let out = try args.option("out")
        let timeout = try args.integer("timeout", min: 1) ?? 30
        let caFile = try args.option("ca-file")
        guard try args.positionals(max: 1) == ["fetch"] else {
            throw Arguments.UsageError(description: "status-list needs the command fetch (attest-worker status-list --help)")
        }
        let client = HTTPClient(
            configuration: .init(
                requestTimeout: .seconds(timeout), maxResponseBodyBytes: AndroidStatusList.maxBytes, caFile: caFile, idleHandles: 1))
        let response: HTTPClientResponse
        switch client.get(HTTPClientRequest(url: url, headers: [("Accept", "application/json")])) {
        case .failure(let error): throw Arguments.UsageError(description: "status-list fetch: \(error)")
        case .success(let answered): response = answered
        }
        guard response.status == 200 else {
            throw Arguments.UsageError(description: "status-list fetch: the server answered \(response.status)")
        }
        let list: AndroidStatusList
        do {
            list = try AndroidStatusList(json: response.body)
        } catch {
            throw Arguments.UsageError(description: "status-list fetch: \(error)")
        }
        if let out {
            do {
                try Data(response.body).write(to: URL(fileURLWithPath: out), options: .atomic)
            } catch {
                throw Arguments.UsageError(description: "status-list fetch: cannot write \(out) (\(error.localizedDescription))")
            }
        } else {
            FileHandle.standardOutput.write(Data(response.body))
        }
        FileHandle.standardError.write(Data("attest-worker: status list with \(list.entries.count) entries from \(url)\n".utf8))
        return 0
    }
}
