import Foundation
import HTTPClient
import Observability
import Testing

@Suite("HTTP client over libcurl, against a local server")
struct HTTPClientTests {
    @Test("POST sends the body and the headers and returns status, headers and body")
    func postRoundTrip() throws {
        let server = try LocalServer { routes in
            routes.add("POST", "/echo") { request in
                HTTPResponse(
                    status: 200, contentType: "application/octet-stream", body: request.body,
                    headers: [("X-Seen-Authorization", request.header("Authorization") ?? "-"),
                        ("X-Seen-Expect", request.header("Expect") ?? "none")])
            }
        }
        let body = Array((0..<5000).map { UInt8($0 % 251) })
        let response = try HTTPClient().post(HTTPClientRequest(
            url: server.url("/echo"), headers: [("Authorization", "token-1")], body: body)).get()
        #expect(response.status == 200)
        #expect(response.body == body)
        #expect(response.header("x-seen-authorization") == "token-1")
        // No 100-continue round trip before a body of several kilobytes.
        #expect(response.header("X-Seen-Expect") == "none")
    }

    @Test("GET sends no body and gets the resource; a handle used for a POST serves a GET after it")
    func getRoundTrip() throws {
        let server = try LocalServer { routes in
            routes.add("GET", "/list") { request in
                HTTPResponse(
                    status: 200, contentType: "application/json", body: Array(#"{"entries":{}}"#.utf8),
                    headers: [("X-Seen-Body-Bytes", String(request.body.count)), ("X-Seen-Accept", request.header("Accept") ?? "-")])
            }
            routes.add("POST", "/echo") { request in HTTPResponse(status: 200, contentType: "application/octet-stream", body: request.body) }
        }
        let client = HTTPClient(configuration: .init(idleHandles: 1))
        #expect(try client.post(HTTPClientRequest(url: server.url("/echo"), body: [1, 2, 3])).get().body == [1, 2, 3])
        let response = try client.get(HTTPClientRequest(url: server.url("/list"), headers: [("Accept", "application/json")], body: [9])).get()
        #expect(response.status == 200)
        #expect(response.body == Array(#"{"entries":{}}"#.utf8))
        #expect(response.header("X-Seen-Body-Bytes") == "0")
        #expect(response.header("X-Seen-Accept") == "application/json")
        // A GET of a POST-only route is the server's 405 or 404, not a POST.
        #expect(try client.get(HTTPClientRequest(url: server.url("/echo"))).get().status != 200)
    }

    @Test("Every status comes back as it was answered, with its headers (Retry-After)")
    func statusPassthrough() throws {
        let server = try LocalServer { routes in
            for status in [204, 304, 400, 404, 429, 500, 503] {
                routes.add("POST", "/\(status)") { _ in
                    HTTPResponse(status: status, contentType: "text/plain", body: [], headers: [("Retry-After", "7")])
                }
            }
        }
        let client = HTTPClient()
        for status in [204, 304, 400, 404, 429, 500, 503] {
            let response = try client.post(HTTPClientRequest(url: server.url("/\(status)"))).get()
            #expect(response.status == status)
            #expect(response.header("Retry-After") == "7")
        }
    }

    @Test("A body over the limit aborts the transfer with responseTooLarge; one at the limit is returned")
    func bodyBound() throws {
        let server = try LocalServer { routes in
            routes.add("POST", "/big") { _ in HTTPResponse(status: 200, contentType: "text/plain", body: Array(repeating: 0x41, count: 1001)) }
            routes.add("POST", "/exact") { _ in HTTPResponse(status: 200, contentType: "text/plain", body: Array(repeating: 0x41, count: 1000)) }
        }
        let client = HTTPClient(configuration: .init(maxResponseBodyBytes: 1000))
        #expect(client.post(HTTPClientRequest(url: server.url("/big"))).failure == .responseTooLarge(limit: 1000))
        #expect(try client.post(HTTPClientRequest(url: server.url("/exact"))).get().body.count == 1000)
    }

    @Test("Response headers over the limit abort the transfer")
    func headerBound() throws {
        let server = try LocalServer { routes in
            routes.add("POST", "/h") { _ in
                HTTPResponse(status: 200, contentType: "text/plain", body: [], headers: [("X-Pad", String(repeating: "p", count: 3000))])
            }
        }
        let client = HTTPClient(configuration: .init(maxResponseHeaderBytes: 2048))
        #expect(client.post(HTTPClientRequest(url: server.url("/h"))).failure == .headersTooLarge(limit: 2048))
    }

    @Test("Redirects are returned, never followed")
    func noRedirects() throws {
        let followed = CallCounter()
        let server = try LocalServer { routes in
            routes.add("POST", "/moved") { _ in
                HTTPResponse(status: 307, contentType: "text/plain", body: [], headers: [("Location", "/target")])
            }
            routes.add("POST", "/target") { _ in
                followed.increment()
                return HTTPResponse.text(200, "followed")
            }
        }
        let response = try HTTPClient().post(HTTPClientRequest(url: server.url("/moved"))).get()
        #expect(response.status == 307)
        #expect(followed.value == 0)
    }

    @Test("The whole-request timeout ends a slow answer with timedOut, in about that time")
    func requestTimeout() throws {
        let server = try LocalServer { routes in
            routes.add("POST", "/slow") { _ in
                Thread.sleep(forTimeInterval: 2)
                return HTTPResponse.text(200, "late")
            }
        }
        let client = HTTPClient(configuration: .init(requestTimeout: .milliseconds(300)))
        let start = ContinuousClock.now
        #expect(client.post(HTTPClientRequest(url: server.url("/slow"))).failure == .timedOut)
        #expect(ContinuousClock.now - start < .milliseconds(1500))
    }

    @Test("A refused connection is a transport error whose text carries neither header nor body")
    func refusedConnection() throws {
        // A port that was just free: bind, read it, close.
        let port = try LocalServer { _ in }.port
        let error = try #require(HTTPClient().post(HTTPClientRequest(
            url: "http://127.0.0.1:\(port)/x", headers: [("Authorization", "secret-token")], body: Array("secret-body".utf8))).failure)
        guard case .transport = error else { Issue.record("expected a transport error, got \(error)"); return }
        #expect(!error.description.contains("secret"))
    }

    @Test("Requests libcurl must not see are refused before it does: other schemes, CR/LF in URL or headers")
    func invalidRequests() {
        let client = HTTPClient()
        for request in [
            HTTPClientRequest(url: "ftp://127.0.0.1/x"),
            HTTPClientRequest(url: "file:///etc/passwd"),
            HTTPClientRequest(url: "http://127.0.0.1/x\r\nX-Injected: 1"),
            HTTPClientRequest(url: "http://127.0.0.1/x", headers: [("Authorization", "a\r\nX-Injected: 1")]),
            HTTPClientRequest(url: "http://127.0.0.1/x", headers: [("Bad:Name", "v")]),
            HTTPClientRequest(url: "http://127.0.0.1/x", headers: [("", "v")]),
        ] {
            guard case .invalidRequest? = client.post(request).failure else {
                Issue.record("not refused: \(request.url)")
                continue
            }
        }
    }

    @Test("Concurrent calls each get a handle of their own and their own answer")
    func concurrentCalls() throws {
        let server = try LocalServer { routes in
            routes.add("POST", "/echo") { request in HTTPResponse(status: 200, contentType: "text/plain", body: request.body) }
        }
        let client = HTTPClient(configuration: .init(idleHandles: 2))
        let failures = CallCounter()
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            let body = Array("call \(index)".utf8)
            if (try? client.post(HTTPClientRequest(url: server.url("/echo"), body: body)).get().body) != body { failures.increment() }
        }
        #expect(failures.value == 0)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

