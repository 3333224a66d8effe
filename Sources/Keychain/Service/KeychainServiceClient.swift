package import Foundation
import Synchronization

/// Frames over a connected stream socket: a 4-byte big-endian length, then the body (``KeychainWire``).
public enum KeychainFraming {
    /// Sends one frame whole.
    /// - Throws: ``KeychainError`` `.parameter` for a body over ``KeychainWire/maximumMessage``, `.io` when the
    ///   peer is gone or the send timeout passes.
    public static func send(_ body: [UInt8], on fd: Int32) throws {
        guard body.count <= KeychainWire.maximumMessage else {
            throw KeychainError(.parameter, "a keychain service message of \(body.count) bytes is over the limit")
        }
        let length = UInt32(body.count)
        let frame = [UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)] + body
        var sent = 0
        while sent < frame.count {
            let count = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, frame.count - sent, Int32(MSG_NOSIGNAL)) }  // !: not empty
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw KeychainError(.io, "the keychain service connection failed while sending", errno: errno) }
            sent += count
        }
    }

    /// Receives one frame's body; nil at a clean end of stream before a frame starts.
    /// - Throws: ``KeychainError`` `.parameter` for a length over ``KeychainWire/maximumMessage`` (nothing more is
    ///   read: the connection cannot be trusted to be in step), `.io` for a cut frame or a timeout.
    public static func receive(on fd: Int32) throws -> [UInt8]? {
        guard let header = try read(4, from: fd, endAllowed: true) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length <= KeychainWire.maximumMessage else {
            throw KeychainError(.parameter, "a keychain service message of \(length) bytes is over the limit")
        }
        return try read(length, from: fd, endAllowed: false) ?? []
    }

    private static func read(_ count: Int, from fd: Int32, endAllowed: Bool) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var received = 0
        while received < count {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + received, count - received, 0) }  // !: count > 0
            if got < 0 && errno == EINTR { continue }
            if got == 0 && received == 0 && endAllowed { return nil }
            guard got > 0 else {
                let reason = got == 0 ? "the peer closed the connection mid-message" : "the keychain service connection failed"
                throw KeychainError(.io, reason, errno: got < 0 ? errno : nil)
            }
            received += got
        }
        return buffer
    }

    /// Sets the socket's send and receive timeouts.
    public static func setTimeout(_ timeout: Duration, on fd: Int32) {
        let microseconds = Int(clamping: timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000)
        var limit = timeval(tv_sec: microseconds / 1_000_000, tv_usec: microseconds % 1_000_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// Unix stream sockets named by a path, for both ends of the keychain service.
package enum UnixSocket {
    /// A new Unix stream socket (close-on-exec) on which `operation` — `connect` or `bind` — was done with the
    /// address of `path`.
    /// - Throws: ``KeychainError`` `.parameter` for an empty or too long path; `.io` with the errno and `failure`
    ///   as the reason when the socket or the operation fails (the socket is closed).
    package static func open(
        _ path: String, _ operation: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32, failure: String
    ) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw KeychainError(.parameter, "the socket path is empty or too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeychainError(.io, failure, errno: errno) }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { operation(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else {
            let error = errno
            close(fd)
            throw KeychainError(.io, failure, errno: error)
        }
        return fd
    }
}

/// A connection to the keychain service (`securityd`) on its Unix socket: one request at a time, each answered
/// within the timeout. The service, not this process, decides which access groups the calls act in.
public final class KeychainServiceClient: Sendable {
    /// The socket's path.
    public let socketPath: String
    private let fd: Mutex<Int32>

    /// Connects to the service at `socketPath`.
    /// - Throws: ``KeychainError`` `.io` when no service listens there, `.parameter` for an empty or too long path.
    public init(socketPath: String, timeout: Duration = .seconds(30)) throws {
        self.socketPath = socketPath
        let fd = try UnixSocket.open(socketPath, Glibc.connect, failure: "no keychain service listens at \(socketPath)")
        KeychainFraming.setTimeout(timeout, on: fd)
        self.fd = Mutex(fd)
    }

    deinit { fd.withLock { _ = close($0) } }

    /// Sends `request` and returns the service's answer.
    /// - Throws: the ``KeychainError`` the service answered with; `.io` when the connection fails; `.parameter`
    ///   when the answer is malformed.
    public func call(_ request: KeychainWire.Request) throws -> KeychainWire.Response {
        let body = try fd.withLock { fd -> [UInt8] in
            try KeychainFraming.send(KeychainWire.encode(request), on: fd)
            guard let body = try KeychainFraming.receive(on: fd) else {
                throw KeychainError(.io, "the keychain service closed the connection")
            }
            return body
        }
        let response = try KeychainWire.decodeResponse(body)
        if case .failure(let error) = response { throw error }
        return response
    }
}
