import AttestCrypto
import AttestJobs
import Foundation

/// One team's DeviceCheck private key (the `AuthKey_KEYID.p8` Apple issues), which signs the JWT that
/// authorizes receipt refreshes for the team's apps. Its description names the team and key id only.
public struct DeviceCheckKey: Sendable, CustomStringConvertible {
    public let teamId: String
    /// Apple's 10-character key identifier, the JWT's `kid`.
    public let keyId: String
    public let privateKey: ECPrivateKey

    /// A `.p8` is a few hundred bytes; the bound stops a path to something else from being read whole.
    static let maxFileBytes = 16 * 1024

    public init(teamId: String, keyId: String, privateKey: ECPrivateKey) {
        self.teamId = teamId
        self.keyId = keyId
        self.privateKey = privateKey
    }

    public var description: String { "DeviceCheck key \(keyId) of team \(teamId)" }

    /// Why `keyId` is not one of Apple's key identifiers (10 characters A–Z or 0–9), or nil.
    static func keyIdProblem(_ keyId: String) -> String? {
        let bytes = keyId.utf8
        guard bytes.count == 10, bytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) })
        else { return "key id must be exactly 10 characters A-Z or 0-9" }
        return nil
    }

    /// `TEAMID:KEYID:/path/AuthKey_KEYID.p8`: the team and key ids validated, the file read (bounded) and
    /// loaded as an unencrypted P-256 key. The problem texts name the entry's team, key id and path, never
    /// the file's content.
    static func load(entry: String) -> Result<DeviceCheckKey, ReceiptRefreshSettings.Invalid> {
        let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[2].isEmpty else {
            return .failure(.init("ATTEST_DEVICECHECK_KEYS: an entry is not TEAMID:KEYID:PATH"))
        }
        let (teamId, keyId, path) = (parts[0], parts[1], parts[2])
        if let problem = AppIdentity.teamIdProblem(teamId) {
            return .failure(.init("ATTEST_DEVICECHECK_KEYS: \(problem)"))
        }
        if let problem = keyIdProblem(keyId) { return .failure(.init("ATTEST_DEVICECHECK_KEYS (team \(teamId)): \(problem)")) }
        let prefix = "ATTEST_DEVICECHECK_KEYS (team \(teamId), key \(keyId)): \(path)"
        guard let handle = FileHandle(forReadingAtPath: path) else { return .failure(.init("\(prefix) cannot be read")) }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maxFileBytes + 1) else { return .failure(.init("\(prefix) cannot be read")) }
        guard data.count <= maxFileBytes else { return .failure(.init("\(prefix) is over \(maxFileBytes) bytes, not a .p8 key")) }
        guard let pem = String(data: data, encoding: .utf8) else { return .failure(.init("\(prefix) is not PEM text")) }
        do {
            return .success(DeviceCheckKey(teamId: teamId, keyId: keyId, privateKey: try ECPrivateKey(pem: pem)))
        } catch {
            return .failure(.init("\(prefix): \(error)"))
        }
    }
}
