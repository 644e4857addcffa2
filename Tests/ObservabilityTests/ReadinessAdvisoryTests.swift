import Testing

@testable import Observability

/// Advisories: notes `/readyz` serves after the conditions, never changing its status.
@Suite struct ReadinessAdvisoryTests {
    static func readyz(_ readiness: ReadinessConditions<TestCondition, TestReason, TestAdvisory>) -> (status: Int, body: String)? {
        var routes = HTTPRoutes()
        HealthEndpoints.register(on: &routes, metrics: MetricsRegistry(), readiness: readiness.check, advisories: readiness.advisoryTexts)
        guard case .found(let handler) = routes.resolve(method: "GET", path: HealthEndpoints.readinessPath) else { return nil }
        let response = handler(HTTPRequest(method: "GET", path: HealthEndpoints.readinessPath))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    static func ready() -> ReadinessConditions<TestCondition, TestReason, TestAdvisory> {
        let readiness = ReadinessConditions<TestCondition, TestReason, TestAdvisory>()
        for condition in TestCondition.allCases { readiness.markReady(condition) }
        return readiness
    }

    @Test("an advisory is served after ok, one a line, and the status stays 200")
    func readyStaysReady() throws {
        let readiness = Self.ready()
        readiness.advise(TestAdvisory(key: "b", text: "second"))
        readiness.advise(TestAdvisory(key: "a", text: "first"))
        #expect(readiness.check() == nil)
        let answer = try #require(Self.readyz(readiness))
        #expect(answer.status == 200)
        #expect(answer.body == "ok\nfirst\nsecond\n")
    }

    @Test("an unready process stays 503, its reasons first, the advisories after")
    func unreadyStaysUnready() throws {
        let readiness = Self.ready()
        readiness.markNotReady(.postgres, .because("unreachable"))
        readiness.advise(TestAdvisory(key: "a", text: "note"))
        #expect(readiness.check() == "postgres: unreachable")
        let answer = try #require(Self.readyz(readiness))
        #expect(answer.status == 503)
        #expect(answer.body == "postgres: unreachable\nnote\n")
    }

    @Test("one note per key: a later one replaces it, a withdrawal removes only what it selects")
    func replaceAndWithdraw() throws {
        let readiness = Self.ready()
        readiness.advise(TestAdvisory(key: "a", text: "old"))
        readiness.advise(TestAdvisory(key: "a", text: "new"))
        readiness.advise(TestAdvisory(key: "b", text: "other"))
        #expect(readiness.advisoryTexts() == ["new", "other"])
        readiness.withdraw { $0.key == "a" }
        #expect(readiness.advisoryTexts() == ["other"])
        readiness.withdraw { _ in true }
        #expect(readiness.advisories.isEmpty)
        #expect(try #require(Self.readyz(readiness)).body == "ok\n")
    }

    @Test("the notes are bounded: a new key beyond the limit is dropped, a known key still updates")
    func bounded() {
        let readiness = ReadinessConditions<TestCondition, TestReason, TestAdvisory>(advisoryLimit: 2)
        readiness.advise(TestAdvisory(key: "a", text: "a1"))
        readiness.advise(TestAdvisory(key: "b", text: "b1"))
        readiness.advise(TestAdvisory(key: "c", text: "c1"))
        readiness.advise(TestAdvisory(key: "b", text: "b2"))
        #expect(readiness.advisoryTexts() == ["a1", "b2"])
        readiness.withdraw { $0.key == "a" }
        readiness.advise(TestAdvisory(key: "c", text: "c2"))
        #expect(readiness.advisoryTexts() == ["b2", "c2"])
    }
}
