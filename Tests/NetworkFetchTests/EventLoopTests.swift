import Foundation
import Testing
import TestVectors

@testable import NetworkFetch

#if canImport(Glibc)
    import Glibc
#endif

/// The network's event loops, driven with socket pairs: a wait ends when its descriptor is ready, at its deadline, at
/// the task's cancellation, or when its descriptor is forgotten; work that prefers a loop runs on the loop's thread.
@Suite("Event loops: waits end by readiness, deadline, cancellation or close; steps run on the loop's thread")
struct EventLoopTests {
    /// A connected pair of Unix stream sockets, non-blocking.
    static func pair() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test("a read wait ends when the peer writes; a write wait on a socket with room ends at once")
    func readiness() async throws {
        let (a, b) = try Self.pair()
        defer { close(a); close(b) }
        let loop = EventLoop.next()
        // The peer writes from a Dispatch thread: the suite's other tests may keep the cooperative pool busy.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { _ = write(b, "x", 1) }
        try await loop.wait(a, writable: false, deadline: .now + .seconds(30))
        var byte: UInt8 = 0
        #expect(read(a, &byte, 1) == 1 && byte == UInt8(ascii: "x"))
        try await loop.wait(a, writable: true, deadline: .now + .seconds(10))
        loop.forget(a)
    }

    @Test("a wait nothing answers ends at its deadline with .timeout, and a later wait on the descriptor works")
    func deadline() async throws {
        let (a, b) = try Self.pair()
        defer { close(a); close(b) }
        let loop = EventLoop.next()
        // Timed on the loop, where the wait's end resumes this work: the suite's other tests may keep the cooperative
        // pool busy for longer than the deadline.
        let (waited, failure) = await withTaskExecutorPreference(loop) { () async -> (Duration, FetchError?) in
            let start = ContinuousClock.now
            do {
                try await loop.wait(a, writable: false, deadline: .now + .milliseconds(200))
                return (ContinuousClock.now - start, nil)
            } catch {
                return (ContinuousClock.now - start, error as? FetchError)
            }
        }
        #expect(failure?.kind == .timeout)
        #expect(waited >= .milliseconds(200) && waited < .seconds(2), "\(waited)")
        _ = write(b, "y", 1)
        try await loop.wait(a, writable: false, deadline: .now + .seconds(10))
        loop.forget(a)
    }

    @Test("cancelling the task ends its wait with .cancelled; forgetting the descriptor ends a wait on it")
    func cancellationAndClose() async throws {
        let (a, b) = try Self.pair()
        defer { close(a); close(b) }
        let loop = EventLoop.next()
        // Cancelled and forgotten from Dispatch timers, and with deadlines far away: the suite's other tests may keep
        // the cooperative pool busy for minutes.
        let (outcome, _) = try await cancelling(after: .milliseconds(50)) {
            try await loop.wait(a, writable: false, deadline: .now + .seconds(600))
        }
        #expect(Self.failure(of: outcome)?.kind == .cancelled)

        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { loop.forget(a) }
        let forgotten: Result<Void, any Error>
        do {
            forgotten = .success(try await loop.wait(a, writable: false, deadline: .now + .seconds(600)))
        } catch {
            forgotten = .failure(error)
        }
        #expect(Self.failure(of: forgotten)?.kind == .cancelled)
    }

    /// How a wait failed; nil when it did not.
    static func failure(of outcome: Result<Void, any Error>) -> FetchError? {
        guard case .failure(let error) = outcome else { return nil }
        return error as? FetchError
    }

    @Test("work that prefers a loop runs on the loop's one thread, before and after a wait")
    func runsOnTheLoop() async throws {
        let (a, b) = try Self.pair()
        defer { close(a); close(b) }
        let loop = EventLoop.next()
        _ = write(b, "z", 1)
        let onLoop = try await withTaskExecutorPreference(loop) { () async throws -> (Bool, Bool) in
            let before = loop.isCurrent
            try await loop.wait(a, writable: false, deadline: .now + .seconds(10))
            return (before, loop.isCurrent)
        }
        #expect(onLoop == (true, true))
        #expect(!loop.isCurrent, "the test's own code runs where it did")
        loop.forget(a)
    }
}
