import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The default ``NetworkFetching``: HTTP/1.0 over a TCP socket of its own, asynchronous throughout. Name
/// resolution (`getaddrinfo`, which cannot be interrupted) runs on a Dispatch thread and is abandoned, not waited
/// for, when the deadline passes; the connection is non-blocking and every wait is a Dispatch event source, so no
/// thread blocks on the network and cancellation or the deadline ends a fetch at once. One connection per
/// request, `Connection: close`; redirects are not followed (a 3xx is a ``FetchError/Kind/status``).
public struct SocketFetcher: NetworkFetching {
    /// Resolves a host and port to socket addresses (blocking; run off the caller's thread). Replaceable so that
    /// a resolver that hangs can be tested.
    public typealias Resolver = @Sendable (_ host: String, _ port: UInt16) -> Result<[SocketAddress], FetchError>

    public static let shared = SocketFetcher()

    private let resolver: Resolver

    public init(resolver: @escaping Resolver = SocketFetcher.systemResolver) {
        self.resolver = resolver
    }

    public func fetch(_ request: FetchRequest) async throws(FetchError) -> [UInt8] {
        // Every step resumes on the network executor: a cooperative pool kept busy by blocking work elsewhere in
        // the process cannot hold a fetch past its deadline (seen under the full test suite before this).
        try await withTaskExecutorPreference(NetworkExecutor.shared) { () async throws(FetchError) -> [UInt8] in
            try await exchange(request)
        }
    }

    private func exchange(_ request: FetchRequest) async throws(FetchError) -> [UInt8] {
        let deadline = ContinuousClock.now + request.timeout
        let target = try HTTPTarget(request.url)
        try checkCancellation()
        let connection = try await Connection.connect(host: target.host, port: target.port, deadline: deadline, resolver: resolver)
        defer { connection.close() }
        try await connection.send(target.requestHead(for: request) + (request.body ?? []), deadline: deadline)
        return try await HTTPResponse.read(from: connection, maximumLength: request.maximumLength, deadline: deadline)
    }

    private func checkCancellation() throws(FetchError) {
        if Task.isCancelled { throw FetchError(.cancelled) }
    }

    /// `getaddrinfo(3)` for TCP, both address families.
    public static let systemResolver: Resolver = { host, port in
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else { return .failure(FetchError(.unresolved)) }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                addresses.append(SocketAddress(address, length: entry.pointee.ai_addrlen))
            }
            cursor = entry.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(FetchError(.unresolved)) : .success(addresses)
    }
}

/// A socket address (IPv4 or IPv6), copied out of `getaddrinfo`'s list.
public struct SocketAddress: Sendable, Hashable {
    /// The `sockaddr` bytes, as `getaddrinfo` gave them.
    package let bytes: [UInt8]

    init(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(length)))
    }

    /// An IPv4 or IPv6 literal and a port (tests, and resolvers that know the answer).
    public init?(numeric host: String, port: UInt16) {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let list, let address = list.pointee.ai_addr else { return nil }
        defer { freeaddrinfo(list) }
        self.init(address, length: list.pointee.ai_addrlen)
    }

    package var family: Int32 { bytes.withUnsafeBytes { Int32($0.load(fromByteOffset: 0, as: sa_family_t.self)) } }
}

// MARK: - The request

/// The parts of an `http://` URL a request needs.
struct HTTPTarget: Sendable {
    let host: String
    let port: UInt16
    /// The request target: path and query, `/` at least.
    let path: String
    /// The `Host` header value.
    let hostHeader: String

    init(_ url: String) throws(FetchError) {
        guard url.utf8.count > 7, url.prefix(7).lowercased() == "http://" else { throw FetchError(.badURL) }
        let rest = url.dropFirst(7)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if let fragment = target.firstIndex(of: "#") { target = String(target[..<fragment]) }
        if !target.hasPrefix("/") { target = "/" + target }
        guard !authority.isEmpty, !authority.contains("@"),
            !target.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
        else { throw FetchError(.badURL) }
        var host = Substring(authority)
        var port: UInt16 = 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw FetchError(.badURL) }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = UInt16(after.dropFirst()), number > 0 else { throw FetchError(.badURL) }
                port = number
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = UInt16(host[host.index(after: colon)...]), number > 0 else { throw FetchError(.badURL) }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { throw FetchError(.badURL) }
        self.host = String(host)
        self.port = port
        path = target
        let bracketed = host.contains(":") ? "[\(host)]" : String(host)
        hostHeader = port == 80 ? bracketed : "\(bracketed):\(port)"
    }

    func requestHead(for request: FetchRequest) -> [UInt8] {
        var head = "\(request.body == nil ? "GET" : "POST") \(path) HTTP/1.0\r\nHost: \(hostHeader)\r\n"
        head += "Accept: */*\r\nConnection: close\r\n"
        if let body = request.body {
            head += "Content-Type: \(request.contentType ?? "application/octet-stream")\r\nContent-Length: \(body.count)\r\n"
        }
        return Array((head + "\r\n").utf8)
    }
}

