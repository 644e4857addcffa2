import AttestCore
import AttestCrypto
import AttestMint
import AttestVerifier
import Foundation
import Observability
import Synchronization
import Testing
@testable import AppleReceipts

/// What a local endpoint saw of the client's requests.
final class SeenRequests: Sendable {
    private let requests = Mutex<[(path: String, authorization: String?, body: [UInt8])]>([])
    func append(_ request: HTTPRequest) { requests.withLock { $0.append((request.path, request.header("Authorization"), request.body)) } }
    var all: [(path: String, authorization: String?, body: [UInt8])] { requests.withLock { $0 } }
}

@Suite("The attestation-data client over HTTP, against a local endpoint")
struct AttestationDataClientTests {
    @Test("POSTs the base64 receipt with the JWT as Authorization to the environment's URL and verifies the answer")
    func exchange() throws {
        let fixture = try ReceiptFixture()
        let refreshed = try fixture.refreshed()
        let seen = SeenRequests()
        var routes = HTTPRoutes()
        for path in ["/production", "/development"] {
            routes.add("POST", path) { request in
                seen.append(request)
                return HTTPResponse(status: 200, contentType: "application/octet-stream", body: Array(Base64.encode(refreshed).utf8))
            }
        }
        let server = HTTPServer(configuration: .init(address: try HTTPAddress(parsing: "127.0.0.1:0")), routes: routes)
        try server.start()
        defer { server.stop() }
        let port = try #require(server.port)
        let key = DeviceCheckKey(teamId: ReceiptFixture.teamId, keyId: "KEY1234567", privateKey: try ECPrivateKey(pem: DeviceCheckKeys.team))
        let client = AttestationDataClient(
            settings: ReceiptRefreshSettings(
                keys: [key.teamId: key], productionURL: "http://127.0.0.1:\(port)/production",
                developmentURL: "http://127.0.0.1:\(port)/development"),
            receiptAnchor: ReceiptFixture.anchor, skewSeconds: ReceiptFixture.skewSeconds, clock: FixedClock(ReceiptFixture.now))
        #expect(client.isConfigured(teamId: ReceiptFixture.teamId))
        #expect(!client.isConfigured(teamId: "NOKEY12345"))

        guard case .refreshed(let receipt) = client.refresh(fixture.request, now: ReceiptFixture.now) else {
            Issue.record("not refreshed")
            return
        }
        #expect(receipt.riskMetric == 3)
        var development = fixture.request
        development.environment = .development
        guard case .refreshed = client.refresh(development, now: ReceiptFixture.now) else { Issue.record("not refreshed"); return }

        let requests = seen.all
        #expect(requests.map(\.path) == ["/production", "/development"])
        let expectedToken = DeviceCheckTokens.sign(key: key, issuedAt: ReceiptFixture.now.seconds)
        for request in requests {
            #expect(request.body == Array(Base64.encode(fixture.request.receipt).utf8))
            // ES256 signatures are randomized: compare the signed part, then check the signature.
            let token = try #require(request.authorization)
            #expect(token.split(separator: ".").prefix(2) == expectedToken!.split(separator: ".").prefix(2))
        }

        #expect(client.refresh(ReceiptRefreshRequest(
            teamId: "NOKEY12345", bundleId: "b", environment: .production, receipt: [1], attestedKey: [2]), now: ReceiptFixture.now)
            == .misconfigured(status: 0, reason: "no DeviceCheck key for team NOKEY12345"))
    }

    @Test("A dead endpoint is retryLater within the request timeout")
    func deadEndpoint() throws {
        let fixture = try ReceiptFixture()
        let key = DeviceCheckKey(teamId: ReceiptFixture.teamId, keyId: "KEY1234567", privateKey: try ECPrivateKey(pem: DeviceCheckKeys.team))
        let client = AttestationDataClient(
            settings: ReceiptRefreshSettings(keys: [key.teamId: key], productionURL: "http://127.0.0.1:9/x", requestTimeout: .seconds(2)),
            receiptAnchor: ReceiptFixture.anchor, skewSeconds: ReceiptFixture.skewSeconds)
        guard case .retryLater(nil, _) = client.refresh(fixture.request, now: ReceiptFixture.now) else {
            Issue.record("not retryLater")
            return
        }
    }
}
