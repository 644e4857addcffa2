internal import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns one running `MHD_Daemon`: started in `init`, stopped by `MHD_stop_daemon` in `deinit` and nowhere
/// else.
///
/// `@unchecked Sendable` because the only state is the daemon pointer, which is never used after `init`
/// except by `deinit`; libmicrohttpd's own threads use it internally. `deinit` joins those threads, so the
/// last reference must not be dropped on one of them (from inside a route handler).
final class MHDDaemon: @unchecked Sendable {
    private let daemon: OpaquePointer
    /// Reached by the C callbacks as an unretained pointer: kept alive here until after `MHD_stop_daemon`
    /// (stored properties are released only after `deinit` has run).
    private let context: DaemonContext
    /// The address actually bound (the kernel's port when 0 was asked for).
    let boundAddress: HTTPAddress

    struct Limits {
        var maxRequestBodyBytes: Int
        var connectionLimit: Int
        var connectionTimeoutSeconds: Int
        var perIPConnectionLimit: Int
        var requestDeadlineSeconds: Int
        var maxHeaderBytes: Int
    }

    init(
        address: HTTPAddress,
        routes: HTTPRoutes,
        limits: Limits,
        deadlineCuts: CounterSeries,
        diagnostics: (@Sendable (String) -> Void)?
    ) throws(HTTPServerError) {
        let context = DaemonContext(
            routes: routes,
            maxRequestBodyBytes: limits.maxRequestBodyBytes,
            deadlines: ConnectionDeadlines(
                deadline: .seconds(limits.requestDeadlineSeconds), perNetworkLimit: limits.perIPConnectionLimit, cuts: deadlineCuts),
            diagnostics: diagnostics
        )
        context.deadlines.start()
        // Connection threads (`MHD_USE_THREAD_PER_CONNECTION`) so that one slow handler or client holds only
        // its own connection; `MHD_USE_AUTO` picks poll() there, since select() fails on descriptors past
        // FD_SETSIZE and this process holds many sockets (Kafka, PostgreSQL). The connection limit bounds the
        // threads; the timeout closes idle keep-alive and slow clients.
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue
            | MHD_USE_AUTO.rawValue | MHD_USE_ERROR_LOG.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }

