import Foundation
import Glibc

/// An OS thread for a blocking C loop, so the loop never occupies one of the few threads of Swift's
/// cooperative pool (two on a two-core machine). Unlike Foundation's `Thread` it can be joined, which is
/// how a stop knows the loop has finished (and a client's `close()` that the handle it uses can be destroyed).
public final class JoinableThread: Sendable {
    private let thread: pthread_t

    /// Starts `body` at once on a new thread, named `name` for debuggers and `top -H`.
    public init(name: String? = nil, body: @escaping @Sendable () -> Void) {
        var thread = pthread_t()
        let named: @Sendable () -> Void
        if let name {
            named = {
                Thread.current.name = name
                body()
            }
        } else {
            named = body
        }
        let start = Unmanaged.passRetained(Body(named)).toOpaque()
        let status = pthread_create(&thread, nil, { argument in
            Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, start)
        // Only resource exhaustion makes this fail, and then the client cannot be served at all.
        precondition(status == 0, "pthread_create failed with \(status)")
        self.thread = thread
    }

    /// Whether the caller runs on this thread (where joining it would deadlock).
    public var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the body to return. Call once, from another thread.
    public func join() {
        pthread_join(thread, nil)
    }

    /// Lets the thread release its resources by itself when the body returns: the alternative to `join`
    /// for a thread that ends itself.
    public func detach() {
        pthread_detach(thread)
    }

    /// The body, passed through pthread_create's context pointer (retained until the thread takes it).
    private final class Body: Sendable {
        let run: @Sendable () -> Void

        init(_ run: @escaping @Sendable () -> Void) {
            self.run = run
        }
    }
}
