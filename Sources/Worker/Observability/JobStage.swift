/// A stage of a job's time in the worker, the `stage` label of `attest_job_stage_seconds`: broker (created →
/// consumed), buffer (consumed → its batch starts), reading, deciding and storing (its batch's reads, the
/// rest of the batch, its commits), publish (verdict handed to the producer → acknowledged).
enum JobStage: Int, CaseIterable {
    case broker, buffer, reading, deciding, storing, publish

    var label: String {
        switch self {
        case .broker: "broker"
        case .buffer: "buffer"
        case .reading: "reading"
        case .deciding: "deciding"
        case .storing: "storing"
        case .publish: "publish"
        }
    }
}
