import AttestCore

/// A device's score with the factors that produced it: the factors' points add up to the score (capped
/// at 100), so every score can be explained.
public struct RiskAssessment: Sendable, Equatable {
    public var score: Int
    public var factors: [RiskFactor]

    public var category: RiskCategory { RiskCategory(score: score) }

    public var factorsJSON: JSONValue { .array(factors.map(\.json)) }
}
