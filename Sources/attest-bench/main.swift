import AttestCLI

/// attest-bench: the benchmarks and load harnesses of attest-worker, an executable of their own so that
/// the worker's links no minting code. `pipeline` and `soak` drive the `attest-worker` built beside it.
let usage = """
    usage: attest-bench <command> [options]

    commands:
      core                 measure the verification core against raw OpenSSL verify rates
      pipeline             measure the worker end to end on the broker and PostgreSQL (ops/bench)
      lane                 one batch lane's CPU per batch and per job, with no broker (ops/bench --lane)
      relay                the broker's part of a verdict's latency: jobs relayed with no worker (ops/floor)
      soak                 a steady load for minutes: memory, backlog and warnings over time (ops/soak)
      demo-jobs            a test PKI's trust anchors and a stream of minted jobs (ops/run --demo)
      apple-stand-in       a local stand-in of Apple's attestation-data endpoint (receipt refresh tests)
      help                 show this text

    Run `attest-bench <command> --help` for a command's options.
    """

Tool.main(name: "attest-bench", usage: usage) { command, arguments in
    switch command {
    case "core": try CoreBenchmark.main(arguments)
    case "pipeline": try PipelineBenchmark.main(arguments)
    case "lane": try LaneBenchmark.main(arguments)
    case "relay": try RelayBenchmark.main(arguments)
    case "soak": try SoakBenchmark.main(arguments)
    case "demo-jobs": try DemoJobs.main(arguments)
    case "apple-stand-in": try AppleStandIn.main(arguments)
    default: nil
    }
}
