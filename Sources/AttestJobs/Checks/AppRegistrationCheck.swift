import AttestVerifier

/// The job's (teamId, bundleId) is registered, or for an Android job its package (or unknown apps are
/// admitted, which the worker folds into the inputs): its rules decide the challenge and environment steps.
struct AppRegistrationCheck: JobCheck {
    func evaluate(_ context: inout JobCheckContext) -> VerificationFailure? {
        if let android = context.job.android {
            guard let app = context.inputs.app, app.android != nil else {
                return VerificationFailure(.jobInvalid, .unknownApp, "Android package \(android.packageName) is not registered")
            }
            context.app = app
            return nil
        }
        guard let app = context.inputs.app else {
            return VerificationFailure(.jobInvalid, .unknownApp, "app \(context.job.teamId).\(context.job.bundleId) is not registered")
        }
        context.app = app
        return nil
    }
}
