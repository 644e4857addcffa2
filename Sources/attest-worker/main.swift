import AttestCLI

/// attest-worker: the App Attest verification worker and its tools (CONTRACT 6). The benchmarks are
/// `attest-bench`, a separate executable, so that this one links no minting code.
let usage = """
    usage: attest-worker <command> [options]

    commands:
      run                  the worker: Kafka jobs → verification → PostgreSQL → verdicts
      migrate              apply the database migrations
      app add|set|list     register apps and their policy
      app key add|list|revoke   API keys for challenge issuance, per app
      challenge new        issue a challenge for an app whose challenges the worker manages
      verify [FILE]        verify jobs (JSON lines) offline and print one verdict per line
      submit [FILE]        publish jobs (JSON lines) to a running worker and print each verdict
      mad                  monthly active devices per app and month (billing)
      device show|revoke   one attested key's device; revoke a key (its device must attest again)
      receipt refresh|show refresh one device's fraud-risk receipt now; show it with its metric history
      token jwks|verify    print the verdict-token key set, or check a verdict token
      status-list fetch    fetch Google's Android certificate status list for verify --android-status-list
      version              print the version (also --version)
      help                 show this text

    Run `attest-worker <command> --help` for a command's options. Benchmarks: attest-bench help.
    """

Tool.main(name: "attest-worker", usage: usage) { command, arguments in
    switch command {
    case "run": try RunCommand.main(arguments)
    case "migrate": try MigrateCommand.main(arguments)
    case "app" where arguments.first == "key": try AppKeyCommand.main(Array(arguments.dropFirst()))
    case "app": try AppCommand.main(arguments)
    case "challenge": try ChallengeCommand.main(arguments)
    case "verify": try VerifyCommand.main(arguments)
    case "submit": try SubmitCommand.main(arguments)
    case "token": try TokenCommand.main(arguments)
    case "mad": try MadCommand.main(arguments)
    case "device": try DeviceCommand.main(arguments)
    case "receipt": try ReceiptCommand.main(arguments)
    case "status-list": try StatusListCommand.main(arguments)
    case "bench": throw Arguments.UsageError(description: "bench is its own executable now: attest-bench core|pipeline|soak")
    default: nil
    }
}
