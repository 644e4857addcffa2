import Foundation

/// A TLS server for the client's verification tests: Python's http.server behind its ssl module (python3
/// is installed by ops/stack), answering every POST 200 `tls ok`, with a certificate for 127.0.0.1 and
/// localhost or one for another name, both issued by ``caPEM``. Killed on deinit.
final class TLSTestServer: @unchecked Sendable {
    /// Fixed test certificates (P-256, valid until 2126), made once with `openssl req -x509` and `openssl x509
    /// -req` with subjectAltName `IP:127.0.0.1,DNS:localhost` (good) or `DNS:wrong.example` (wrong).
    static let caPEM = """
        -----BEGIN CERTIFICATE-----
        MIIBpjCCAUygAwIBAgITLfoyyHFfObOuwtGwtk3hEDURvjAKBggqhkjOPQQDAjAg
        MR4wHAYDVQQDDBVhdHRlc3Qtd29ya2VyIHRlc3QgQ0EwIBcNMjYxMjAxMTgxMDQ3
        WhgPMjEyNjExMDcxODEwNDdaMCAxHjAcBgNVBAMMFWF0dGVzdC13b3JrZXIgdGVz
        dCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABFDgQMqBl4zVvZsyx3bMPHVK
        mk5OlYc0HpkFZuFwoNJBqUJp4LzSvq/yo4ze/6/RXQCW/8rYg65fBvusWdskrJuj
        YzBhMB0GA1UdDgQWBBQVUOIFK70Bk82X5Trg2m/ThP68rzAfBgNVHSMEGDAWgBQV
        UOIFK70Bk82X5Trg2m/ThP68rzAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQE
        AwICBDAKBggqhkjOPQQDAgNIADBFAiEAh8UFjUg0fFM3LVc4tj/menJj/5XOOjLH
        ywuH/YDs/hMCIAFaqLNsJaiK7UmMmAeLob52AAIQhm1uHwSZo1gaFY82
        -----END CERTIFICATE-----
        """
    static let goodCertificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIIBsTCCAVegAwIBAgIUUuzz1BeJnGDlAjkyIlM9+PEqAsAwCgYIKoZIzj0EAwIw
        IDEeMBwGA1UEAwwVYXR0ZXN0LXdvcmtlciB0ZXN0IENBMCAXDTI2MTIwMTE4MTA0
        N1oYDzIxMjYxMTA3MTgxMDQ3WjAPMQ0wCwYDVQQDDARnb29kMFkwEwYHKoZIzj0C
        AQYIKoZIzj0DAQcDQgAEOidUJL2ODCmp08d05+VYXUWUG1NamHE0U32JcmkVwQJX
        ZZ3Pw3LP/xnulVMQfWFJTzA/oQjzYGYbayTWalnkvqN+MHwwGgYDVR0RBBMwEYcE
        fwAAAYIJbG9jYWxob3N0MAkGA1UdEwQCMAAwEwYDVR0lBAwwCgYIKwYBBQUHAwEw
        HQYDVR0OBBYEFEiAZMJagSPqBGfEtF0bwkTN7n+fMB8GA1UdIwQYMBaAFBVQ4gUr
        vQGTzZflOuDab9OE/ryvMAoGCCqGSM49BAMCA0gAMEUCIQC3JMG4xvTyNrt93YQ+
        ONPwJDpLT8K5UzjH2kbBUpS6YQIgEJmM/TwbzomQJAWzd60Xodwzd+jfS+B3/TDW
        wjZep/o=
        -----END CERTIFICATE-----
        """
    static let wrongNameCertificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIIBsDCCAVagAwIBAgIUUuzz1BeJnGDlAjkyIlM9+PEqAsEwCgYIKoZIzj0EAwIw
        IDEeMBwGA1UEAwwVYXR0ZXN0LXdvcmtlciB0ZXN0IENBMCAXDTI2MTIwMTE4MTA0
        N1oYDzIxMjYxMTA3MTgxMDQ3WjAQMQ4wDAYDVQQDDAV3cm9uZzBZMBMGByqGSM49
        AgEGCCqGSM49AwEHA0IABDonVCS9jgwpqdPHdOflWF1FlBtTWphxNFN9iXJpFcEC
        V2Wdz8Nyz/8Z7pVTEH1hSU8wP6EI82BmG2sk1mpZ5L6jfDB6MBgGA1UdEQQRMA+C
        DXdyb25nLmV4YW1wbGUwCQYDVR0TBAIwADATBgNVHSUEDDAKBggrBgEFBQcDATAd
        BgNVHQ4EFgQUSIBkwlqBI+oEZ8S0XRvCRM3uf58wHwYDVR0jBBgwFoAUFVDiBSu9
        AZPNl+U64Npv04T+vK8wCgYIKoZIzj0EAwIDSAAwRQIgFU5t94ix27UR3LBRwcR0
        3bJOcY72D7M3VIYc8spi/lQCIQCZ5ICdYgMUUM+LMOZSERZe1hsygQi7jtAl5Hdv
        LnWmGQ==
        -----END CERTIFICATE-----
        """
    static let keyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoKqGDFMRhx2dUC8V
        JLkVJKTslAOC7loYdzd121SWY52hRANCAAQ6J1QkvY4MKanTx3Tn5VhdRZQbU1qY
        cTRTfYlyaRXBAldlnc/Dcs//Ge6VUxB9YUlPMD+hCPNgZhtrJNZqWeS+
        -----END PRIVATE KEY-----
        """
    static let script = """
        import http.server, ssl, sys
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Length", "6")
                self.end_headers()
                self.wfile.write(b"tls ok")
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    let process = Process()
    let folder: URL
    let port: Int
    /// The CA file that verifies the server.
    let caFile: String

    init(wrongName: Bool = false) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func write(_ text: String, _ name: String) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        caFile = try write(Self.caPEM + "\n", "ca.pem")
        let certificate = try write((wrongName ? Self.wrongNameCertificatePEM : Self.goodCertificatePEM) + "\n", "server.pem")
        let key = try write(Self.keyPEM + "\n", "server.key")
        let script = try write(Self.script, "server.py")
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.environment["PYTHON"] ?? "/usr/bin/python3")
        process.arguments = [script, certificate, key]
        process.standardOutput = output
        try process.run()
        var line = [UInt8]()
        while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != 0x0A { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else { throw CocoaError(.fileReadCorruptFile) }
        self.port = port
    }

    /// SIGKILL: a Python started from the test process was seen to ignore SIGTERM (its signal mask is
    /// inherited), and waitUntilExit then waited for ever.
    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }
}
