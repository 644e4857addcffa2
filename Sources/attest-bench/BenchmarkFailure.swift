/// Why a benchmark could not measure: an input that does not verify, a worker that exited, jobs that could
/// not be produced. It ends the run with its message (exit status 2), unlike a measured failure (exit 1).
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
