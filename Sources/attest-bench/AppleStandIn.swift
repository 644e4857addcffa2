import AttestCLI
import AttestCore
import AttestCrypto
import AttestMint
import Foundation
import Observability
import Synchronization

/// `attest-bench apple-stand-in`: a local stand-in of Apple's attestation-data endpoint, for the tests of
/// the receipt refresh (issue 13). Never in the production binary: it mints receipts under a test PKI.
struct AppleStandIn: Subcommand {
    static let help = """
        usage: attest-bench apple-stand-in --pki FILE --keys TEAMID:KEYID:PEM[,…] [--script FILE]
                                           [--port N] [--port-file FILE] [--max-token-age SECONDS]

        Serves Apple's attestation-data exchange on 127.0.0.1:N (0, the default: a free port; the port is
        printed as `listening 127.0.0.1:N` and written to --port-file) until SIGTERM or SIGINT.
        POST any path: the body is a base64 receipt, `Authorization` a DeviceCheck JWT that must be ES256
        with a kid of --keys (PEM: the key's PUBLIC KEY, or its .p8 whose public half is used), iss that
        key's team, iat at most --max-token-age seconds old (default 3600) and a valid signature, else 401;
        a body that is not a receipt is 400, a receipt of another team's app 403. Then the device's step of
        the --script (see AppleStandInScript; default: 200 with metric 1): receipts are minted under the
        --pki bundle (TestPKI.pemBundle) as type RECEIPT, or under a fresh PKI outside it when forged.
        GET /stand-in/requests answers {"<keyId>": {"requests": n, "maxConcurrent": m}}.
        """

    static func run(_ args: inout Arguments) throws -> Int32 {
        guard let pkiPath = try args.option("pki"), let keySpec = try args.option("keys") else {
            throw Arguments.UsageError(description: "apple-stand-in needs --pki and --keys")
        }
        let port = try args.integer("port", min: 0) ?? 0
        let portFile = try args.option("port-file")
        let maxAge = Int64(try args.integer("max-token-age", min: 1) ?? 3600)
        let script = try args.option("script").map { path -> AppleStandInScript in
            guard let data = FileManager.default.contents(atPath: path) else { throw Arguments.UsageError(description: "cannot read \(path)") }
            return try AppleStandInScript(json: Array(data))
        } ?? AppleStandInScript()
        _ = try args.positionals(max: 0)

        let pki = try TestPKI(pemBundle: String(contentsOfFile: pkiPath, encoding: .utf8))
        let now = Date()
        let forger = try TestPKI.generate(validFrom: now.addingTimeInterval(-365 * 86_400), validUntil: now.addingTimeInterval(365 * 86_400))
        var keys = [String: AppleStandInToken.Key]()
        for entry in keySpec.split(separator: ",") {
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3 else { throw Arguments.UsageError(description: "--keys: TEAMID:KEYID:PEM entries") }
            keys[parts[1]] = AppleStandInToken.Key(teamId: parts[0], keyId: parts[1], publicKey: try publicKey(pemFile: parts[2]))
        }
        let endpoint = AppleStandInEndpoint(
            pki: pki, forger: forger, script: script, token: AppleStandInToken(keys: keys, maxAgeSeconds: maxAge))

        var routes = HTTPRoutes()
        routes.add("POST", prefix: "/") { endpoint.answer($0) }
        routes.add("GET", "/stand-in/requests") { _ in endpoint.statistics() }
        let server = HTTPServer(
            name: "apple-stand-in",
            configuration: .init(address: try HTTPAddress(parsing: "127.0.0.1:\(port)"), maxRequestBodyBytes: 256 * 1024),
            routes: routes)
        try server.start()
        let bound = server.port ?? port
        if let portFile { try "\(bound)\n".write(toFile: portFile, atomically: true, encoding: .utf8) }
        // Unbuffered, so a test reading the pipe sees it at once.
        FileHandle.standardOutput.write(Data("listening 127.0.0.1:\(bound)\n".utf8))

        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        stop.wait()
        sources.forEach { $0.cancel() }
        server.stop()
        return 0
    }

