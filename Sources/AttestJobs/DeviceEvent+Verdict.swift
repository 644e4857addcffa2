import AttestVerifier
import DeviceIntelligence

/// A verdict as its device's history sees it: a rejection the evidence counts against the device, or an
/// accepted attestation with what it showed.
extension DeviceEvent {
    public init(_ verdict: Verdict, newKey: Bool) {
        self.init()
        if let failure = verdict.failure {
            guard FailureEvidence.countsAgainstDevice(failure.reason) else { return }
            switch verdict.kind {
            case .attestation?, .androidAttestation?: failedAttestation = true
            case .assertion? where failure.reason == .counterNotIncreasing: counterReplay = true
            case .assertion?, .androidAssertion?: failedAssertion = true
            case nil: break
            }
        } else if verdict.kind == .attestation || verdict.kind == .androidAttestation {
            attested = true
            self.newKey = newKey
            environment = verdict.environment
            receiptRiskMetric = verdict.receipt?.riskMetric
        }
    }
}
