import Testing

@testable import Observability

/// Prefix routes: the longest matching prefix answers, exact routes first, methods as for exact routes.
@Suite struct HTTPPrefixRouteTests {
    static func answer(_ routes: HTTPRoutes, _ method: String, _ path: String) -> String? {
        guard case .found(let handler) = routes.resolve(method: method, path: path) else { return nil }
        return String(decoding: handler(HTTPRequest(method: method, path: path)).body, as: UTF8.self)
    }

    @Test func longestPrefixThenExact() {
        var routes = HTTPRoutes()
        routes.add("GET", prefix: "/v1/") { _ in .text(200, "short") }
        routes.add("GET", prefix: "/v1/apps/") { _ in .text(200, "long") }
        routes.add("GET", "/v1/apps/exact") { _ in .text(200, "exact") }
        #expect(Self.answer(routes, "GET", "/v1/apps/A.b/usage") == "long")
        #expect(Self.answer(routes, "HEAD", "/v1/apps/A.b/usage") == "long")
        #expect(Self.answer(routes, "GET", "/v1/other") == "short")
        #expect(Self.answer(routes, "GET", "/v1/apps/exact") == "exact")
        #expect(Self.answer(routes, "GET", "/v2/apps/") == nil)
        guard case .methodNotAllowed(let allow) = routes.resolve(method: "POST", path: "/v1/apps/x") else {
            Issue.record("POST to a GET prefix route was not refused")
            return
        }
        #expect(allow == "GET, HEAD")
    }
}
