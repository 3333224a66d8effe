internal import CEpoll
internal import CPeerCredentials
import KeychainWire
import Foundation
import Keychain
import Synchronization

/// The service's connections, served from one epoll instance by a fixed set of threads (leader/followers): every
/// descriptor is armed one-shot, so the thread that takes its event is the only one touching it until it re-arms it.
/// A connection costs its descriptor and its buffers, never a thread: a request is read as its bytes arrive, answered
/// by the thread that completed it, and an answer the peer does not take yet waits in the connection, not in a thread.
final class ServiceEventLoop: Sendable {
    private let epoll: Int32
    /// Written once, at stop, and readable for ever after: every waiting thread wakes.
    private let wake: Int32

    init() throws {
        epoll = cepoll_create()
        guard epoll >= 0 else { throw KeychainError(.io, "the service's event loop cannot be made", errno: errno) }
        wake = ceventfd_create()
        guard wake >= 0, cepoll_control(epoll, CEPOLL_ADD, wake, CEPOLL_IN) == 0 else {
            let error = errno
            close(epoll)
            throw KeychainError(.io, "the service's event loop cannot be made", errno: error)
        }
    }

    deinit {
        close(wake)
        close(epoll)
    }

    /// Starts watching `fd` for `events` (one-shot).
    func watch(_ fd: Int32, for events: UInt32) -> Bool { cepoll_control(epoll, CEPOLL_ADD, fd, events | CEPOLL_ONESHOT) == 0 }

    /// Watches `fd` again, for `events` (one-shot).
    func rearm(_ fd: Int32, for events: UInt32) { _ = cepoll_control(epoll, CEPOLL_MOD, fd, events | CEPOLL_ONESHOT) }

    func forget(_ fd: Int32) { _ = cepoll_control(epoll, CEPOLL_DEL, fd, 0) }

    /// The next ready descriptor and its events; nil at the timeout (milliseconds; 0 polls) or once stopped.
    func next(timeout: Int32) -> (fd: Int32, events: UInt32)? {
        var fd: Int32 = -1
        var events: UInt32 = 0
        guard cepoll_wait_one(epoll, timeout, &fd, &events) == 1, fd != wake else { return nil }
        return (fd, events)
    }

    /// Wakes every thread waiting in ``next(timeout:)``, now and later.
    func stop() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }
}

/// One accepted connection: its peer, the groups it acts in, the bytes received but not yet a whole request, and
/// the answer not yet sent. The timestamps are read by the deadline check (``KeychainService``) from any thread.
final class ServiceConnection: Sendable {
    let fd: Int32
    let peer: PeerProcess
    let state: Mutex<State>
    /// Coarse-clock nanoseconds (``ServiceClock``): the last request answered (or the connect).
    let lastActivity: Atomic<Int64>
    /// When the request being received began; 0 when none is.
    let receivingSince = Atomic<Int64>(0)
    /// When the answer not yet taken by the peer was made; 0 when none waits.
    let sendingSince = Atomic<Int64>(0)

    struct State {
        var session: KeychainService.Session
        var received: [UInt8] = []
        var outbox: [UInt8] = []
        var sent = 0
        /// An answer given once its delay has passed (``Answer/later(_:after:)``).
        var delayed: [UInt8]?

        /// Makes `response` the answer to send: framed, or an `errSecParam` answer when it is over the message limit.
        mutating func post(_ response: KeychainWire.Response) {
            outbox = Self.framed(response)
            sent = 0
        }

        static func framed(_ response: KeychainWire.Response) -> [UInt8] {
            let body = KeychainWire.encode(response)
            guard body.count > KeychainWire.maximumMessage else { return KeychainFraming.frame(body) }
            return KeychainFraming.frame(
                KeychainWire.encode(
                    .failure(KeychainError(.parameter, "the answer is over the keychain service's message limit: ask for fewer items"))))
        }
    }

    init(fd: Int32, peer: PeerProcess, granted: [String]) {
        self.fd = fd
        self.peer = peer
        state = Mutex(State(session: KeychainService.Session(granted: granted, groups: granted, keychain: nil)))
        lastActivity = Atomic(ServiceClock.now)
    }

    deinit { close(fd) }

    /// What the connection waits for after a turn.
    enum Next {
        case input
        case output
        case close
        /// A turn again after this long (to give a delayed answer).
        case later(Duration)
    }