@Suite("HTTP client TLS: peer and host verification always on")
struct HTTPClientTLSTests {
    @Test("A server whose CA is not trusted is refused; trusted through caFile it answers")
    func peerVerification() throws {
        let server = try TLSTestServer()
        let request = HTTPClientRequest(url: "https://127.0.0.1:\(server.port)/x", body: Array("hello".utf8))
        guard case .transport? = HTTPClient().post(request).failure else {
            Issue.record("an unknown CA was accepted")
            return
        }
        let response = try HTTPClient(configuration: .init(caFile: server.caFile)).post(request).get()
        #expect(response.status == 200)
        #expect(response.body == Array("tls ok".utf8))
        let byName = try HTTPClient(configuration: .init(caFile: server.caFile)).post(
            HTTPClientRequest(url: "https://localhost:\(server.port)/x")).get()
        #expect(byName.status == 200)
    }

    @Test("A certificate of a trusted CA for another name is refused")
    func hostVerification() throws {
        let server = try TLSTestServer(wrongName: true)
        let result = HTTPClient(configuration: .init(caFile: server.caFile)).post(HTTPClientRequest(url: "https://127.0.0.1:\(server.port)/x"))
        guard case .transport? = result.failure else {
            Issue.record("a certificate for another host was accepted: \(result)")
            return
        }
    }
}
