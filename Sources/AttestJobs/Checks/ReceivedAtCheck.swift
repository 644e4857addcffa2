import AttestVerifier

/// The receivedAt bounds against the inputs' `now` and, when configured, the broker timestamp: before any
/// state is consulted, so a backdated job cannot revive an expired certificate or challenge.
struct ReceivedAtCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        context.verifier.checkReceivedAt(context.job, now: context.inputs.now, brokerTimestampMs: context.inputs.brokerTimestampMs)
    }
}