// MARK: - The answer

enum HTTPResponse {
    /// The most header bytes read before the answer counts as malformed.
    static let maximumHeaderLength = 64 * 1024

    static func read(from connection: Connection, maximumLength: Int, deadline: ContinuousClock.Instant) async throws(FetchError) -> [UInt8] {
        var buffer: [UInt8] = []
        var headerEnd: Int?
        var expected: Int?
        var chunked = false
        var status = 0
        while true {
            let closed = try await connection.receive(into: &buffer, deadline: deadline)
            if headerEnd == nil, let end = find([13, 10, 13, 10], in: buffer[...]) {
                headerEnd = end + 4
                (status, expected, chunked) = try parseHead(buffer[..<end])
                guard (200..<300).contains(status) else { throw FetchError(.status, Int32(status)) }
                if let expected, expected > maximumLength { throw FetchError(.tooLarge) }
            }
            guard let start = headerEnd else {
                if closed || buffer.count > maximumHeaderLength { throw FetchError(closed && buffer.isEmpty ? .unreachable : .malformed) }
                continue
            }
            let bodyCount = buffer.count - start
            if !chunked, bodyCount > maximumLength { throw FetchError(.tooLarge) }
            if chunked, bodyCount > maximumLength + maximumHeaderLength { throw FetchError(.tooLarge) }
            if let expected, bodyCount >= expected { return Array(buffer[start..<(start + expected)]) }
            if chunked, let body = try dechunk(buffer[start...], maximumLength: maximumLength) { return body }
            if closed {
                // An answer without a length ends with the connection; one with a length or chunks must be whole.
                guard expected == nil, !chunked else { throw FetchError(.unreachable, ECONNRESET) }
                return Array(buffer[start...])
            }
        }
    }

    /// The status, the Content-Length and whether the body is chunked, from the status line and headers.
    static func parseHead(_ head: ArraySlice<UInt8>) throws(FetchError) -> (Int, Int?, Bool) {
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first?.split(separator: " ", maxSplits: 2) ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), statusLine[1].count == 3,
            let status = Int(statusLine[1])
        else { throw FetchError(.malformed) }
        var length: Int?
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            if name == "content-length" {
                guard let number = Int(value), number >= 0, length == nil || length == number else {
                    throw FetchError(.malformed)
                }
                length = number
            } else if name == "transfer-encoding" {
                chunked = value.lowercased().hasSuffix("chunked")
            }
        }
        return (status, chunked ? nil : length, chunked)
    }

    /// The body of a complete chunked encoding, `nil` while it is incomplete.
    static func dechunk(_ bytes: ArraySlice<UInt8>, maximumLength: Int) throws(FetchError) -> [UInt8]? {
        var body: [UInt8] = []
        var cursor = bytes.startIndex
        while true {
            guard let lineEnd = find([13, 10], in: bytes[cursor...]) else { return nil }
            let sizeText = String(decoding: bytes[cursor..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingSpaces, radix: 16), size >= 0 else { throw FetchError(.malformed) }
            cursor = lineEnd + 2
            if size == 0 { return body }
            guard size <= maximumLength - body.count else { throw FetchError(.tooLarge) }
            guard bytes.endIndex - cursor >= size + 2 else { return nil }
            body += bytes[cursor..<(cursor + size)]
            cursor += size + 2
        }
    }

    static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index <= haystack.endIndex - needle.count {
            if haystack[index] == needle[0], zip(haystack[index..<(index + needle.count)], needle).allSatisfy({ $0 == $1 }) {
                return index
            }
            index += 1
        }
        return nil
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: Substring {
        let trimmed = drop { $0 == " " || $0 == "\t" }
        var end = trimmed.endIndex
        while end > trimmed.startIndex, [" ", "\t"].contains(trimmed[trimmed.index(before: end)]) {
            end = trimmed.index(before: end)
        }
        return Substring(trimmed[..<end])
    }
}

