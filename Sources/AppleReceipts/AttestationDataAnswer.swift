import AttestCore
import AttestVerifier
import HTTPClient

/// What one answer of Apple's attestation-data endpoint means for the refresh (issue 13; Apple's "Assessing
/// fraud risk" and its forum threads): every status and transport failure mapped to one outcome, the 200
/// body verified before anything of it is believed. Pure, so each rule has its unit test.
enum AttestationDataAnswer {
    /// A refreshed receipt is a few kilobytes of DER in base64; more is not a receipt.
    static let maxBodyBytes = 64 * 1024
    /// Field 17 is a small count; more digits than this is not Apple's metric.
    static let maxRiskMetricDigits = 9

    static func classify(
        _ result: Result<HTTPClientResponse, HTTPClientError>, request: ReceiptRefreshRequest, verifier: ReceiptVerifier,
        now: Timestamp, skewSeconds: Int64
    ) -> ReceiptRefreshOutcome {
        let response: HTTPClientResponse
        switch result {
        case .success(let answered): response = answered
        case .failure(.invalidRequest(let why)): return .misconfigured(status: 0, reason: why)
        case .failure(let error): return .retryLater(retryAfter: nil, reason: "transport: \(error)")
        }
        switch response.status {
        case 200:
            return refreshed(body: response.body, request: request, verifier: verifier, now: now, skewSeconds: skewSeconds)
        case 304:
            return .notModified
        case 404:
            return .noData
        case 400:
            return .misconfigured(status: 400, reason: "Apple refused the request (400): the receipt or its encoding")
        case 401:
            return .misconfigured(status: 401, reason: "Apple refused the DeviceCheck token (401): team id, key id or key")
        case 403:
            return .misconfigured(status: 403, reason: "Apple refused the team's key (403): not allowed App Attest data")
        case 408:
            return .retryLater(retryAfter: nil, reason: "Apple timed the request out (408)")
        case 429:
            return .retryLater(retryAfter: RetryAfter.parse(response.header("Retry-After"), now: now), reason: "rate limited (429)")
        case 500...599:
            return .retryLater(
                retryAfter: RetryAfter.parse(response.header("Retry-After"), now: now), reason: "server error (\(response.status))")
        case 300...399:
            // Never followed: a moved endpoint is a configuration to fix, not something to chase.
            return .misconfigured(status: response.status, reason: "the endpoint redirected (\(response.status)); check its URL")
        case 400...499:
            return .misconfigured(status: response.status, reason: "Apple refused the request (\(response.status))")
        default:
            // Another 1xx/2xx or a status outside HTTP's range: nothing to store, try again later.
            return .retryLater(retryAfter: nil, reason: "unexpected status \(response.status)")
        }
    }

    /// The 200 body: base64 of a CMS receipt that verifies as type RECEIPT for the device's app and key, with
    /// a creation time and, when present, a well-formed metric, not-before and expiry, and fresh
    /// (``RefreshedReceiptFreshness``) against `now` and the stored receipt it replaces.
    static func refreshed(
        body: [UInt8], request: ReceiptRefreshRequest, verifier: ReceiptVerifier, now: Timestamp, skewSeconds: Int64
    ) -> ReceiptRefreshOutcome {
        guard body.count <= maxBodyBytes else { return .rejected(reason: "body over \(maxBodyBytes) bytes") }
        let text = String(decoding: body.drop { isSpace($0) }.reversed().drop { isSpace($0) }.reversed(), as: UTF8.self)
        guard !text.isEmpty else { return .rejected(reason: "empty body") }
        guard let der = Base64.decode(text), !der.isEmpty else { return .rejected(reason: "body is not base64") }
        let receipt: Receipt
        switch verifier.verify(
            der, expectedAppId: request.teamId + "." + request.bundleId, attestedKey: request.attestedKey,
            expectedType: "RECEIPT", at: now)
        {
        case .failure(let failure): return .rejected(reason: "receipt_invalid: \(failure)")
        case .success(let verified): receipt = verified
        }
        guard let creation = receipt.creationTime.flatMap(Timestamp.init(rfc3339:)) else {
            return .rejected(reason: "creation time (field 12) missing or not RFC 3339")
        }
        let notBefore = receipt.notBefore.map(Timestamp.init(rfc3339:))
        if case .some(nil) = notBefore { return .rejected(reason: "not-before (field 19) is not RFC 3339") }
        let expiry = receipt.expirationTime.map(Timestamp.init(rfc3339:))
        if case .some(nil) = expiry { return .rejected(reason: "expiration time (field 21) is not RFC 3339") }
        if let problem = RefreshedReceiptFreshness.problem(
            creation: creation, expiry: expiry ?? nil, storedCreation: storedCreationTime(request.receipt), now: now, skewSeconds: skewSeconds)
        {
            return .rejected(reason: problem.rawValue)
        }
        var metric: Int?
        if let field = receipt.payload[.riskMetric] {
            guard !field.isEmpty, field.count <= maxRiskMetricDigits, field.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return .rejected(reason: "risk metric (field 17) is not a count")
            }
            metric = Int(String(decoding: field, as: UTF8.self))
        }
        return .refreshed(RefreshedReceipt(
            der: der, riskMetric: metric, creationTime: creation, notBefore: notBefore ?? nil, expirationTime: expiry ?? nil))
    }

    /// The stored receipt's creation time, read without verifying (it was verified when stored); nil when
    /// it has none or does not parse, and then only the clock bounds the new one.
    static func storedCreationTime(_ der: [UInt8]) -> Timestamp? {
        guard let signed = try? SignedData(ber: der), let payload = try? ReceiptPayload(der: signed.content) else { return nil }
        return payload.text(.creationTime).flatMap { Timestamp(rfc3339: $0) }
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
}
