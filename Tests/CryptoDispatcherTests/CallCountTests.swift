import CryptoContract
import CryptoDispatcher
import Foundation
import Testing

/// The dispatcher's counters are kept per thread (issue 21: no locked increment per call). They must stay exact:
/// across threads, after the threads that counted exit, across resets, with several dispatchers on one thread,
/// and a new dispatcher starts from zero.
@Suite("Dispatcher: exact per-thread counters")
struct CallCountTests {
    let sha1 = Route.digest(.sha1)!
    let sha256 = Route.digest(.sha256)!

    /// Runs `body` on `count` threads of their own, which exit before this returns.
    func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        let thread = Thread {
                            body(index)
                            continuation.resume()
                        }
                        thread.start()
                    }
                }
            }
        }
    }

    @Test("calls on eight threads that then exit are all counted, per route")
    func threadsThatExit() async throws {
        let dispatcher = Dispatcher(DispatchConfiguration(policy: .software))
        await onThreads(8) { index in
            for _ in 0..<(1000 + index) { _ = try? dispatcher.digest(.sha1, [1, 2, 3]) }
            for _ in 0..<index { _ = try? dispatcher.digest(.sha256, [4]) }
        }
        // Threads have exited (or are exiting): their counts are folded into the dispatcher's or still in their
        // blocks; either way every call is there.
        let counters = dispatcher.counters
        #expect(counters.count(.software, sha1) == (0..<8).reduce(0) { $0 + 1000 + $1 })
        #expect(counters.count(.software, sha256) == (0..<8).reduce(0, +))
        #expect(counters.total(.kernel) == 0)
    }

    @Test("a reset is a new zero for every thread's counts, and later calls count from it")
    func resets() async throws {
        let dispatcher = Dispatcher(DispatchConfiguration(policy: .software))
        _ = try dispatcher.digest(.sha1, [1])
        await onThreads(4) { _ in for _ in 0..<50 { _ = try? dispatcher.digest(.sha1, [1]) } }
        #expect(dispatcher.counters.count(.software, sha1) == 201)
        dispatcher.resetCounters()
        #expect(dispatcher.counters.count(.software, sha1) == 0)
        #expect(dispatcher.counters.calls.isEmpty)
        await onThreads(3) { _ in for _ in 0..<7 { _ = try? dispatcher.digest(.sha1, [1]) } }
        _ = try dispatcher.digest(.sha1, [1])
        #expect(dispatcher.counters.count(.software, sha1) == 22)
    }

    @Test("two dispatchers used in turn on one thread each count only their own calls")
    func twoDispatchersOneThread() async throws {
        let first = Dispatcher(DispatchConfiguration(policy: .software))
        let second = Dispatcher(DispatchConfiguration(policy: .software))
        await onThreads(2) { _ in
            for round in 0..<300 {
                _ = try? (round % 3 == 0 ? second : first).digest(.sha1, [UInt8(truncatingIfNeeded: round)])
            }
        }
        #expect(first.counters.count(.software, sha1) == 400)
        #expect(second.counters.count(.software, sha1) == 200)
    }

    @Test("a dispatcher made after another is gone starts from zero, on a thread that counted for the old one")
    func newDispatcherStartsAtZero() throws {
        // One thread throughout (this test's), so its blocks of the old dispatcher are the ones left behind.
        do {
            let old = Dispatcher(DispatchConfiguration(policy: .software))
            for _ in 0..<10 { _ = try old.digest(.sha256, [9]) }
            #expect(old.counters.count(.software, sha256) == 10)
        }
        let new = Dispatcher(DispatchConfiguration(policy: .software))
        #expect(new.counters.calls.isEmpty)
        _ = try new.digest(.sha256, [9])
        #expect(new.counters.count(.software, sha256) == 1)
    }
}