// MARK: - The connection

/// A non-blocking TCP socket whose waits are its event loop's (``EventLoop``): the HTTP fetches' and the TLS
/// connections'. Closed by ``close()``, which ends a wait under way.
package final class Connection: Sendable {
    package let fd: Int32
    /// The loop this connection's waits are on, and where steps that prefer it run.
    package let loop: EventLoop

    private init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        self.loop = loop
    }

    /// A connected socket handed over (an accepted one): made non-blocking, closed by ``close()``.
    package convenience init(adopting fd: Int32, loop: EventLoop = .next()) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.init(fd: fd, loop: loop)
    }

    /// `host` resolved by `resolver` and connected, each address in turn, all by `deadline`. `getaddrinfo` cannot be
    /// interrupted: it runs on a Dispatch thread and is abandoned, not waited for, when the deadline passes.
    /// - Throws: ``FetchError`` `.unresolved`, `.unreachable` (the last address's errno), `.timeout`, `.cancelled`.
    package static func connect(
        host: String, port: UInt16, deadline: ContinuousClock.Instant, resolver: @escaping SocketFetcher.Resolver
    ) async throws(FetchError) -> Connection {
        try await connect(try await resolve(host: host, port: port, deadline: deadline, resolver: resolver), deadline: deadline)
    }

    /// `host`'s addresses by `resolver`, by `deadline`.
    /// - Throws: ``FetchError`` `.unresolved`, `.timeout`, `.cancelled`.
    package static func resolve(
        host: String, port: UInt16, deadline: ContinuousClock.Instant, resolver: @escaping SocketFetcher.Resolver
    ) async throws(FetchError) -> [SocketAddress] {
        if Task.isCancelled { throw FetchError(.cancelled) }
        return try await Waiting.race(deadline: deadline) { finish in
            // A serial queue of its own, which libdispatch serves from its overcommitting pool: a resolver that hangs
            // holds that thread, never one of the global queues' workers, which Linux's libdispatch keeps to about
            // one per processor.
            DispatchQueue(label: "SecurityServices.network.resolve").async { finish(resolver(host, port)) }
            return {}
        }.get()
    }

    /// A connection to the first of `addresses` that accepts one by `deadline`, waiting on `loop`.
    /// - Throws: ``FetchError`` `.unreachable` (the last address's errno), `.timeout`, `.cancelled`.
    package static func connect(
        _ addresses: [SocketAddress], deadline: ContinuousClock.Instant, loop: EventLoop = .next()
    ) async throws(FetchError) -> Connection {
        var lastError = FetchError(.unreachable)
        for address in addresses {
            do throws(FetchError) {
                return try await open(address, deadline: deadline, loop: loop)
            } catch {
                if error.kind == .timeout || error.kind == .cancelled { throw error }
                lastError = error
            }
        }
        throw lastError
    }

    static func open(_ address: SocketAddress, deadline: ContinuousClock.Instant, loop: EventLoop) async throws(FetchError) -> Connection {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FetchError(.unreachable, errno) }
        let connection = Connection(fd: fd, loop: loop)
        var result: Int32
        repeat {
            result = address.bytes.withUnsafeBytes { Glibc.connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }  // !: not empty
        } while result != 0 && errno == EINTR
        if result != 0 {
            guard errno == EINPROGRESS else {
                let error = errno
                connection.close()
                throw FetchError(.unreachable, error)
            }
            do throws(FetchError) {
                try await connection.wait(writable: true, deadline: deadline)
            } catch {
                connection.close()
                throw error
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
            guard error == 0 else {
                connection.close()
                throw FetchError(.unreachable, error)
            }
        }
        return connection
    }

    func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant) async throws(FetchError) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }  // !: not empty
            if count > 0 {
                sent += count
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try await wait(writable: true, deadline: deadline)
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                throw FetchError(.unreachable, count < 0 ? errno : EPIPE)
            }
        }
    }

    /// Appends what is available (waiting for something first) to `buffer`; `true` when the peer closed.
    func receive(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) async throws(FetchError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer += chunk[..<count]
                return false
            }
            if count == 0 { return true }
            switch errno {
            case EAGAIN, EWOULDBLOCK: try await wait(writable: false, deadline: deadline)
            case EINTR: continue
            default: throw FetchError(.unreachable, errno)
            }
        }
    }

    /// Waits until the socket is readable or writable, the deadline passes, or the task is cancelled.
    /// - Throws: ``FetchError`` `.timeout`, `.cancelled`.
    package func wait(writable: Bool, deadline: ContinuousClock.Instant) async throws(FetchError) {
        try await loop.wait(fd, writable: writable, deadline: deadline)
    }

    /// Closes the socket (a wait under way ends as cancelled).
    package func close() {
        loop.forget(fd)
        shutdown(fd, Int32(SHUT_RDWR))
        _ = Glibc.close(fd)
    }
}

