import Dispatch
import Foundation
import NetworkFetch
import Synchronization

/// The TCP connection under a TLS client: resolved and connected within the timeout, then blocking (the caller
/// sets send and receive timeouts; libssl's calls run on a Dispatch thread).
enum Socket {
    /// A blocking socket whose connection to the address literal `host` has started (non-blocking connect(2): done,
    /// or in progress; refused at once is an error).
    static func startConnecting(host: String, port: UInt16) throws -> Int32 {
        guard case .success(let addresses) = SocketFetcher.systemResolver(host, port), let address = addresses.first else {
            throw TLSError(.unreachable, "\(host) is not an address")
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(errno)))") }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        let status = address.bytes.withUnsafeBytes {
            Glibc.connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))  // !: not empty
        }
        let error = errno
        _ = fcntl(fd, F_SETFL, flags)
        guard status == 0 || error == EINPROGRESS else {
            Glibc.close(fd)
            throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(error)))")
        }
        return fd
    }

    /// Whether `fd` is writable (its connection done, or failed) within `milliseconds`.
    static func awaitWritable(_ fd: Int32, withinMilliseconds milliseconds: Int32) -> Bool {
        var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        while true {
            let ready = poll(&waiting, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 || errno != EINTR { return false }
        }
    }

    /// Waits until `deadline` for the connection started on `fd` and checks that it succeeded.
    /// - Throws: ``TLSError`` `.timeout`, or `.unreachable` with the connection's error.
    static func awaitConnected(_ fd: Int32, host: String, port: UInt16, until deadline: ContinuousClock.Instant) throws {
        guard awaitWritable(fd, withinMilliseconds: milliseconds(deadline - .now)) else {
            throw TLSError(.timeout, "no connection to \(host):\(port) within the timeout")
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else { throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(error)))") }
    }

    /// Whole milliseconds of `duration` for poll(2), none when it is negative.
    static func milliseconds(_ duration: Duration) -> Int32 {
        max(0, Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
    }

    /// What `resolver` answers for `host`, waited for until `deadline`. `getaddrinfo` cannot be interrupted: the
    /// resolver runs on a queue of its own (libdispatch's overcommitting pool, so a hung one holds no worker of the
    /// global queues) and is abandoned when the deadline passes.
    static func resolve(
        _ host: String, _ port: UInt16, until deadline: ContinuousClock.Instant, resolver: @escaping SocketFetcher.Resolver
    ) throws -> [SocketAddress] {
        final class Answer: Sendable {
            let result = Mutex<Result<[SocketAddress], FetchError>?>(nil)
            let done = DispatchSemaphore(value: 0)
        }
        let answer = Answer()
        DispatchQueue(label: "SecurityServices.tls.resolve").async {
            let result = resolver(host, port)
            answer.result.withLock { $0 = result }
            answer.done.signal()
        }
        guard answer.done.wait(timeout: .now() + .milliseconds(Int(milliseconds(deadline - .now)))) == .success else {
            throw TLSError(.timeout, "\(host) did not resolve within the timeout")
        }
        guard case .success(let addresses)? = answer.result.withLock({ $0 }) else { throw TLSError(.unreachable, "\(host) does not resolve") }
        return addresses
    }

    /// A blocking socket connected to `host` (resolved by `resolver`) before `deadline`.
    static func connect(
        host: String, port: UInt16, until deadline: ContinuousClock.Instant, resolver: @escaping SocketFetcher.Resolver
    ) throws -> Int32 {
        let addresses = try resolve(host, port, until: deadline, resolver: resolver)
        var lastError: Int32 = ECONNREFUSED
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var status = address.bytes.withUnsafeBytes {
                Glibc.connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))  // !: not empty
            }
            if status != 0 && errno == EINPROGRESS {
                guard awaitWritable(fd, withinMilliseconds: milliseconds(deadline - .now)) else {
                    Glibc.close(fd)
                    throw TLSError(.timeout, "no connection to \(host):\(port) within the timeout")
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                status = error == 0 ? 0 : -1
                errno = error
            }
            guard status == 0 else {
                lastError = errno
                Glibc.close(fd)
                continue
            }
            _ = fcntl(fd, F_SETFL, flags)
            return fd
        }
        throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(lastError)))")
    }
}
