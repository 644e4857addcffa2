/// The band a risk score falls in (CONTRACT 2): what clients act on, and what verdict tokens carry.
public enum RiskCategory: String, Sendable, Equatable {
    case trusted
    case suspicious
    case blocked

    /// trusted 0–20, suspicious 21–75, blocked 76–100.
    public init(score: Int) {
        switch score {
        case ...20: self = .trusted
        case 21...75: self = .suspicious
        default: self = .blocked
        }
    }
}
