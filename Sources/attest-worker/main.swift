import Foundation

/// attest-worker: the App Attest verification worker and its tools (CONTRACT 6).
let usage = """
    usage: attest-worker <command> [options]

    commands:
      run                  the worker: Kafka jobs → verification → PostgreSQL → verdicts
      migrate              apply the database migrations
      app add|set|list     register apps and their policy
      app key add|list|revoke   API keys for challenge issuance, per app
      challenge new        issue a challenge for an app whose challenges the worker manages
      verify [FILE]        verify jobs (JSON lines) offline and print one verdict per line
      mad                  monthly active devices per app and month (billing)
      token jwks|verify    print the verdict-token key set, or check a verdict token
      bench core           measure the verification core against raw OpenSSL verify rates
      bench pipeline       measure the worker end to end on the broker and PostgreSQL (ops/bench)
      bench soak           a steady load for minutes: memory, backlog and warnings over time (ops/soak)
      help                 show this text

    Run `attest-worker <command> --help` for a command's options.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "help" : arguments.removeFirst()
let status: Int32
do {
    switch command {
    case "run": status = try RunCommand.main(arguments)
    case "migrate": status = try MigrateCommand.main(arguments)
    case "app" where arguments.first == "key": status = try AppKeyCommand.main(Array(arguments.dropFirst()))
    case "app": status = try AppCommand.main(arguments)
    case "challenge": status = try ChallengeCommand.main(arguments)
    case "verify": status = try VerifyCommand.main(arguments)
    case "token": status = try TokenCommand.main(arguments)
    case "mad": status = try MadCommand.main(arguments)
    case "bench" where arguments.first == "pipeline": status = try PipelineBenchmark.main(Array(arguments.dropFirst()))
    case "bench" where arguments.first == "soak": status = try SoakBenchmark.main(Array(arguments.dropFirst()))
    case "bench": status = try BenchCommand.main(arguments)
    case "help", "--help", "-h":
        print(usage)
        status = 0
    default:
        throw Arguments.UsageError(description: "unknown command \(command); see attest-worker help")
    }
} catch {
    FileHandle.standardError.write(Data("attest-worker: \(error)\n".utf8))
    status = 2
}
exit(status)
