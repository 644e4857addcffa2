import Foundation

/// Python's `prometheus_client` text parser, when some python3 on this machine has it
/// (`apt-get install python3-prometheus-client` puts it under /usr/bin/python3; a pyenv python3 first on
/// PATH usually lacks it, hence the candidates).
enum PythonPrometheusParser {
    static let interpreter: String? = {
        for candidate in ["/usr/bin/python3", "/usr/local/bin/python3", "python3"] {
            if (try? run(candidate, script: "import prometheus_client.parser", input: "")) != nil { return candidate }
        }
        return nil
    }()

    static var isAvailable: Bool { interpreter != nil }

    /// Parses `text` and returns one line per sample, `name{k="v",...} value` with sorted labels and the
    /// value as Python's repr, so that tests can compare what Python read with what Swift wrote.
    static func samples(_ text: String) throws -> [String] {
        guard let interpreter else { throw ClientError(description: "no python3 with prometheus_client") }
        let script = """
            import sys
            from prometheus_client.parser import text_string_to_metric_families
            for family in text_string_to_metric_families(sys.stdin.read()):
                for s in family.samples:
                    labels = ",".join(f'{k}="{v!r}"' for k, v in sorted(s.labels.items()))
                    print(f"{family.type}|{s.name}{{{labels}}} {s.value!r}")
            """
        return try run(interpreter, script: script, input: text).split(separator: "\n").map(String.init)
    }

    private static func run(_ interpreter: String, script: String, input: String) throws -> String {
        let process = Process()
        if interpreter.hasPrefix("/") {
            process.executableURL = URL(fileURLWithPath: interpreter)
            process.arguments = ["-c", script]
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [interpreter, "-c", script]
        }
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Both outputs are drained on their own threads while stdin is written, so no pipe fills and blocks.
        let output = LockedBox(Data())
        let errors = LockedBox(Data())
        let readers = DispatchGroup()
        for (pipe, box) in [(stdout, output), (stderr, errors)] {
            readers.enter()
            Thread.detachNewThread {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                box.withLock { $0 = data }
                readers.leave()
            }
        }
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        readers.wait()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = errors.withLock { String(decoding: $0, as: UTF8.self) }
            throw ClientError(description: "python prometheus parser failed: \(message)")
        }
        return output.withLock { String(decoding: $0, as: UTF8.self) }
    }
}
