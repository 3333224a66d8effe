public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.0 server on 127.0.0.1 for tests that need a real peer over loopback (an OCSP responder, a CRL
/// distribution point). One thread accepts and answers connections one at a time; the server stops when it is
/// released. Requests are bounded (64 KiB of headers and body), and every socket has a receive timeout, so a
/// test never hangs on it.
public final class LoopbackHTTPServer: @unchecked Sendable {
    // @unchecked: `listener` is set once in init and closed once in deinit; the thread only reads it.
    public struct Request: Sendable {
        public let method: String
        public let path: String
        public let body: Data
    }

    public struct Response: Sendable {
        public let status: Int
        public let contentType: String
        public let body: Data
        public init(status: Int = 200, contentType: String = "application/octet-stream", body: Data) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
        public static let notFound = Response(status: 404, contentType: "text/plain", body: Data("not found\n".utf8))
    }

    /// What the server does with a connection.
    public enum Behaviour: Sendable {
        /// Answers each request with the handler's response.
        case answer(@Sendable (Request) -> Response)
        /// Accepts connections and never answers (a responder that hangs).
        case silent
    }

    public let port: UInt16
    private let listener: Int32
    private let stop = StopFlag()

    /// Set when the server is released; the serving thread holds this, not the server, so release can happen.
    private final class StopFlag: @unchecked Sendable {
        // @unchecked: `value` is only read and written under `lock`.
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    /// Starts listening on 127.0.0.1 on a port the kernel picks.
    public init(_ behaviour: Behaviour) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let stop = self.stop
        Thread.detachNewThread { Self.serve(fd, behaviour, stop) }
    }

    deinit {
        stop.set()
        // shutdown wakes the accept() of the serving thread, which then returns and closes the listener itself:
        // closed here, its descriptor number could be reused by the next server's listener before the thread's
        // accept() returned, and the thread would accept (and close) that server's connections.
        shutdown(listener, Int32(SHUT_RDWR))
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    private static func serve(_ listener: Int32, _ behaviour: Behaviour, _ stop: StopFlag) {
        var held: [Int32] = []
        defer {
            held.forEach { close($0) }
            close(listener)
        }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            if stop.isSet {
                close(connection)
                return
            }
            switch behaviour {
            case .silent:
                held.append(connection)  // kept open, never answered, closed when the server stops
            case .answer(let handler):
                answer(connection, handler)
                close(connection)
            }
        }
    }

    private static func answer(_ connection: Int32, _ handler: (Request) -> Response) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Range<Data.Index>?
        var expected = 0
        while received.count < 65536 {
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
            if headerEnd == nil, let end = received.range(of: Data("\r\n\r\n".utf8)) {
                headerEnd = end
                let head = String(decoding: received[..<end.lowerBound], as: UTF8.self).lowercased()
                if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
                    expected = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if let end = headerEnd, received.count - end.upperBound >= expected { break }
        }
        guard let end = headerEnd else { return }
        let requestLine = String(decoding: received[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = requestLine.split(separator: " ")
        guard parts.count >= 2 else { return }
        let request = Request(
            method: String(parts[0]), path: String(parts[1]), body: Data(received[end.upperBound...].prefix(expected)))
        let response = handler(request)
        var head = "HTTP/1.0 \(response.status) \(response.status == 200 ? "OK" : "Error")\r\n"
        head += "Content-Type: \(response.contentType)\r\nContent-Length: \(response.body.count)\r\n"
        head += "Connection: close\r\n\r\n"
        let bytes = Data(head.utf8) + response.body
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(connection, raw.baseAddress! + offset, raw.count - offset)  // !: non-empty
                if written <= 0 { break }
                offset += written
            }
        }
    }
}
