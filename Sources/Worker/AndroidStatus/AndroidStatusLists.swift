import AttestCore
import AttestVerifier
import Synchronization

/// The status list a worker holds: the newest one stored in PostgreSQL, parsed once per change, for the
/// Android checks (``AndroidTrust/statusList``) and for the age the worker exports.
public final class AndroidStatusLists: Sendable {
    public struct Held: Sendable {
        public let list: AndroidStatusList
        public let sha256: [UInt8]
        /// When it was fetched from Google (or, loaded from a file, the file's modification time).
        public let fetchedAt: Timestamp
        /// The URL it was fetched from, or `file:PATH`.
        public let source: String
    }

    private let held = Mutex<Held?>(nil)

    public init() {}

    public var current: Held? { held.withLock { $0 } }

    func hold(_ list: Held) { held.withLock { $0 = list } }
}
