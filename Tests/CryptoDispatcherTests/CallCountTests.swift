import CryptoContract
import CryptoDispatcher
import Foundation
import SoftwareBackend
import Synchronization
import Testing

/// The dispatcher's counters are kept per thread (no locked increment per call). They must stay exact:
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

    @Test("calls no backend can take (a dispatcher with none) give software's bytes and are counted exactly, per route and as 'other', on several threads")
    func nothingToRoute() async throws {
        // Auto with no offload backend: every kind of call takes the software-only path once the thread has counted
        // for this dispatcher (its first call takes the routed one).
        let dispatcher = Dispatcher(backends: [])
        let software = SoftwareBackend()
        let key = [UInt8](repeating: 0x11, count: 16)
        let key256 = [UInt8](repeating: 0x22, count: 32)
        let iv = [UInt8](repeating: 0x33, count: 16)
        let block = [UInt8](repeating: 0x44, count: 32)
        let rounds = 40
        let mismatches = Atomic<Int>(0)
        await onThreads(4) { _ in
            for round in 0..<rounds {
                let data = [UInt8(truncatingIfNeeded: round)] + block
                let pairs: [([UInt8]?, [UInt8]?)] = [
                    (try? dispatcher.digest(.sha1, data), try? software.digest(.sha1, data)),
                    (try? dispatcher.digest(.sha256, data), try? software.digest(.sha256, data)),
                    (try? dispatcher.digest(.md2, data), try? software.digest(.md2, data)),
                    (try? dispatcher.hmac(.sha1, key: key, data), try? software.hmac(.sha1, key: key, data)),
                    (try? dispatcher.hmac(.sha512, key: key, data), try? software.hmac(.sha512, key: key, data)),
                    (
                        try? dispatcher.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key, iv: iv, block),
                        try? software.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key, iv: iv, block)
                    ),
                    (
                        try? dispatcher.crypt(.decrypt, CipherSpec(.aes256, .ecb), key: key256, iv: nil, block),
                        try? software.crypt(.decrypt, CipherSpec(.aes256, .ecb), key: key256, iv: nil, block)
                    ),
                    (
                        try? dispatcher.crypt(.encrypt, CipherSpec(.rc4, .stream), key: key, iv: nil, data),
                        try? software.crypt(.encrypt, CipherSpec(.rc4, .stream), key: key, iv: nil, data)
                    ),
                ]
                for (ours, theirs) in pairs where ours == nil || ours != theirs { mismatches.add(1, ordering: .relaxed) }
            }
        }
        #expect(mismatches.load(ordering: .relaxed) == 0)
        let calls = 4 * rounds
        let counters = dispatcher.counters
        #expect(counters.count(.software, sha1) == calls)
        #expect(counters.count(.software, sha256) == calls)
        #expect(counters.count(.software, Route.hmac(.sha1)!) == calls)
        #expect(counters.count(.software, Route.hmac(.sha512)!) == calls)
        #expect(counters.count(.software, Route.cipher(.aes128, .cbc, .encrypt)!) == calls)
        #expect(counters.count(.software, Route.cipher(.aes256, .ecb, .decrypt)!) == calls)
        // MD2 and RC4 have no route: "other".
        #expect(counters.count(.software, nil) == 2 * calls)
        #expect(counters.total(.software) == 8 * calls)
    }

    @Test("a call refused for a short output is counted nowhere, on the path of calls that cannot leave software")
    func refusedIsNotCounted() throws {
        let dispatcher = Dispatcher(backends: [])
        let key = [UInt8](repeating: 0x11, count: 16)
        let data = [UInt8](repeating: 0x44, count: 32)
        // A first call of each kind makes this thread's count block the dispatcher's: the calls below take the
        // software-only path.
        _ = try dispatcher.digest(.sha1, data)
        _ = try dispatcher.hmac(.sha1, key: key, data)
        _ = try dispatcher.crypt(.encrypt, CipherSpec(.aes128, .ecb), key: key, iv: nil, data)
        let before = dispatcher.counters
        var short = [UInt8](repeating: 0, count: 8)
        key.withUnsafeBytes { key in
            data.withUnsafeBytes { input in
                short.withUnsafeMutableBytes { output in
                    for algorithm in [DigestAlgorithm.sha1, .sha256, .md2] {
                        #expect(throws: CryptoError.self) { try dispatcher.digest(algorithm, input: input, output: output) }
                        #expect(throws: CryptoError.self) { try dispatcher.hmac(algorithm == .md2 ? .md5 : algorithm, key: key, input: input, output: output) }
                    }
                    #expect(throws: CryptoError.self) {
                        try dispatcher.crypt(.encrypt, CipherSpec(.aes128, .ecb), key: key, iv: nil, input: input, output: output)
                    }
                }
            }
        }
        #expect(short == [UInt8](repeating: 0, count: 8))
        #expect(dispatcher.counters == before)
        #expect(before.total(.software) == 3)
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
