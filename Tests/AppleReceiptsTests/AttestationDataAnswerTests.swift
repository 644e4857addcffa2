import AttestCore
import AttestMint
import AttestVerifier
import Foundation
import HTTPClient
import Testing
@testable import AppleReceipts

@Suite("Apple's attestation-data answers, classified")
struct AttestationDataAnswerTests {
    let fixture: ReceiptFixture

    init() throws { fixture = try ReceiptFixture() }

    func classify(_ status: Int, body: [UInt8] = [], headers: [(name: String, value: String)] = []) -> ReceiptRefreshOutcome {
        AttestationDataAnswer.classify(
            .success(HTTPClientResponse(status: status, headers: headers, body: body)), request: fixture.request,
            verifier: ReceiptFixture.verifier, now: ReceiptFixture.now, skewSeconds: ReceiptFixture.skewSeconds)
    }

    func answer200(_ der: [UInt8]) -> ReceiptRefreshOutcome { classify(200, body: Array(Base64.encode(der).utf8)) }

    func isRejected(_ outcome: ReceiptRefreshOutcome) -> Bool {
        if case .rejected = outcome { return true }
        return false
    }

    @Test("200 with a valid RECEIPT: refreshed, with metric, creation, not-before and expiry parsed")
    func refreshed() throws {
        let der = try fixture.refreshed()
        guard case .refreshed(let receipt) = answer200(der) else { Issue.record("not refreshed"); return }
        #expect(receipt.der == der)
        #expect(receipt.riskMetric == 3)
        let created: Int64 = 1_780_000_000 + 3600 - 60
        #expect(receipt.creationTime == Timestamp(seconds: created))
        #expect(receipt.notBefore == Timestamp(seconds: created + 86_400))
        #expect(receipt.expirationTime == Timestamp(seconds: created + 90 * 86_400))
    }

