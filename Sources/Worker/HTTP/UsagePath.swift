import AttestJobs

/// The app a usage request names: `/v1/apps/{teamId}.{bundleId}/usage`, the pair validated as a job's
/// (``AppIdentity``). The team has no dot, so the first dot splits the App ID.
enum UsagePath {
    static let prefix = "/v1/apps/"
    static let suffix = "/usage"
    /// A valid App ID is at most 10 + 1 + 255 bytes; anything longer is refused before it is split.
    static let maxBytes = prefix.utf8.count + AppIdentity.teamIdLength + 1 + AppIdentity.maxBundleIdBytes + suffix.utf8.count

    enum Parsed: Equatable {
        case app(AppIdentity)
        /// Why the path names no app (the 400's message).
        case malformed(String)
    }

    static func parse(_ path: String) -> Parsed {
        guard path.utf8.count <= maxBytes, path.hasPrefix(prefix), path.hasSuffix(suffix),
            path.utf8.count > prefix.utf8.count + suffix.utf8.count
        else {
            return .malformed("the path must be \(prefix)TEAM.BUNDLE\(suffix)")
        }
        let appId = path.dropFirst(prefix.count).dropLast(suffix.count)
        guard !appId.contains("/"), let dot = appId.firstIndex(of: ".") else {
            return .malformed("the path must be \(prefix)TEAM.BUNDLE\(suffix)")
        }
        let teamId = String(appId[..<dot])
        let bundleId = String(appId[appId.index(after: dot)...])
        guard let identity = AppIdentity(validating: teamId, bundleId) else {
            return .malformed(AppIdentity.teamIdProblem(teamId) ?? AppIdentity.bundleIdProblem(bundleId) ?? "")
        }
        return .app(identity)
    }
}
