internal import COpenSSL
public import Certificates
import Foundation
import NetworkFetch
import Synchronization
public import Trust

/// A TLS client connection over a TCP socket of its own, with libssl doing the protocol (a ``TLSEngine`` over the
/// socket) and this package's trust evaluator judging the server. The socket is non-blocking and every wait for the
/// peer is awaited (a Dispatch event source, as the PKI services' fetches wait): no thread blocks on the network, the
/// configuration's timeout bounds each call (one deadline for resolution, connection and handshake), and the task's
/// cancellation ends a wait. One reader and one writer at a time.
public final class TLSConnection: @unchecked Sendable {
    // @unchecked: the engine is only touched while holding `lock` (one engine step at a time, never across a wait);
    // the rest is immutable or atomic.
    private let engine: TLSEngine
    private let socket: SocketTransport
    private let lock = NSLock()
    private let closed = Atomic<Bool>(false)
    /// How long one read or write may wait for the peer.
    private let timeout: Duration

    /// The peer's certificates as sent, leaf first (a server's; a client's when it presented one).
    public let peerCertificates: [Certificate]
    /// The evaluation that admitted them: always for a client connection; for a server connection, when the client
    /// presented a certificate.
    public let trust: TrustResult?
    public let negotiatedVersion: TLSVersion
    /// The ALPN protocol the server chose, nil when none.
    public let applicationProtocol: String?
    /// Whether the handshake resumed a session from the configuration's ``TLSConfiguration/sessionCache``.
    public let sessionReused: Bool

    init(engine: TLSEngine, socket: SocketTransport, trust: TrustResult?, timeout: Duration) {
        self.engine = engine
        self.socket = socket
        self.trust = trust
        self.timeout = timeout
        peerCertificates = engine.peerCertificates
        negotiatedVersion = engine.negotiatedVersion ?? .tls12
        applicationProtocol = engine.selectedApplicationProtocol
        sessionReused = engine.sessionReused
    }

    /// Sends `bytes` whole, awaiting the socket when its buffer is full.
    public func write(_ bytes: [UInt8]) async throws {
        try await send(bytes)
    }

