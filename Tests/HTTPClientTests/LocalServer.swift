import Foundation
import Observability
import Synchronization

/// A libmicrohttpd server on a free loopback port with the routes a test adds; stopped on deinit.
final class LocalServer: Sendable {
    let server: HTTPServer
    let port: Int

    init(maxBody: Int = 64 * 1024, _ add: (inout HTTPRoutes) -> Void) throws {
        var routes = HTTPRoutes()
        add(&routes)
        server = HTTPServer(
            configuration: .init(address: try HTTPAddress(parsing: "127.0.0.1:0"), maxRequestBodyBytes: maxBody), routes: routes)
        try server.start()
        port = server.port ?? 0
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    deinit { server.stop() }
}

/// Counts calls across libmicrohttpd's threads.
final class CallCounter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
