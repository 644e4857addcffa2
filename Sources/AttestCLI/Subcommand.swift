/// One subcommand of `attest-worker` or `attest-bench`: its help text and its body. `main` answers
/// `--help` for all of them.
public protocol Subcommand {
    static var help: String { get }
    static func run(_ args: inout Arguments) throws -> Int32
}

extension Subcommand {
    public static func main(_ argv: [String]) throws -> Int32 {
        var args = Arguments(argv)
        if args.flag("help") {
            print(help)
            return 0
        }
        return try run(&args)
    }
}