        // Callbacks capture nothing: the context arrives through the `cls` pointers.
        let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, data, dataSize, requestContext in
            guard let cls, let connection, let url, let method, let dataSize, let requestContext else { return .NO }
            return Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().access(
                connection: connection,
                url: url,
                method: method,
                data: data,
                dataSize: dataSize,
                requestContext: requestContext
            )
        }
        let completed: MHD_RequestCompletedCallback = { cls, connection, requestContext, _ in
            if let cls, let connection {
                Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().deadlines.requestCompleted(connection)
            }
            // Balances the passRetained of the first access call; runs for finished and aborted requests.
            guard let requestContext, let state = requestContext.pointee else { return }
            Unmanaged<RequestState>.fromOpaque(state).release()
            requestContext.pointee = nil
        }
        let notifyConnection: MHD_NotifyConnectionCallback = { cls, connection, _, event in
            guard let cls, let connection else { return }
            let deadlines = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().deadlines
            if event.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED (imported without a usable name)
                deadlines.opened(connection, socket: CMicroHTTPD_connectionSocket(connection), address: DaemonContext.clientAddress(of: connection))
            } else {
                deadlines.closed(connection)
            }
        }
        let logger: MHD_LogCallback = { cls, format, arguments in
            guard let cls, let format, let arguments else { return }
            var buffer = [CChar](repeating: 0, count: 512)
            _ = vsnprintf(&buffer, buffer.count, format, arguments)
            let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().diagnose(message)
        }

        let cls = Unmanaged.passUnretained(context).toOpaque()
        let started: OpaquePointer? = address.withSocketAddress { socketAddress in
            // Every value's C type is spelled out: va_arg reads `enum MHD_OPTION`/`unsigned int` as 32 bits,
            // pointers and function pointers as 64. The socket address is copied by the bind inside the call.
            // The logger goes first, or libmicrohttpd prints what it meets before it on stderr itself.
            let arguments: [any CVarArg] = [
                MHD_OPTION.EXTERNAL_LOGGER.rawValue,
                unsafeBitCast(logger, to: OpaquePointer.self), OpaquePointer(cls),
                MHD_OPTION.SOCK_ADDR.rawValue, OpaquePointer(socketAddress),
                MHD_OPTION.CONNECTION_LIMIT.rawValue, CUnsignedInt(limits.connectionLimit),
                MHD_OPTION.CONNECTION_TIMEOUT.rawValue, CUnsignedInt(limits.connectionTimeoutSeconds),
                MHD_OPTION.PER_IP_CONNECTION_LIMIT.rawValue, CUnsignedInt(limits.perIPConnectionLimit),
                MHD_OPTION.CONNECTION_MEMORY_LIMIT.rawValue, Int(limits.maxHeaderBytes),
                MHD_OPTION.NOTIFY_CONNECTION.rawValue,
                unsafeBitCast(notifyConnection, to: OpaquePointer.self), OpaquePointer(cls),
                MHD_OPTION.NOTIFY_COMPLETED.rawValue,
                unsafeBitCast(completed, to: OpaquePointer.self), OpaquePointer(cls),
                MHD_OPTION.END.rawValue,
            ]
            return withVaList(arguments) { list in
                // The port argument is ignored when MHD_OPTION_SOCK_ADDR is given.
                MHD_start_daemon_va(flags, 0, nil, nil, access, cls, list)
            }
        }
        guard let started else {
            context.deadlines.stop()
            let detail = context.takeStartDiagnostic() ?? "libmicrohttpd could not start"
            throw HTTPServerError(code: .startFailed, message: "HTTP server on \(address): \(detail)")
        }
        let port = Int(CMicroHTTPD_boundPort(started))
        guard port != 0 else {
            context.deadlines.stop()
            MHD_stop_daemon(started)
            throw HTTPServerError(code: .startFailed, message: "HTTP server on \(address): no bound port reported")
        }
        self.daemon = started
        self.context = context
        self.boundAddress = address.withPort(port)
    }

    deinit {
        // The sweep first, so that it never meets a socket libmicrohttpd is closing. Then MHD_stop_daemon
        // closes the listening socket and every connection and joins all of libmicrohttpd's threads: no
        // callback runs after this returns, so the context can go.
        context.deadlines.stop()
        MHD_stop_daemon(daemon)
    }
}

/// What the C callbacks reach through their `cls` pointer: the routes, the limits, the request deadlines
/// and the diagnostics sink.
final class DaemonContext: Sendable {
    private let routes: HTTPRoutes
    private let maxRequestBodyBytes: Int
    let deadlines: ConnectionDeadlines
    private let diagnostics: (@Sendable (String) -> Void)?
    /// libmicrohttpd explains a failed start only through its logger: the last message is kept for the error.
    private let lastDiagnostic = Mutex<String?>(nil)

    init(
        routes: HTTPRoutes, maxRequestBodyBytes: Int, deadlines: ConnectionDeadlines,
        diagnostics: (@Sendable (String) -> Void)?
    ) {
        self.routes = routes
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.deadlines = deadlines
        self.diagnostics = diagnostics
    }

    func diagnose(_ message: String) {
        let trimmed = String(message.reversed().drop { $0 == "\n" || $0 == "\r" }.reversed())
        lastDiagnostic.withLock { $0 = trimmed }
        diagnostics?(trimmed)
    }

    func takeStartDiagnostic() -> String? {
        lastDiagnostic.withLock { last in
            defer { last = nil }
            return last
        }
    }

