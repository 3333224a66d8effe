import KeychainModel
package import Foundation
import Synchronization

/// Frames over a connected stream socket: a 4-byte big-endian length, then the body (``KeychainWire``). Frames
/// are received by a ``FrameReader``.
public enum KeychainFraming {
    /// Sends one frame whole.
    /// - Throws: ``KeychainError`` `.parameter` for a body over ``KeychainWire/maximumMessage``, `.io` when the
    ///   peer is gone or the send timeout passes.
    public static func send(_ body: [UInt8], on fd: Int32) throws {
        guard body.count <= KeychainWire.maximumMessage else {
            throw KeychainError(.parameter, "a keychain service message of \(body.count) bytes is over the limit")
        }
        let frame = frame(body)
        var sent = 0
        while sent < frame.count {
            let count = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, frame.count - sent, Int32(MSG_NOSIGNAL)) }  // !: not empty
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw KeychainError(.io, "the keychain service connection failed while sending", errno: errno) }
            sent += count
        }
    }

    /// `body` with its length in front: one frame, as sent.
    package static func frame(_ body: [UInt8]) -> [UInt8] {
        let length = UInt32(truncatingIfNeeded: body.count)
        return [UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
            + body
    }

    /// Sets the socket's send and receive timeouts.
    public static func setTimeout(_ timeout: Duration, on fd: Int32) {
        let microseconds = Int(clamping: timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000)
        var limit = timeval(tv_sec: microseconds / 1_000_000, tv_usec: microseconds % 1_000_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// The frames arriving on a connected stream socket, in order. One receive takes whatever has arrived (a whole small
/// frame, usually), and a frame's first bytes are first polled for before the thread blocks (``spin``).
///
/// Why poll: a blocked thread is woken by the kernel at a cost that depends on the machine. On a virtual machine
/// whose idle vCPUs halt (this project's development machines are KVM guests with guest halt-polling off), a
/// Unix-socket round trip between two blocked threads took 50 µs at p50 where the same round trip with 20 µs of
/// polling took 4.3 µs (a C ping-pong of 64-byte messages, 20,000 round trips). Polling for about the cost of a
/// wake-up spends at most twice the ideal, the classic bound for spinning before blocking. Polling backs off:
/// after a wait the poll did not cover, the next 2, 4, … 64 waits block at once (a busy machine, where answers
/// queue behind other threads, stops polling by itself); at most as many threads as processors poll at a time,
/// and a polling thread yields its processor between polls, so threads with work come first.
package struct FrameReader {
    package let fd: Int32
    private let spin: Duration
    /// Received bytes not yet returned as frames.
    private var pending: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)
    private var misses = 0
    private var blockingWaits = 0

    private static let pollers = Atomic<Int>(0)
    private static let maximumPollers = ProcessInfo.processInfo.activeProcessorCount

    /// - Parameter spin: how long to poll for a frame before blocking; zero blocks at once.
    package init(fd: Int32, spin: Duration = .zero) {
        self.fd = fd
        self.spin = spin
    }

    /// The next frame's body; nil at a clean end of stream before a frame starts.
    /// - Throws: ``KeychainError`` `.parameter` for a length over ``KeychainWire/maximumMessage`` (nothing more is
    ///   read: the connection cannot be trusted to be in step), `.io` for a cut frame or a timeout.
    package mutating func next() throws -> [UInt8]? {
        if pending.isEmpty, try !receive(polling: true) { return nil }
        while pending.count < 4 {
            guard try receive(polling: false) else { throw Self.cut }
        }
        let length = pending[..<4].reduce(0) { $0 << 8 | Int($1) }
        guard length <= KeychainWire.maximumMessage else {
            throw KeychainError(.parameter, "a keychain service message of \(length) bytes is over the limit")
        }
        if pending.count >= 4 + length {
            let body = Array(pending[4..<4 + length])
            pending.removeFirst(4 + length)
            return body
        }
        // The rest of a long frame, read straight into it (and no further: the next frame stays in the socket).
        var body = [UInt8](repeating: 0, count: length)
        var received = pending.count - 4
        body.withUnsafeMutableBytes { $0.copyBytes(from: pending[4...]) }
        pending.removeAll(keepingCapacity: true)
        while received < length {
            let got = body.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + received, length - received, 0) }  // !: length > 0
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw got == 0 ? Self.cut : KeychainError(.io, Self.failed, errno: errno) }
            received += got
        }
        return body
    }

    private static let cut = KeychainError(.io, "the peer closed the connection mid-message")
    private static let failed = "the keychain service connection failed"

    /// Appends what has arrived, blocking until something has (after polling for it when `polling` and
    /// ``pollingDeadline()`` allow); false at the end of the stream.
    private mutating func receive(polling: Bool) throws -> Bool {
        var deadline = polling ? pollingDeadline() : nil
        defer { if deadline != nil { Self.pollers.subtract(1, ordering: .relaxed) } }
        while true {
            let flags = deadline == nil ? 0 : Int32(MSG_DONTWAIT)
            let got = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, flags) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 && errno == EAGAIN, let end = deadline {
                if ContinuousClock.now < end {
                    sched_yield()
                } else {
                    // Not covered by the poll: block, and skip polling for the next waits.
                    Self.pollers.subtract(1, ordering: .relaxed)
                    deadline = nil
                    misses = min(misses + 1, 6)
                    blockingWaits = 1 << misses
                }
                continue
            }
            guard got >= 0 else { throw KeychainError(.io, Self.failed, errno: errno) }
            if deadline != nil { misses = 0 }
            pending.append(contentsOf: scratch[..<got])
            return got > 0
        }
    }

    /// The end of this wait's polling when polling is due and a polling slot is free (the slot is then taken);
    /// nil to block at once.
    private mutating func pollingDeadline() -> ContinuousClock.Instant? {
        guard spin > .zero else { return nil }
        if blockingWaits > 0 {
            blockingWaits -= 1
            return nil
        }
        guard Self.pollers.add(1, ordering: .relaxed).newValue <= Self.maximumPollers else {
            Self.pollers.subtract(1, ordering: .relaxed)
            return nil
        }
        return .now + spin
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