    private func send(_ bytes: [UInt8]) async throws {
        var sent = 0
        let deadline = ContinuousClock.now + timeout
        _ = try await socket.drive(until: deadline, "write") { () throws -> (Void, TLSEngine.Step) in
            try lock.withLock {
                guard !closed.load(ordering: .relaxed) else { throw TLSError(.closed, "the connection is closed") }
                // From the first byte not taken (libssl may hold part of it in a record it is still sending: it
                // takes the same bytes again).
                let (count, step) = bytes.withUnsafeBytes { engine.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
                sent += count
                guard step == .done || step == .wouldBlock else { throw Self.error(step, "write", handshakeDone: true) }
                return ((), step)
            }
        }
    }

    /// Up to `maximumCount` bytes of application data: at least one byte (waiting within the timeout), then what
    /// has already arrived; empty when the server closed the connection cleanly (close_notify). A connection cut
    /// mid-record is `.protocolError`, never a short answer.
    public func read(maximumCount: Int = 16_384) async throws -> [UInt8] {
        // Read into uninitialized memory (libssl writes the bytes), then into an array of just what arrived.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, maximumCount), alignment: 1)
        defer { buffer.deallocate() }
        let count = try await receive(into: buffer)
        return Array(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }

    /// Waits within the timeout for something to arrive and reads it into `buffer`, up to its size: the count, 0
    /// when the peer closed with close_notify.
    private func receive(into buffer: UnsafeMutableRawBufferPointer) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        return try await socket.drive(until: deadline, "read") { () throws -> (Int, TLSEngine.Step) in
            guard let count = try available(into: buffer) else { return (0, .wouldBlock) }
            return (count, .done)
        }.0
    }

    /// Reads into `buffer` what has arrived, up to its size: the count, 0 when the peer closed with close_notify,
    /// nil when nothing has arrived.
    private func available(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        try lock.withLock {
            guard !closed.load(ordering: .relaxed) else { throw TLSError(.closed, "the connection is closed") }
            let (first, step) = engine.read(into: buffer)
            guard first > 0 else {
                if step == .failed(.closedGraceful) { return 0 }
                if step == .wouldBlock { return nil }
                throw Self.error(step, "read", handshakeDone: true)
            }
            // Then whatever more has already arrived (one record per engine read): a stop or an error is for the
            // next call to report.
            var total = first
            while total < buffer.count {
                let (count, _) = engine.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]))
                guard count > 0 else { break }
                total += count
            }
            return total
        }
    }

    /// What ``readToEnd(limit:)`` received, and how the stream ended.
    public struct Received: Sendable {
        public enum End: Sendable {
            /// The peer closed with close_notify: everything it sent is here.
            case closeNotify
            /// `limit` bytes arrived; the peer may have more.
            case limit
            /// The stream stopped without close_notify (cut, a protocol error, the timeout): what arrived before is
            /// here, and may be short of what the peer meant to send.
            case cut(TLSError)
        }

        public let bytes: [UInt8]
        public let end: End

        /// Whether everything the peer sent arrived and it closed properly.
        public var isComplete: Bool {
            if case .closeNotify = end { return true }
            return false
        }
    }

    /// Reads until the peer closes the connection, at most `limit` bytes: what arrived, and how the stream ended.
    /// An end without close_notify after some bytes is reported in ``Received/end``, not thrown, so those bytes are
    /// not lost with it; a failure before any byte is thrown (the connection delivered nothing).
    /// - Throws: ``TLSError`` when the first read fails.
    public func readToEnd(limit: Int = 1 << 20) async throws -> Received {
        // Each read lands in one scratch buffer and is appended from there: no buffer of its own per read, zeroed
        // and then copied again.
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readToEndChunk, alignment: 1)
        defer { scratch.deallocate() }
        var all: [UInt8] = []
        while all.count < limit {
            let room = UnsafeMutableRawBufferPointer(rebasing: scratch[..<min(scratch.count, limit - all.count)])
            let count: Int
            do {
                count = try await receive(into: room)
            } catch let error as TLSError where !all.isEmpty {
                return Received(bytes: all, end: .cut(error))
            }
            if count == 0 { return Received(bytes: all, end: .closeNotify) }
            all.append(contentsOf: UnsafeRawBufferPointer(rebasing: room[..<count]))
        }
        return Received(bytes: all, end: .limit)
    }

    /// What ``readToEnd(limit:)`` reads at most at once: several records (16 KiB of plaintext each).
    static let readToEndChunk = 256 * 1024

    /// Sends close_notify (when the socket takes it at once: a closing side does not wait) and closes the socket's
    /// sending side.
    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        lock.withLock {
            _ = engine.close()
            shutdown(socket.connection.fd, Int32(SHUT_WR))
        }
    }

    // MARK: Opening

    /// libssl writes through our transport with send(2) and MSG_NOSIGNAL, but a process may still meet a closed
    /// peer elsewhere through libssl; SIGPIPE is ignored once, process-wide, before the first connection (a write
    /// then fails with EPIPE instead).
    static let sigpipeIgnored: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// An engine over `socket`; settings it cannot use are `.invalidConfiguration`.
    static func makeEngine(_ settings: TLSEngine.Settings, _ socket: SocketTransport) throws -> TLSEngine {
        do {
            return try TLSEngine(settings, transport: socket)
        } catch {
            throw TLSError(.invalidConfiguration, error.description)
        }
    }

    /// The error of a step that did not complete.
    static func error(_ step: TLSEngine.Step, _ what: String, handshakeDone: Bool) -> TLSError {
        switch step {
        case .done: return TLSError(.protocolError, "\(what): no error")
        // The socket's readiness is awaited until the deadline: a step left blocked means the deadline passed.
        case .wouldBlock: return TLSError(.timeout, "\(what): no answer within the timeout")
        case .peerAuthenticationPending: return TLSError(.handshakeFailed, "\(what): paused")
        case .failed(let failure):
            switch failure {
            case .transport(let code) where code == ETIMEDOUT: return TLSError(.timeout, "\(what): no answer within the timeout")
            case .transport(let code): return TLSError(.protocolError, "\(what): \(String(cString: strerror(code)))")
            case .untrusted: return TLSError(.untrusted, "\(what): the peer's chain is not trusted")
            // An alert from the server is a refusal, at the handshake or, with TLS 1.3's client authentication,
            // at the first read.
            case .alert(let description): return TLSError(.handshakeFailed, "\(what): the server sent alert \(TLSError.alertName(description))")
            case .version: return TLSError(.handshakeFailed, "\(what): no protocol version both sides allow")
            case .closedAbort:
                return TLSError(handshakeDone ? .protocolError : .handshakeFailed, "\(what): the connection ended unexpectedly")
            case .closedGraceful: return TLSError(.closed, "\(what): the server closed the connection")
            case .protocolViolation(let reason):
                return TLSError(handshakeDone ? .protocolError : .handshakeFailed, "\(what): \(reason)")
            }
        }
    }

    /// Runs a connection's opening on `executor` (its event loop, or an executor of its own when a step may block):
    /// off the cooperative pool, so that a pool kept busy by blocking work elsewhere in the process cannot hold a
    /// wait for the peer past its deadline.
    static func on<R: Sendable>(_ executor: any TaskExecutor, _ work: () async throws -> R) async throws -> R {
        try await withTaskExecutorPreference(executor) { try await work() }
    }
}
