import AttestCore

/// The score and factors `device_risk` holds for a device: a decision that leaves both as they are and
/// records no event has nothing to write there (most accepted assertions).
public struct HeldScore: Sendable, Equatable {
    public var score: Int
    /// As stored (jsonb), compared as JSON: object members in any order.
    public var factors: JSONValue

    public init(score: Int, factors: JSONValue) {
        self.score = score
        self.factors = factors
    }

    public init(_ assessment: RiskAssessment) {
        self.init(score: assessment.score, factors: assessment.factorsJSON)
    }
}
