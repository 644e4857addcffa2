import AttestCore

/// An app's risk settings, stored in `apps.risk_weights` and set with `attest-worker app set
/// --risk-weights JSON`: a weight per factor (points per occurrence) overriding the defaults, and the
/// values of Apple's extensions the app expects. Defaults and meaning: docs/device-intelligence.md.
public struct RiskPolicy: Sendable, Equatable {
    public static let defaultWeights: [RiskFactor.Kind: Int] = [
        .developmentBuild: 25, .counterReplay: 15, .failedAttestation: 10, .failedAssertion: 5, .keyChurn: 10,
        .attestationRate: 5, .receiptRiskMetric: 4, .receiptRiskMetricGrowth: 5, .validationCategory: 30, .bundleVersion: 20,
        .bootloaderUnlocked: 40, .bootUnverified: 40, .noStrongBox: 5, .stalePatchLevel: 15,
    ]
    static let allowedCategoriesKey = "allowed_validation_categories"
    static let minimumBundleVersionKey = "minimum_bundle_version"

    public var weights: [RiskFactor.Kind: Int]
    /// Validation categories the app accepts; nil: any.
    public var allowedValidationCategories: Set<UInt32>?
    /// The oldest bundle version the app accepts; nil: any.
    public var minimumBundleVersion: String?

    public init(
        weights: [RiskFactor.Kind: Int] = [:], allowedValidationCategories: Set<UInt32>? = nil,
        minimumBundleVersion: String? = nil
    ) {
        self.weights = Self.defaultWeights.merging(weights) { _, new in new }
        self.allowedValidationCategories = allowedValidationCategories
        self.minimumBundleVersion = minimumBundleVersion
    }

    public func weight(_ kind: RiskFactor.Kind) -> Int { weights[kind] ?? 0 }

    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads the stored or given JSON object; unknown names are errors, so a typo never passes silently.
    public init(json: JSONValue) throws(Invalid) {
        guard case .object(let members) = json else { throw Invalid(description: "risk weights must be a JSON object") }
        var weights = [RiskFactor.Kind: Int]()
        var categories: Set<UInt32>?
        var minimum: String?
        for (name, value) in members {
            switch (name, value) {
            case (Self.allowedCategoriesKey, .array(let items)):
                categories = try Set(items.map { item throws(Invalid) -> UInt32 in
                    guard case .int(let n) = item, let category = UInt32(exactly: n) else {
                        throw Invalid(description: "\(name) must hold integers from 0 to 2^32-1")
                    }
                    return category
                })
            case (Self.minimumBundleVersionKey, .string(let text)) where !text.isEmpty:
                minimum = text
            default:
                guard let kind = RiskFactor.Kind(rawValue: name) else {
                    throw Invalid(description: "unknown risk setting \(name)")
                }
                guard case .int(let points) = value, (0...100).contains(points) else {
                    throw Invalid(description: "weight \(name) must be an integer from 0 to 100")
                }
                weights[kind] = Int(points)
            }
        }
        self.init(weights: weights, allowedValidationCategories: categories, minimumBundleVersion: minimum)
    }

    /// The settings that differ from the defaults, as stored in `apps.risk_weights`.
    public var json: JSONValue {
        var members = RiskFactor.Kind.allCases.compactMap { kind -> (String, JSONValue)? in
            weights[kind] == Self.defaultWeights[kind] ? nil : (kind.rawValue, .int(Int64(weight(kind))))
        }
        if let allowedValidationCategories {
            members.append((Self.allowedCategoriesKey, .array(allowedValidationCategories.sorted().map { .int(Int64($0)) })))
        }
        if let minimumBundleVersion { members.append((Self.minimumBundleVersionKey, .string(minimumBundleVersion))) }
        return .object(members)
    }
}