    /// The longest read of one turn: a peer streaming bytes gets no more of a thread's time than this at once.
    static let readLimit = 64 * 1024
    /// The size of a serving thread's receive buffer (``ReceiveBuffer``).
    static let scratchSize = 16 * 1024

    /// What a request gets: an answer, or a last answer after which the connection closes.
    enum Answer {
        case answer(KeychainWire.Response)
        case refusal(KeychainWire.Response)
        /// An answer given only after `delay` (requests after it wait their turn).
        case later(KeychainWire.Response, after: Duration)
    }

    /// One turn: sends what is left of an answer, reads what has arrived (through `scratch`, the serving thread's),
    /// answers every whole request with `respond`.
    func turn(scratch: ReceiveBuffer, _ respond: (_ body: [UInt8], _ session: inout KeychainService.Session) -> Answer) -> Next {
        state.withLock { state in
            if let delayed = state.delayed {
                state.delayed = nil
                state.outbox = delayed
                state.sent = 0
                lastActivity.store(ServiceClock.now, ordering: .relaxed)
            }
            if state.sent < state.outbox.count {
                switch flush(&state) {
                case .blocked: return .output
                case .failed: return .close
                case .sent: break
                }
            }
            var atEnd = false
            var total = 0
            while total < Self.readLimit {
                let room = Self.readLimit - total
                let got = recv(fd, scratch.bytes.baseAddress, min(room, scratch.bytes.count), Int32(MSG_DONTWAIT))
                if got < 0 && errno == EINTR { continue }
                if got <= 0 {
                    atEnd = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
                    break
                }
                state.received.append(contentsOf: UnsafeBufferPointer(rebasing: scratch.bytes[..<got]))
                total += got
                // Less than there was room for: the socket is drained (a stream socket gives what it has).
                if got < min(room, Self.scratchSize) { break }
            }
            while state.received.count >= 4 {
                let length = state.received[..<4].reduce(0) { $0 << 8 | Int($1) }
                guard length <= KeychainWire.maximumMessage else {
                    // Answered, then closed: the rest cannot be framed.
                    state.post(.failure(KeychainError(.parameter, "a keychain service message of \(length) bytes is over the limit")))
                    _ = flush(&state)
                    return .close
                }
                guard state.received.count >= 4 + length else { break }
                let body = Array(state.received[4..<4 + length])
                state.received.removeFirst(4 + length)
                switch respond(body, &state.session) {
                case .answer(let answer): state.post(answer)
                case .refusal(let refusal):
                    state.post(refusal)
                    _ = flush(&state)
                    return .close
                case .later(let answer, let delay):
                    state.delayed = State.framed(answer)
                    receivingSince.store(0, ordering: .relaxed)
                    return .later(delay)
                }
                lastActivity.store(ServiceClock.now, ordering: .relaxed)
                switch flush(&state) {
                case .blocked:
                    receivingSince.store(0, ordering: .relaxed)
                    return .output
                case .failed: return .close
                case .sent: break
                }
            }
            if atEnd { return .close }
            if state.received.isEmpty {
                receivingSince.store(0, ordering: .relaxed)
            } else if receivingSince.load(ordering: .relaxed) == 0 {
                receivingSince.store(ServiceClock.now, ordering: .relaxed)
            }
            return .input
        }
    }

    private enum Flush {
        /// All of the outbox went.
        case sent
        /// The peer must take some first.
        case blocked
        case failed
    }

    /// Sends what it can of the outbox without waiting.
    private func flush(_ state: inout State) -> Flush {
        while state.sent < state.outbox.count {
            let count = state.outbox.withUnsafeBytes { bytes in
                send(fd, bytes.baseAddress! + state.sent, bytes.count - state.sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))  // !: not empty
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                if sendingSince.load(ordering: .relaxed) == 0 { sendingSince.store(ServiceClock.now, ordering: .relaxed) }
                return .blocked
            }
            guard count > 0 else { return .failed }
            state.sent += count
        }
        state.outbox = []
        state.sent = 0
        sendingSince.store(0, ordering: .relaxed)
        return .sent
    }

}

/// A serving thread's receive buffer, allocated once per thread: what arrives is copied from it into the
/// connection's own buffer, which grows only by what arrived.
final class ReceiveBuffer {
    let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: ServiceConnection.scratchSize)
    deinit { bytes.deallocate() }
}

/// The coarse monotonic clock in nanoseconds (the vDSO reads it from memory): the service's deadlines are seconds.
enum ServiceClock {
    static var now: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}
