import DeviceIntelligence
import PostgresClient
@testable import Store

/// Reads for tests, through the paths the worker takes: the store serves a batch's reads only inside its
/// transaction, so a test that only reads runs a batch that settles nothing.
extension AttestStore {
    /// The gather of `request` (its locks, stored verdicts, devices, intelligence and claims), then a settle
    /// of nothing.
    func read(_ request: GatherRequest) throws(PGError) -> Gathered {
        try batch { tx throws(PGError) in
            let gathered = try tx.gather(request)
            _ = try tx.settle([])
            return gathered
        }
    }

    /// The intelligence read a batch makes after its gather (`BatchTransaction.intelligence`), on its own.
    func readIntelligence(_ query: IntelligenceQuery) throws(PGError) -> IntelligenceSnapshot {
        try batch { tx throws(PGError) in try tx.intelligence(query) }
    }
}