/// A Dispatch source as something to cancel from any thread.
private struct CancellableSource: @unchecked Sendable {
    // @unchecked: Dispatch sources are thread-safe objects (`cancel()` may be called from any thread); the
    // protocol just does not say Sendable.
    private let source: any DispatchSourceProtocol
    init(_ source: any DispatchSourceProtocol) { self.source = source }
    func cancel() { source.cancel() }
}

// MARK: - Waiting with a deadline

enum Waiting {
    /// Where deadlines fire: a serial queue of its own, which libdispatch serves from its overcommitting pool (a
    /// thread when one is needed), so a deadline fires on time even while the global queues' few workers are all
    /// blocked in other code (seen under the full test suite: a 300 ms deadline fired after 13 and 34 s).
    private static let deadlines = DispatchQueue(label: "SecurityServices.network.deadlines")

    /// Starts an operation (`start` gets the function to report its result with, and returns how to stop it) and
    /// waits for the first of: its result, the deadline, the task's cancellation. The operation is stopped then,
    /// whichever came first; a late result is dropped.
    /// The deadline is a timer source, cancelled when the operation ends first, so a wait that ended leaves nothing
    /// scheduled behind it on the deadlines queue.
    static func race<T: Sendable>(
        deadline: ContinuousClock.Instant,
        _ start: (@escaping @Sendable (Result<T, FetchError>) -> Void) -> @Sendable () -> Void
    ) async -> Result<T, FetchError> {
        let gate = Gate<T>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                gate.install(continuation)
                let remaining = ContinuousClock.now.duration(to: deadline)
                let nanoseconds = max(0, remaining.components.seconds * 1_000_000_000 + remaining.components.attoseconds / 1_000_000_000)
                let timer = DispatchSource.makeTimerSource(queue: deadlines)
                timer.schedule(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)))
                timer.setEventHandler { gate.finish(.failure(FetchError(.timeout))) }
                let stopTimer = CancellableSource(timer)
                timer.resume()
                let stop = start { gate.finish($0) }
                gate.onFinish {
                    stopTimer.cancel()
                    stop()
                }
            }
        } onCancel: {
            gate.finish(.failure(FetchError(.cancelled)))
        }
    }
}

/// One continuation resumed once, by whichever of result, deadline and cancellation comes first.
private final class Gate<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<T, FetchError>, Never>?
        var result: Result<T, FetchError>?
        var stop: (@Sendable () -> Void)?
        var resumed = false
    }

    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<Result<T, FetchError>, Never>) {
        let early: Result<T, FetchError>? = state.withLock { state in
            if let result = state.result, !state.resumed {
                state.resumed = true
                return result
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func onFinish(_ stop: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state in
            if state.result != nil { return true }
            state.stop = stop
            return false
        }
        if finished { stop() }
    }

    func finish(_ result: Result<T, FetchError>) {
        let (continuation, stop): (CheckedContinuation<Result<T, FetchError>, Never>?, (@Sendable () -> Void)?) =
            state.withLock { state in
                guard state.result == nil else { return (nil, nil) }
                state.result = result
                let stop = state.stop
                state.stop = nil
                guard let continuation = state.continuation, !state.resumed else { return (nil, stop) }
                state.resumed = true
                state.continuation = nil
                return (continuation, stop)
            }
        stop?()
        continuation?.resume(returning: result)
    }
}
