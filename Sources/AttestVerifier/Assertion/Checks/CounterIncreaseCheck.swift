import AttestCore
/// Step 6: the counter moves forward past the last accepted one, so a captured assertion cannot be replayed.
struct CounterIncreaseCheck: AssertionCheck {
    func evaluate(_ context: AssertionContext) -> VerificationFailure? {
        guard context.authenticatorData.counter > context.device.counter else {
            return VerificationFailure(
                .assertionInvalid, .counterNotIncreasing,
                "counter \(context.authenticatorData.counter) is not above \(context.device.counter)")
        }
        return nil
    }
}