    /// `seconds` from the fixture's now, as a date to mint at.
    func fromNow(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(ReceiptFixture.now.adding(seconds: seconds).microseconds) / 1e6) }

    @Test(
        "A correctly signed RECEIPT that is stale, from the future or expired is rejected with the rule's reason",
        arguments: [
            (-301 - 60, RefreshedReceiptFreshness.Problem.stale), (-86_400, .stale), (61, .createdInFuture), (3600, .createdInFuture),
        ] as [(Int64, RefreshedReceiptFreshness.Problem)])
    func freshness(_ offset: Int64, _ problem: RefreshedReceiptFreshness.Problem) throws {
        let outcome = answer200(try fixture.refreshed(ReceiptOptions(type: "RECEIPT", riskMetric: 3), at: fromNow(offset)))
        #expect(outcome == .rejected(reason: problem.rawValue), "\(offset) s: \(outcome)")
    }

    @Test("At the edges: five minutes old plus the skew, and the skew ahead, still refresh")
    func freshnessEdges() throws {
        for offset: Int64 in [-300 - 60, 60, 0] {
            let outcome = answer200(try fixture.refreshed(ReceiptOptions(type: "RECEIPT", riskMetric: 3), at: fromNow(offset)))
            guard case .refreshed = outcome else { Issue.record("\(offset) s: \(outcome)"); continue }
        }
    }

    @Test("A receipt whose expiry (field 21) has passed is rejected, however fresh its creation")
    func expired() throws {
        var options = ReceiptOptions(type: "RECEIPT", riskMetric: 3)
        options.expirationTime = fromNow(-10 * 86_400)
        #expect(answer200(try fixture.refreshed(options)) == .rejected(reason: RefreshedReceiptFreshness.Problem.expired.rawValue))
        options.expirationTime = fromNow(0)
        #expect(answer200(try fixture.refreshed(options)) == .rejected(reason: RefreshedReceiptFreshness.Problem.expired.rawValue))
    }

    @Test("A fresh receipt created before the stored one (a rollback) is rejected; one created with it or after refreshes")
    func rollback() throws {
        let stored = try fixture.refreshed(ReceiptOptions(type: "RECEIPT", riskMetric: 1), at: fromNow(-10))
        var request = fixture.request
        request.receipt = stored
        func answer(_ der: [UInt8]) -> ReceiptRefreshOutcome {
            AttestationDataAnswer.classify(
                .success(HTTPClientResponse(status: 200, headers: [], body: Array(Base64.encode(der).utf8))), request: request,
                verifier: ReceiptFixture.verifier, now: ReceiptFixture.now, skewSeconds: ReceiptFixture.skewSeconds)
        }
        let older = try fixture.refreshed(ReceiptOptions(type: "RECEIPT", riskMetric: 2), at: fromNow(-20))
        #expect(answer(older) == .rejected(reason: RefreshedReceiptFreshness.Problem.olderThanStored.rawValue))
        for offset: Int64 in [-10, -5] {
            guard case .refreshed = answer(try fixture.refreshed(ReceiptOptions(type: "RECEIPT", riskMetric: 2), at: fromNow(offset))) else {
                Issue.record("\(offset) s not refreshed")
                continue
            }
        }
    }

    @Test("200 whose base64 has surrounding whitespace and newlines still refreshes; one without metric or not-before too")
    func lenientFraming() throws {
        let der = try fixture.refreshed(ReceiptOptions(type: "RECEIPT"))
        guard case .refreshed(let receipt) = classify(200, body: Array(("\r\n " + Base64.encode(der) + "\n").utf8)) else {
            Issue.record("not refreshed")
            return
        }
        #expect(receipt.riskMetric == nil)
        #expect(receipt.notBefore == nil)
    }

    @Test("Hostile 200 bodies are rejected: empty, blank, not base64, over the bound, base64 of garbage")
    func hostileBodies() {
        #expect(isRejected(classify(200)))
        #expect(isRejected(classify(200, body: Array(" \r\n".utf8))))
        #expect(isRejected(classify(200, body: Array("not base64 at all!".utf8))))
        #expect(isRejected(classify(200, body: Array(repeating: 0x41, count: AttestationDataAnswer.maxBodyBytes + 4))))
        #expect(isRejected(classify(200, body: Array(Base64.encode(Array(repeating: 0x30, count: 300)).utf8))))
        #expect(isRejected(classify(200, body: [0xFF, 0xFE, 0x00, 0x41])))
    }

    @Test(
        "A 200 receipt that fails verification is rejected, never refreshed",
        arguments: [
            "forged (another PKI)", "type ATTEST", "other app id", "other device", "corrupt signature", "signer without marker",
            "negative metric", "metric of 10 digits", "no creation time", "no app id",
        ])
    func verificationFailures(_ fault: String) throws {
        let other = try ReceiptFixture()
        let base = fixture.created
        var options = ReceiptOptions(type: "RECEIPT", riskMetric: 2, notBefore: base.addingTimeInterval(86_400))
        switch fault {
        case "forged (another PKI)": options.signingPKI = ReceiptFixture.otherPKI
        case "type ATTEST": options.type = "ATTEST"
        case "other app id": options.appId = "TEAM123456.com.example.other"
        case "other device": options.credentialCertificate = other.leaf
        case "corrupt signature": options.corruptSignature = true
        case "signer without marker":
            options.signer = .init(notBefore: base.addingTimeInterval(-86_400), notAfter: base.addingTimeInterval(86_400 * 30), marker: false)
        case "negative metric": options.riskMetric = -1
        case "metric of 10 digits": options.riskMetric = 1_234_567_890
        case "no creation time": options.omittedFields = [12]
        case "no app id": options.omittedFields = [2]
        default: Issue.record("unknown fault")
        }
        let outcome = answer200(try fixture.refreshed(options))
        #expect(isRejected(outcome), "\(fault): \(outcome)")
    }

    @Test("304 is notModified, 404 noData")
    func notModifiedAndNoData() {
        #expect(classify(304) == .notModified)
        #expect(classify(404, body: Array("anything".utf8)) == .noData)
    }

    @Test("400, 401, 403 and other 4xx are misconfigured with their status; redirects too (never followed)")
    func misconfigured() {
        for status in [400, 401, 403, 405, 413, 415, 301, 302, 307, 308] {
            guard case .misconfigured(let got, _) = classify(status) else { Issue.record("\(status) not misconfigured"); continue }
            #expect(got == status)
        }
    }

    @Test("429 and 5xx retry later with Retry-After (seconds or HTTP date) when given, without it otherwise")
    func retryLater() {
        #expect(classify(429, headers: [("Retry-After", "120")]) == .retryLater(retryAfter: .seconds(120), reason: "rate limited (429)"))
        #expect(classify(429) == .retryLater(retryAfter: nil, reason: "rate limited (429)"))
        let date = "Thu, 28 May 2026 21:36:40 GMT"  // ten minutes after ReceiptFixture.now
        let expected = Duration.seconds(600)
        #expect(classify(503, headers: [("retry-after", date)]) == .retryLater(retryAfter: expected, reason: "server error (503)"))
        for status in [500, 502, 504, 599] {
            guard case .retryLater(nil, _) = classify(status) else { Issue.record("\(status) not retryLater"); continue }
        }
    }

    @Test("Every other status is classified explicitly: 408 and unexpected 1xx/2xx/out-of-range statuses retry later")
    func otherStatuses() {
        for status in [408, 100, 201, 202, 204, 0, 600, 999] {
            guard case .retryLater = classify(status) else { Issue.record("\(status) not retryLater"); continue }
        }
    }

    @Test("Transport failures retry later; a request libcurl must not see is misconfigured")
    func transportFailures() {
        for error in [HTTPClientError.timedOut, .responseTooLarge(limit: 10), .headersTooLarge(limit: 10), .transport(code: 7, message: "x")] {
            guard case .retryLater(nil, _) = AttestationDataAnswer.classify(
                .failure(error), request: fixture.request, verifier: ReceiptFixture.verifier, now: ReceiptFixture.now,
                skewSeconds: ReceiptFixture.skewSeconds)
            else { Issue.record("\(error) not retryLater"); continue }
        }
        guard case .misconfigured(0, _) = AttestationDataAnswer.classify(
            .failure(.invalidRequest("x")), request: fixture.request, verifier: ReceiptFixture.verifier, now: ReceiptFixture.now,
                skewSeconds: ReceiptFixture.skewSeconds)
        else { Issue.record("invalidRequest not misconfigured"); return }
    }
}

