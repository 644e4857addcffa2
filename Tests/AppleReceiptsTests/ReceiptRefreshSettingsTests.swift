import AttestCore
import AttestVerifier
import Foundation
import Testing
@testable import AppleReceipts

@Suite("Receipt refresh settings from the environment")
struct ReceiptRefreshSettingsTests {
    let keyPath = try! DeviceCheckKeys.write(DeviceCheckKeys.team)

    func problems(_ environment: [String: String]) -> [String] {
        do {
            _ = try ReceiptRefreshSettings.from(environment: environment)
            return []
        } catch {
            return error.problems
        }
    }

    @Test("No keys configured: nil (refresh off), even with the other settings at their defaults")
    func off() throws {
        #expect(try ReceiptRefreshSettings.from(environment: [:]) == nil)
        #expect(try ReceiptRefreshSettings.from(environment: ["ATTEST_DEVICECHECK_KEYS": " , "]) == nil)
    }

    @Test("Keys per team with Apple's endpoints and the default timeouts; the URLs and timeouts can be set")
    func keysAndDefaults() throws {
        let settings = try #require(try ReceiptRefreshSettings.from(environment: [
            "ATTEST_DEVICECHECK_KEYS": "TEAM123456:KEY1234567:\(keyPath), OTHER12345:KEY7654321:\(keyPath)",
        ]))
        #expect(Set(settings.keys.keys) == ["TEAM123456", "OTHER12345"])
        #expect(settings.keys["TEAM123456"]?.keyId == "KEY1234567")
        #expect(settings.url(for: .production) == "https://data.appattest.apple.com/v1/attestationData")
        #expect(settings.url(for: .development) == "https://data-development.appattest.apple.com/v1/attestationData")
        #expect(settings.connectTimeout == .seconds(5))
        #expect(settings.requestTimeout == .seconds(15))
        #expect(settings.caFile == nil)

        let local = try #require(try ReceiptRefreshSettings.from(environment: [
            "ATTEST_DEVICECHECK_KEYS": "TEAM123456:KEY1234567:\(keyPath)",
            "ATTEST_RECEIPT_URL_PRODUCTION": "http://127.0.0.1:8443/v1/attestationData",
            "ATTEST_RECEIPT_URL_DEVELOPMENT": "https://stand-in.test:8443/dev",
            "ATTEST_RECEIPT_CONNECT_TIMEOUT": "2", "ATTEST_RECEIPT_REQUEST_TIMEOUT": "3", "ATTEST_RECEIPT_CA_FILE": "/tmp/ca.pem",
        ]))
        #expect(local.url(for: .production) == "http://127.0.0.1:8443/v1/attestationData")
        #expect(local.url(for: .development) == "https://stand-in.test:8443/dev")
        #expect(local.requestTimeout == .seconds(3))
        #expect(local.caFile == "/tmp/ca.pem")
    }

    @Test("Refused keys, each with a message naming the entry, never the key's content", arguments: [
        "TEAM123456", "TEAM123456:KEY1234567", "team123456:KEY1234567:PATH", "TEAM12345:KEY1234567:PATH",
        "TEAM123456:key1234567:PATH", "TEAM123456:KEY12345:PATH", "TEAM123456:KEY1234567:/no/such/file.p8",
        "TEAM123456:KEY1234567:P384", "TEAM123456:KEY1234567:NOTPEM", "TEAM123456:KEY1234567:DIR",
    ])
    func refusedKeys(_ entry: String) throws {
        let p384 = try DeviceCheckKeys.write(DeviceCheckKeys.p384)
        let notPEM = try DeviceCheckKeys.write("hello")
        let entry = entry.replacingOccurrences(of: "PATH", with: keyPath).replacingOccurrences(of: "P384", with: p384)
            .replacingOccurrences(of: "NOTPEM", with: notPEM).replacingOccurrences(of: "DIR", with: NSTemporaryDirectory())
        let found = problems(["ATTEST_DEVICECHECK_KEYS": entry])
        #expect(found.count == 1, "\(entry): \(found)")
        #expect(found.allSatisfy { $0.hasPrefix("ATTEST_DEVICECHECK_KEYS") })
        for line in DeviceCheckKeys.team.split(separator: "\n") + DeviceCheckKeys.p384.split(separator: "\n") where line.count > 20 {
            #expect(!found.joined().contains(line.trimmingCharacters(in: .whitespaces)))
        }
    }

    @Test("Two keys for one team are refused")
    func duplicateTeam() {
        #expect(problems(["ATTEST_DEVICECHECK_KEYS": "TEAM123456:KEY1234567:\(keyPath),TEAM123456:KEY7654321:\(keyPath)"]).count == 1)
    }

    @Test("Endpoint URLs: https, or plain http to a loopback host only; no user information, no spaces", arguments: [
        ("https://data.appattest.apple.com/v1/attestationData", true),
        ("http://127.0.0.1:9/x", true), ("http://localhost/x", true), ("http://[::1]:80/x", true),
        ("http://data.appattest.apple.com/v1/attestationData", false), ("http://127.0.0.2/x", false),
        ("http://localhost.evil.test/x", false), ("http://127.0.0.1@evil.test/x", false),
        ("https://user:pass@data.appattest.apple.com/x", false), ("ftp://127.0.0.1/x", false), ("https:///x", false),
        ("https://a b/x", false), ("", false), ("https://" + String(repeating: "a", count: 3000), false),
    ])
    func urls(_ url: String, _ valid: Bool) {
        #expect((ReceiptRefreshSettings.urlProblem(url) == nil) == valid, "\(url)")
        let found = problems(["ATTEST_RECEIPT_URL_DEVELOPMENT": url])
        #expect(found.isEmpty == valid)
    }

    @Test("Timeouts are whole seconds from 1 to 300", arguments: ["0", "-1", "301", "1.5", "x", ""])
    func timeouts(_ value: String) {
        #expect(problems(["ATTEST_RECEIPT_CONNECT_TIMEOUT": value]).count == 1)
        #expect(problems(["ATTEST_RECEIPT_REQUEST_TIMEOUT": value]).count == 1)
    }

    @Test("Its setting names are the ones it reads")
    func names() {
        #expect(ReceiptRefreshSettings.settings.map(\.name) == [
            "ATTEST_DEVICECHECK_KEYS", "ATTEST_RECEIPT_URL_PRODUCTION", "ATTEST_RECEIPT_URL_DEVELOPMENT",
            "ATTEST_RECEIPT_CONNECT_TIMEOUT", "ATTEST_RECEIPT_REQUEST_TIMEOUT", "ATTEST_RECEIPT_CA_FILE",
        ])
    }
}
