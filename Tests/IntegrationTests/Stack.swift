import AttestCore
import AttestCrypto
import AttestJobs
import AttestMint
import Foundation
import KafkaClient
import PostgresClient
import Testing

/// Every integration suite nests in this one (`extension LiveStack { @Suite struct … }`): `.serialized` is
/// inherited, so within one `swift test` process the suites run one test at a time. ops/test runs several
/// such processes at once (lanes, by suite), each on a database schema of its own (ATTEST_DATABASE_URL's
/// search_path) and with topics, groups and apps of each test's own, so a lane sees nothing of another.
@Suite(.serialized) enum LiveStack {}

extension LiveStack {
    /// The tests that change what every session or client sees (database settings and roles, terminated
    /// sessions, PostgreSQL stopped, the broker paused): ops/test runs them alone, after the lanes, so no
    /// other test meets their faults.
    @Suite enum ClusterWide {}
}

/// The local stack the integration tests run against (`ops/stack up`, `eval "$(ops/stack env)"`): they fail,
/// never skip, when it is missing, because CI always provides it.
enum Stack {
    static let environment = ProcessInfo.processInfo.environment
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static var brokers: String {
        get throws { try #require(environment["ATTEST_KAFKA_BROKERS"], "run ops/stack up and eval \"$(ops/stack env)\"") }
    }

    static var databaseURL: String {
        get throws { try #require(environment["ATTEST_DATABASE_URL"], "run ops/stack up and eval \"$(ops/stack env)\"") }
    }

    static var kafkaProperties: [String: String] {
        (try? KafkaProperties.parse(environment["ATTEST_KAFKA_PROPERTIES"] ?? "")) ?? [:]
    }

    /// The `attest-worker` the tests run: in ITEST_BIN_DIR when set (ops/test: the release build users run),
    /// else the one built beside this test binary (the debug build, or the AddressSanitizer one under
    /// `--sanitize=address`, so the worker processes are checked too). attest-bench is taken beside it.
    static var binary: String {
        let directory = environment["ITEST_BIN_DIR"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        return directory.appendingPathComponent("attest-worker").path
    }

    /// Runs `ops/stack ARGS…` and waits.
    @discardableResult
    static func ops(_ arguments: String...) throws -> Int32 {
        try run(repository.appendingPathComponent("ops/stack").path, arguments)
    }

    /// Runs a command to completion and returns its exit status. posix_spawn and waitpid rather than
    /// Foundation's Process, whose waitUntilExit was seen to miss the exit of a command that starts a daemon.
    static func run(_ path: String, _ arguments: [String]) throws -> Int32 {
        try run(path, arguments, capture: false).status
    }

    /// The same, keeping what the command writes to stdout when `capture` is set.
    static func run(_ path: String, _ arguments: [String], capture: Bool) throws -> (status: Int32, output: String) {
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("out-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputFile) }
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, capture ? outputFile : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        try #require(spawned == 0, "cannot run \(path)")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = capture ? ((try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? "") : ""
        return ((status >> 8) & 0xff, output)
    }

    /// Fresh topics for one test, so tests never see each other's messages.
    static func topics(_ prefix: String, partitions: Int = 6) throws -> (jobs: String, verdicts: String, deadLetters: String) {
        let id = UUID().uuidString.prefix(8).lowercased()
        let names = ("\(prefix).\(id).jobs", "\(prefix).\(id).verdicts", "\(prefix).\(id).dead")
        try #require(try ops("topics", "\(names.0):\(partitions),\(names.1):\(partitions),\(names.2):1") == 0)
        return names
    }
}