@Suite("Retry-After, bounded")
struct RetryAfterTests {
    let now = Timestamp(seconds: 1_781_296_000)

    @Test("delay-seconds, trimmed, capped at a day")
    func seconds() {
        #expect(RetryAfter.parse("0", now: now) == .seconds(0))
        #expect(RetryAfter.parse(" 45 ", now: now) == .seconds(45))
        #expect(RetryAfter.parse("86401", now: now) == .seconds(RetryAfter.maxSeconds))
        #expect(RetryAfter.parse("99999999999999999999", now: now) == .seconds(RetryAfter.maxSeconds))
    }

    @Test("IMF-fixdate: the time until it, zero when past, capped at a day")
    func dates() {
        #expect(RetryAfter.parse("Fri, 12 Jun 2026 20:27:40 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Fri, 12 Jun 2026 20:00:00 GMT", now: now) == .seconds(0))
        #expect(RetryAfter.parse("Fri, 01 Jan 2100 00:00:00 GMT", now: now) == .seconds(RetryAfter.maxSeconds))
    }

    @Test("Anything else is ignored", arguments: [
        "", "-5", "1.5", "+3", "soon", "Friday, 12-Jun-26 20:27:40 GMT", "Fri Jun 12 20:27:40 2026",
        "Fri, 31 Feb 2026 20:27:40 GMT", "Fri, 12 Jun 2026 25:00:00 GMT", "Fri, 12 Jun 2026 20:27:40 UTC",
        "Xyz, 12 Jun 2026 20:27:40 GMT", String(repeating: "9", count: 100),
    ])
    func garbage(_ value: String) {
        #expect(RetryAfter.parse(value, now: now) == nil)
    }
}
