/// An app as Apple identifies it: the App ID prefix (team) and the bundle identifier, kept as the pair.
/// An app registered by its Android package alone is named by the pair (``androidTeam``, package name).
///
/// Policies, monthly counts, quotas, risk, challenges and verdict scopes all key on this exact pair. The
/// joined App ID string ("TEAM.bundle") is what Apple hashes into rpIdHash, so two different splits of
/// one string ("ABCDE12345.com" + "example.app") verify alike: only a validated pair, looked up as a
/// pair, makes the App ID name one registration.
public struct AppIdentity: Hashable, Sendable, Comparable {
    public var teamId: String
    public var bundleId: String

    /// Apple's App ID prefix is exactly this many characters.
    public static let teamIdLength = 10
    /// Bundle identifiers are short; bounded so keys, messages and rows stay small.
    public static let maxBundleIdBytes = 255
    /// The scope of a verdict whose job names no valid pair.
    public static let none = AppIdentity(teamId: "", bundleId: "")

    /// The team of an app registered by its Android package alone: lower case, so never an App ID prefix.
    public static let androidTeam = "android"

    /// The app an Android package names until a registration says it belongs to an app with an App ID.
    public init(androidPackage packageName: String) {
        self.init(teamId: Self.androidTeam, bundleId: packageName)
    }

    /// Whether this names an app by its Android package alone.
    public var isAndroidOnly: Bool { teamId == Self.androidTeam }

    /// The pair as given; ``problem(teamId:bundleId:)`` says whether it is a valid one.
    public init(teamId: String, bundleId: String) {
        self.teamId = teamId
        self.bundleId = bundleId
    }

    /// The pair when both fields are valid (an App ID, or ``androidTeam`` and a package name), else nil.
    public init?(validating teamId: String, _ bundleId: String) {
        if teamId == Self.androidTeam {
            guard AndroidJob.packageNameProblem(bundleId) == nil else { return nil }
        } else {
            guard Self.teamIdProblem(teamId) == nil, Self.bundleIdProblem(bundleId) == nil else { return nil }
        }
        self.init(teamId: teamId, bundleId: bundleId)
    }

    /// The App ID string Apple hashes; unambiguous for a valid pair (the team is a fixed 10 characters).
    public var appId: String { teamId + "." + bundleId }

    /// Why `teamId` is not an App ID prefix (exactly 10 of A–Z and 0–9), or nil.
    public static func teamIdProblem(_ teamId: String) -> String? {
        let bytes = teamId.utf8
        guard bytes.count == teamIdLength, bytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) })
        else { return "teamId must be exactly \(teamIdLength) characters A-Z or 0-9 (the App ID prefix)" }
        return nil
    }

    /// Why `bundleId` is not a bundle identifier (dot-separated non-empty segments of ASCII letters, digits,
    /// hyphens and underscores, at most 255 bytes), or nil. Underscores because Apple signs App IDs with
    /// them (its own App Attest sample is `com.apple.example_app_attest`, and older App Store apps carry
    /// them); the fixed-length team, not a narrower bundle rule, is what keeps the App ID unambiguous.
    public static func bundleIdProblem(_ bundleId: String) -> String? {
        let bytes = bundleId.utf8
        let problem = "bundleId must be 1 to \(maxBundleIdBytes) bytes of dot-separated non-empty segments of A-Z, a-z, 0-9, - and _"
        guard !bytes.isEmpty, bytes.count <= maxBundleIdBytes else { return problem }
        var segmentLength = 0
        for byte in bytes {
            switch byte {
            case 0x2E:
                guard segmentLength > 0 else { return problem }
                segmentLength = 0
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x5F:
                segmentLength += 1
            default:
                return problem
            }
        }
        return segmentLength > 0 ? nil : problem
    }

    public static func < (a: Self, b: Self) -> Bool { (a.teamId, a.bundleId) < (b.teamId, b.bundleId) }
}