    /// libmicrohttpd calls this once when the headers are in (`requestContext` still nil), then once per
    /// chunk of body (`dataSize` > 0, which must be set to the amount consumed), then once more with
    /// `dataSize` 0 when the request is complete: the moment to answer.
    func access(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>,
        method: UnsafePointer<CChar>,
        data: UnsafePointer<CChar>?,
        dataSize: UnsafeMutablePointer<Int>,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        if let existing = requestContext.pointee {
            let request = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
            if dataSize.pointee > 0 {
                request.append(UnsafeRawBufferPointer(start: data, count: dataSize.pointee), limit: maxRequestBodyBytes)
                dataSize.pointee = 0
                return .YES
            }
            if request.tooLarge { return queue(Self.tooLarge(maxRequestBodyBytes), on: connection) }
            let response = request.handler(
                HTTPRequest(
                    method: request.method, path: request.path, body: request.body, headers: request.headers,
                    clientAddress: request.clientAddress))
            return queue(response, on: connection)
        }

        // Headers only. Answering now (404, 405, a declared body over the limit) means the body is never read;
        // libmicrohttpd then closes the connection after the response.
        let methodName = String(cString: method)
        let path = String(cString: url)
        switch routes.resolve(method: methodName, path: path) {
        case .notFound:
            return queue(.text(404, "not found\n"), on: connection)
        case .methodNotAllowed(let allow):
            var response = HTTPResponse.text(405, "method not allowed\n")
            response.headers.append((name: "Allow", value: allow))
            return queue(response, on: connection)
        case .found(let handler):
            if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
                let length = UInt64(String(cString: declared)), length > UInt64(maxRequestBodyBytes)
            {
                return queue(Self.tooLarge(maxRequestBodyBytes), on: connection)
            }
            // Released by the completion callback, which libmicrohttpd calls however the request ends.
            let state = RequestState(
                method: methodName, path: path, handler: handler, headers: Self.headers(of: connection),
                clientAddress: Self.clientAddress(of: connection))
            requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
            return .YES
        }
    }

    /// The request's header lines; their total is bounded by the connection's memory limit.
    private static func headers(of connection: OpaquePointer) -> [(name: String, value: String)] {
        final class Collected { var headers: [(name: String, value: String)] = [] }
        let collected = Collected()
        let iterator: MHD_KeyValueIterator = { cls, _, key, value in
            guard let cls, let key else { return .YES }
            Unmanaged<Collected>.fromOpaque(cls).takeUnretainedValue().headers.append(
                (name: String(cString: key), value: value.map { String(cString: $0) } ?? ""))
            return .YES
        }
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values(connection, .HEADER_KIND, iterator, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected.headers
    }

    fileprivate static func clientAddress(of connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard CMicroHTTPD_clientAddress(connection, &buffer, socklen_t(buffer.count)) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func tooLarge(_ limit: Int) -> HTTPResponse {
        .text(413, "request body larger than \(limit) bytes\n")
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let created = response.body.withUnsafeBytes { bytes in
            // MUST_COPY: libmicrohttpd keeps its own copy, the Swift array may go right after.
            MHD_create_response_from_buffer(
                bytes.count,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                .RESPMEM_MUST_COPY
            )
        }
        guard let created else { return .NO }
        // Queuing takes a reference of its own: ours is dropped whether or not the queueing worked.
        defer { MHD_destroy_response(created) }
        _ = MHD_add_response_header(created, "Content-Type", response.contentType)
        for header in response.headers {
            _ = MHD_add_response_header(created, header.name, header.value)
        }
        return MHD_queue_response(connection, CUnsignedInt(response.status), created)
    }
}

/// One request between its headers and its answer. Only the connection's thread touches it, one call at a
/// time, so it needs no lock; it travels through libmicrohttpd's per-request pointer.
final class RequestState {
    let method: String
    let path: String
    let handler: HTTPHandler
    let headers: [(name: String, value: String)]
    let clientAddress: String
    private(set) var body: [UInt8] = []
    /// The body passed the limit: the rest is read and dropped, and the answer is 413.
    private(set) var tooLarge = false

    init(
        method: String, path: String, handler: @escaping HTTPHandler, headers: [(name: String, value: String)],
        clientAddress: String
    ) {
        self.method = method
        self.path = path
        self.handler = handler
        self.headers = headers
        self.clientAddress = clientAddress
    }

    func append(_ chunk: UnsafeRawBufferPointer, limit: Int) {
        guard !tooLarge else { return }
        if body.count + chunk.count > limit {
            tooLarge = true
            body = []
        } else {
            body.append(contentsOf: chunk)
        }
    }
}
