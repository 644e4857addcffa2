/// Where an attested key was created: Apple's production App Attest service or the development one
/// (the aaguid tells which).
public enum AppAttestEnvironment: String, Sendable, Codable {
    case production
    case development
}

/// Which environments an app accepts.
public enum EnvironmentPolicy: String, Sendable, CaseIterable {
    case production
    case development
    case any

    public func allows(_ environment: AppAttestEnvironment) -> Bool {
        switch self {
        case .any: return true
        case .production: return environment == .production
        case .development: return environment == .development
        }
    }
}
