import Foundation
import NetworkFetch

/// The engine's transport over a non-blocking TCP socket (NetworkFetch's `Connection`, whose waits are Dispatch
/// event sources): each call moves what the socket takes or holds now and says "would block" otherwise, noting which
/// way, so that the connection awaits that readiness before the engine's next step. Owns the connection.
final class SocketTransport: TLSTransport {
    let connection: Connection
    /// Whether the last call that would block was a write: the readiness to await before the next step.
    private(set) var blockedWriting = false

    init(_ connection: Connection) {
        self.connection = connection
    }

    deinit { connection.close() }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TLSTransportResult {
        while true {
            let count = recv(connection.fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 { return .transferred(count) }
            if count == 0 { return .closed }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { return .failed(errno) }
            blockedWriting = false
            return .wouldBlock
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> TLSTransportResult {
        while true {
            let count = Glibc.send(connection.fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if count > 0 { return .transferred(count) }
            if count < 0 && errno == EINTR { continue }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK else { return .failed(count < 0 ? errno : EPIPE) }
            blockedWriting = true
            return .wouldBlock
        }
    }

    /// Runs engine steps (`step`, which returns its result and the engine's step) until one stops for something other
    /// than the socket, awaiting the readiness it blocked on between tries (on the connection's event loop), until
    /// `deadline`. The steps run where the caller is: the handshake on the executor it was opened on, a read or
    /// write in the caller's task (a wait's end costs one wake-up of the loop and one of the caller's executor; moving
    /// to the loop for the steps would add one to cross there).
    /// - Throws: ``TLSError`` `.timeout` at the deadline (naming `what`); `CancellationError` when the task is
    ///   cancelled.
    func drive<R>(until deadline: ContinuousClock.Instant, _ what: String, _ step: () throws -> (R, TLSEngine.Step)) async throws -> (R, TLSEngine.Step) {
        while true {
            let (result, outcome) = try step()
            guard outcome == .wouldBlock else { return (result, outcome) }
            do {
                try await connection.wait(writable: blockedWriting, deadline: deadline)
            } catch {
                if error.kind == .cancelled { throw CancellationError() }
                throw TLSError(.timeout, "\(what): no answer within the timeout")
            }
        }
    }
}
