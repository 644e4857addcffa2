import AttestJobs

/// A small command-line reader: `--name value` options, `--flag` switches and positional arguments, with
/// usage errors as one-line messages (exit status 2).
public struct Arguments {
    private var remaining: [String]

    public init(_ arguments: some Sequence<String>) {
        remaining = Array(arguments)
    }

    public struct UsageError: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// Removes `--name value` (or `--name=value`) and returns the value.
    public mutating func option(_ name: String) throws -> String? {
        if let i = remaining.firstIndex(where: { $0.hasPrefix("--\(name)=") }) {
            return String(remaining.remove(at: i).dropFirst(name.count + 3))
        }
        guard let i = remaining.firstIndex(of: "--\(name)") else { return nil }
        guard i + 1 < remaining.count else { throw UsageError(description: "--\(name) needs a value") }
        let value = remaining[i + 1]
        remaining.removeSubrange(i...(i + 1))
        return value
    }

    /// Removes `--name N` and returns N, a whole number ≥ `min`.
    public mutating func integer(_ name: String, min: Int) throws -> Int? {
        try option(name).map { try Self.wholeNumber($0, "--\(name)", min: min) }
    }

    /// `text` as a whole number ≥ `min`, or a usage error naming the option.
    public static func wholeNumber(_ text: String, _ name: String, min: Int) throws -> Int {
        guard let value = Int(text), value >= min else { throw UsageError(description: "\(name) must be a whole number ≥ \(min)") }
        return value
    }

    /// `--team` and `--bundle` as a valid app pair, or a usage error saying what `command` needs or which
    /// value is not an App ID prefix or bundle identifier.
    public static func app(team: String?, bundle: String?, for command: String) throws -> AppIdentity {
        guard let team, let bundle else { throw UsageError(description: "\(command) needs --team and --bundle") }
        // An app registered by its Android package alone: --team android --bundle PACKAGE.
        if team == AppIdentity.androidTeam {
            if let problem = AndroidJob.packageNameProblem(bundle) { throw UsageError(description: "--bundle: " + problem) }
            return AppIdentity(androidPackage: bundle)
        }
        if let problem = AppIdentity.teamIdProblem(team) { throw UsageError(description: "--team: " + problem) }
        if let problem = AppIdentity.bundleIdProblem(bundle) { throw UsageError(description: "--bundle: " + problem) }
        return AppIdentity(teamId: team, bundleId: bundle)
    }

    /// Removes `--name` and tells whether it was there.
    public mutating func flag(_ name: String) -> Bool {
        guard let i = remaining.firstIndex(of: "--\(name)") else { return false }
        remaining.remove(at: i)
        return true
    }

    /// The positional arguments left; fails on any unknown option.
    public func positionals(max: Int) throws -> [String] {
        if let unknown = remaining.first(where: { $0.hasPrefix("--") && $0 != "--" }) {
            throw UsageError(description: "unknown option \(unknown)")
        }
        let values = remaining.filter { $0 != "--" }
        guard values.count <= max else { throw UsageError(description: "unexpected argument \(values[max])") }
        return values
    }
}
