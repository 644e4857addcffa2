/// Why a certificate path was refused. Signature and structure problems are found before any validity
/// period is looked at, so an expired but otherwise valid path is reported as `expired`.
public enum ChainFailure: Error, Sendable, Equatable {
    case invalid(String)
    case expired(String)
}