    private static func publicKey(pemFile path: String) throws -> ECPublicKey {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        if let spki = PEM.blocks(in: text)?.first(where: { $0.label == "PUBLIC KEY" })?.der {
            guard let key = ECPublicKey(subjectPublicKeyInfo: spki) else { throw Arguments.UsageError(description: "\(path): not an EC public key") }
            return key
        }
        return try ECPrivateKey(pem: text).publicKey
    }
}

/// The stand-in's answers and its per-device counts (requests, and the most at once, which shows whether
/// two refreshers ever asked for one device together).
final class AppleStandInEndpoint: Sendable {
    let pki: TestPKI
    let forger: TestPKI
    let script: AppleStandInScript
    let token: AppleStandInToken
    private let devices = Mutex<[String: (requests: Int, inFlight: Int, maxConcurrent: Int)]>([:])

    init(pki: TestPKI, forger: TestPKI, script: AppleStandInScript, token: AppleStandInToken) {
        self.pki = pki
        self.forger = forger
        self.script = script
        self.token = token
    }

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        let now = SystemClock().now()
        let team: String
        switch token.check(request.header("Authorization"), now: now) {
        case .failure(let why): return .text(401, "Unauthorized: \(why)\n")
        case .success(let checked): team = checked
        }
        let text = String(decoding: request.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let der = Base64.decode(text), let signed = try? SignedData(ber: der),
            let payload = try? ReceiptPayload(der: signed.content), let appId = payload.text(.appId),
            let certificateDER = payload[.attestedPublicKey], let certificate = try? Certificate(der: certificateDER)
        else { return .text(400, "Missing or badly formatted receipt\n") }
        guard appId.hasPrefix(team + ".") else { return .text(403, "Forbidden: the receipt's app is not the team's\n") }

        let keyId = Base64.encode(Digest.sha256.hash(certificate.publicKey))
        let index = devices.withLock { devices in
            var entry = devices[keyId] ?? (0, 0, 0)
            defer {
                entry.requests += 1
                entry.inFlight += 1
                entry.maxConcurrent = max(entry.maxConcurrent, entry.inFlight)
                devices[keyId] = entry
            }
            return entry.requests
        }
        defer { devices.withLock { $0[keyId]?.inFlight -= 1 } }

        let step = script.step(keyId: keyId, index: index)
        if step.delaySeconds > 0 { Thread.sleep(forTimeInterval: Double(step.delaySeconds)) }
        let headers = step.retryAfter.map { [(name: "Retry-After", value: $0)] } ?? []
        guard step.status == 200 else { return HTTPResponse(status: step.status, contentType: "text/plain", body: [], headers: headers) }
        if let body = step.body { return HTTPResponse(status: 200, contentType: "text/plain", body: Array(body.utf8), headers: headers) }

        let minted = Date()
        let created = minted.addingTimeInterval(Double(step.createdSeconds))
        let environment = payload.text(.environment)
        let options = ReceiptOptions(
            type: "RECEIPT", environment: environment, creationTime: created,
            expirationTime: minted.addingTimeInterval(Double(step.expirySeconds)), riskMetric: step.riskMetric,
            notBefore: minted.addingTimeInterval(Double(step.notBeforeSeconds)), signingPKI: step.forged ? forger : nil)
        do {
            let receipt = try pki.mintReceipt(
                appId: appId, credentialCertificate: certificateDER, environment: environment == "sandbox" ? .development : .production,
                at: created, options: options)
            return HTTPResponse(status: 200, contentType: "text/plain", body: Array(Base64.encode(receipt).utf8), headers: headers)
        } catch {
            return .text(500, "minting failed: \(error)\n")
        }
    }

    func statistics() -> HTTPResponse {
        let members = devices.withLock { devices in
            devices.sorted { $0.key < $1.key }.map { keyId, entry -> (String, JSONValue) in
                (keyId, .object([("requests", .int(Int64(entry.requests))), ("maxConcurrent", .int(Int64(entry.maxConcurrent)))]))
            }
        }
        return HTTPResponse(status: 200, contentType: "application/json", body: Array(JSONValue.object(members).serialized().utf8))
    }
}
