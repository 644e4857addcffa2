import Foundation

/// The `main` both executables share: `<tool> <command> [options]`, `help` (also `--help`, `-h`, or no
/// command) printing `usage`, `version` (also `--version`) printing `<tool> X.Y.Z` (``ReleaseVersion``), any
/// error one line on stderr with exit status 2.
public enum Tool {
    /// Runs the command `dispatch` finds for the first argument, which gets the arguments after it; nil is
    /// an unknown command.
    public static func main(name: String, usage: String, _ dispatch: (_ command: String, _ arguments: [String]) throws -> Int32?) -> Never {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let command = arguments.isEmpty ? "help" : arguments.removeFirst()
        let status: Int32
        do {
            if ["help", "--help", "-h"].contains(command) {
                print(usage)
                status = 0
            } else if ["version", "--version"].contains(command) {
                print("\(name) \(ReleaseVersion.current)")
                status = 0
            } else if let done = try dispatch(command, arguments) {
                status = done
            } else {
                throw Arguments.UsageError(description: "unknown command \(command); see \(name) help")
            }
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
            status = 2
        }
        exit(status)
    }
}
