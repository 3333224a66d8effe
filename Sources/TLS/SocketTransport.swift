import Foundation

/// A blocking socket with send and receive timeouts as the engine's transport; owns the descriptor.
final class SocketTransport: TLSTransport {
    let fd: Int32
    /// Reads take only what has arrived and writes only what the socket takes at once (MSG_DONTWAIT): "would
    /// block", not a timeout.
    var dontWait = false
    /// While set (the opening), a read or write that must wait does so only until then: a peer answering a byte at a
    /// time cannot stretch the opening past its one deadline. After it, the socket's timeouts bound each call.
    var deadline: ContinuousClock.Instant?

    /// Runs `body` (the opening's handshake) with ``deadline`` set.
    func until<R>(_ deadline: ContinuousClock.Instant, _ body: () throws -> R) rethrows -> R {
        self.deadline = deadline
        defer { self.deadline = nil }
        return try body()
    }

    /// Whether the socket is ready for `events` before ``deadline`` (always, without one or when not waiting).
    private func readyBeforeDeadline(_ events: Int32) -> Bool {
        guard let deadline, !dontWait else { return true }
        var waiting = pollfd(fd: fd, events: Int16(events), revents: 0)
        while true {
            let remaining = Socket.milliseconds(deadline - .now)
            guard remaining > 0 else { return false }
            let ready = poll(&waiting, 1, remaining)
            if ready != 0, ready > 0 || errno != EINTR { return true }  // ready, or an error the call will report
            if ready == 0 { return false }
        }
    }

    init(fd: Int32) { self.fd = fd }

    deinit { Glibc.close(fd) }

    /// Send and receive timeouts of `timeout` (an accepted socket has none).
    func setTimeout(_ timeout: Duration) {
        let milliseconds = Int(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var limit = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Whether the socket has something to read (data, an end or an error) within `milliseconds`: poll(2), retried
    /// on EINTR.
    func awaitReadable(withinMilliseconds milliseconds: Int32) -> Bool {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&waiting, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 || errno != EINTR { return false }
        }
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TLSTransportResult {
        guard readyBeforeDeadline(POLLIN) else { return .failed(ETIMEDOUT) }
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, dontWait ? Int32(MSG_DONTWAIT) : 0)
            if count > 0 { return .transferred(count) }
            if count == 0 { return .closed }
            if errno == EINTR { continue }
            if dontWait && (errno == EAGAIN || errno == EWOULDBLOCK) { return .wouldBlock }
            // SO_RCVTIMEO expired.
            return .failed(errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno)
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> TLSTransportResult {
        guard readyBeforeDeadline(POLLOUT) else { return .failed(ETIMEDOUT) }
        while true {
            let count = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | (dontWait ? Int32(MSG_DONTWAIT) : 0))
            if count > 0 { return .transferred(count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && dontWait && (errno == EAGAIN || errno == EWOULDBLOCK) { return .wouldBlock }
            return .failed(count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? ETIMEDOUT : (count < 0 ? errno : EPIPE))
        }
    }
}
