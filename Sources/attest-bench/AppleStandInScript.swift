import AttestCore

/// What the stand-in answers, per device: a JSON file
/// `{"devices": {"<keyId base64>": [step, …]}, "default": [step, …]}`. A device's n-th request gets its
/// n-th step (the last one repeats); devices not listed follow `default` (a 200 with metric 1 if absent).
///
/// A step: `{"status": 200, "riskMetric": 5, "createdSeconds": -86400, "notBeforeSeconds": 86400,
/// "expirySeconds": 2592000, "delaySeconds": 2, "retryAfter": "7", "forged": true, "body": "raw text"}`,
/// every member optional: `status` (default 200); for a 200, a receipt minted under the test PKI (type
/// RECEIPT, `riskMetric` when given, created `createdSeconds` from now (default 0: a stale or future
/// receipt when set), not-before and expiry that many seconds after now, negative for past ones), signed
/// by a PKI outside the trusted one when `forged`, or `body` as given instead (hostile bodies);
/// `retryAfter` as the Retry-After header; `delaySeconds` before answering (a slow Apple).
struct AppleStandInScript: Sendable {
    struct Step: Sendable, Equatable {
        var status = 200
        var riskMetric: Int?
        var createdSeconds: Int64 = 0
        var notBeforeSeconds: Int64 = 86_400
        var expirySeconds: Int64 = 30 * 86_400
        var delaySeconds: Int = 0
        var retryAfter: String?
        var forged = false
        var body: String?
    }

    var devices: [String: [Step]]
    var fallback: [Step]

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// Delays past this would outlast the server's request deadline.
    static let maxDelaySeconds = 25

    init(devices: [String: [Step]] = [:], fallback: [Step] = [Step(riskMetric: 1)]) {
        self.devices = devices
        self.fallback = fallback
    }

    init(json bytes: [UInt8]) throws(Invalid) {
        guard let root = JSONValue.parse(bytes), case .object(let members) = root else { throw Invalid(description: "the script is not a JSON object") }
        var devices = [String: [Step]]()
        var fallback = [Step(riskMetric: 1)]
        for (name, value) in members {
            switch name {
            case "default": fallback = try Self.steps(value, "default")
            case "devices":
                guard case .object(let entries) = value else { throw Invalid(description: "devices must be an object") }
                for (keyId, steps) in entries { devices[keyId] = try Self.steps(steps, keyId) }
            default: throw Invalid(description: "unknown script member \(name)")
            }
        }
        self.init(devices: devices, fallback: fallback)
    }

    /// The step for a device's `index`-th request (from 0).
    func step(keyId: String, index: Int) -> Step {
        let steps = devices[keyId] ?? fallback
        return steps[min(index, steps.count - 1)]
    }

    private static func steps(_ value: JSONValue, _ owner: String) throws(Invalid) -> [Step] {
        guard case .array(let items) = value, !items.isEmpty else { throw Invalid(description: "\(owner): steps must be a non-empty array") }
        var steps = [Step]()
        for item in items {
            guard case .object(let members) = item else { throw Invalid(description: "\(owner): a step must be an object") }
            var step = Step()
            for (name, value) in members {
                switch (name, value) {
                case ("status", .int(let n)) where (100...599).contains(n): step.status = Int(n)
                case ("riskMetric", .int(let n)): step.riskMetric = Int(n)
                case ("createdSeconds", .int(let n)): step.createdSeconds = n
                case ("notBeforeSeconds", .int(let n)): step.notBeforeSeconds = n
                case ("expirySeconds", .int(let n)): step.expirySeconds = n
                case ("delaySeconds", .int(let n)) where (0...Int64(maxDelaySeconds)).contains(n): step.delaySeconds = Int(n)
                case ("retryAfter", .string(let text)): step.retryAfter = text
                case ("forged", .bool(let flag)): step.forged = flag
                case ("body", .string(let text)): step.body = text
                default: throw Invalid(description: "\(owner): bad step member \(name)")
                }
            }
            steps.append(step)
        }
        return steps
    }
}
