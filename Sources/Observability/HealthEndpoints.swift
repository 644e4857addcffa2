/// The operational routes of CONTRACT 6: liveness, readiness and the Prometheus scrape.
///
/// - `GET /healthz`: 200 `ok` whenever the process can answer at all (liveness: restart only if this fails).
/// - `GET /readyz`: 200 `ok` when `readiness` returns nil, else 503 with the reason it returned (take it
///   out of rotation, do not restart). Either way the advisories follow, one a line: notes for an
///   operator that never change the status.
/// - `GET /metrics`: the registry's text, `text/plain; version=0.0.4`.
///
/// All three also answer `HEAD`; other methods get 405.
public enum HealthEndpoints {
    public static let healthPath = "/healthz"
    public static let readinessPath = "/readyz"
    public static let metricsPath = "/metrics"

    /// Adds the three routes.
    /// - Parameter readiness: nil when ready, else a short reason; called for every probe on a connection
    ///   thread, so it should read state kept up to date elsewhere (``ReadinessConditions/check()``) rather
    ///   than reach the broker or the database itself. The reason is served to anyone who can reach the
    ///   port: no connection strings or secrets in it.
    /// - Parameter advisories: the notes served after it (``ReadinessConditions/advisoryTexts()``), the
    ///   same care taken.
    public static func register(
        on routes: inout HTTPRoutes,
        metrics: MetricsRegistry,
        readiness: @escaping @Sendable () -> String?,
        advisories: @escaping @Sendable () -> [String] = { [] }
    ) {
        routes.add("GET", healthPath) { _ in .text(200, "ok\n") }
        routes.add("GET", readinessPath) { _ in
            let notes = advisories().map { $0 + "\n" }.joined()
            if let reason = readiness() { return .text(503, reason + "\n" + notes) }
            return .text(200, "ok\n" + notes)
        }
        routes.add("GET", metricsPath) { _ in
            HTTPResponse(status: 200, contentType: MetricsRegistry.contentType, body: Array(metrics.render().utf8))
        }
    }
}
