import CDispatcherThreadState
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// The dispatcher's calls served, per slot (route and backend), counted by each thread in a block of its own.
///
/// A shared atomic counter costs a locked increment per call: a full barrier that waits for the call's stores to
/// drain. A thread instead increments its own block with a plain load and store (relaxed atomics: one writer, readers
/// anywhere), found through one C thread-local pointer (one load, where a pthread key is a lazy initializer and a
/// call). Reading sums the live blocks and what exited threads left; a reset records the current sums as the new
/// zero, so counts stay exact while other threads count.
struct CallCounts: ~Copyable {
    /// Process-unique (never reused), so a thread's blocks of a dispatcher that is gone are never taken for another's.
    let id: Int
    let slots: Int

    init(slots: Int) {
        self.slots = slots
        id = CallCountRegistry.register(slots: slots)
    }

    deinit { CallCountRegistry.unregister(id) }

    /// One more call in `slot`: when this thread counted for this dispatcher last, a compare and an increment, the
    /// id and the block read straight from the thread-locals.
    @inline(__always)
    func increment(_ slot: Int) {
        if Self.isLast(id) {
            Self.incrementLast(slot)
        } else {
            CallCountRegistry.incrementSlowly(id, slots: slots, slot)
        }
    }

    /// Whether this thread counted last for the dispatcher whose id is `key` (`Int.min`, no dispatcher's: never).
    @inline(__always)
    static func isLast(_ key: Int) -> Bool { dispatcher_last_id() == key }

    /// One more call in `slot` of the block of the dispatcher this thread counted for last: only after ``isLast(_:)``
    /// said that dispatcher is the caller's.
    @inline(__always)
    static func incrementLast(_ slot: Int) {
        let block = dispatcher_last_block().unsafelyUnwrapped.assumingMemoryBound(to: Atomic<Int>.self)
        block[slot].store(block[slot].load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    /// Calls per slot since the last reset.
    func values() -> [Int] { CallCountRegistry.values(id) }

    /// Makes the current counts the new zero.
    func reset() { CallCountRegistry.reset(id) }
}

/// What a thread keeps: its block per dispatcher. The last one used is in the thread-locals
/// (`dispatcher_last_id`, `dispatcher_last_block`), the hot path's only lookup.
struct ThreadCallCounts {
    var blocks: [Int: UnsafeMutablePointer<Atomic<Int>>] = [:]
}

/// The blocks of every dispatcher, behind one lock taken only off the hot path: a thread's first count for a
/// dispatcher, reads, resets, thread exit and a dispatcher's end.
enum CallCountRegistry {
    /// A thread's block, as the registry holds it: read under the lock, freed only by its thread.
    struct Block: @unchecked Sendable, Equatable {
        let counts: UnsafeMutablePointer<Atomic<Int>>
    }

    struct Counts {
        var blocks: [Block] = []
        /// What threads that exited had counted.
        var retired: [Int]
        /// The sums at the last reset.
        var zero: [Int]
    }

    struct State {
        var nextID = 0
        var live: [Int: Counts] = [:]
    }

    /// The registry's state behind a pthread mutex (NSLock). Not `Mutex`: the threads that count are often plain
    /// threads with nothing else between them, and ThreadSanitizer does not see the standard library's futex lock
    /// (it reported every access under it as a race); it does see pthread's.
    private final class Locked: @unchecked Sendable {
        // @unchecked: `value` is only touched inside `withLock`.
        private let lock = NSLock()
        private var value = State()

        func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
            lock.lock()
            defer { lock.unlock() }
            return try body(&value)
        }
    }
    private static let locked = Locked()

    /// The thread-specific key; its destructor hands an exiting thread's counts to their dispatchers.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { raw in
            guard let raw else { return }
            CallCountRegistry.threadExited(raw.assumingMemoryBound(to: ThreadCallCounts.self))
        }
        precondition(status == 0, "pthread_key_create failed: the process is out of thread-specific keys")
        return key
    }()

    @inline(__always)
    static func threadState() -> UnsafeMutablePointer<ThreadCallCounts>? {
        dispatcher_thread_state()?.assumingMemoryBound(to: ThreadCallCounts.self)
    }

    static func register(slots: Int) -> Int {
        locked.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.live[id] = Counts(retired: Array(repeating: 0, count: slots), zero: Array(repeating: 0, count: slots))
            return id
        }
    }

    /// The dispatcher is gone: threads free their blocks of it the next time they take a new block, or at exit.
    static func unregister(_ id: Int) {
        _ = locked.withLock { $0.live.removeValue(forKey: id) }
    }

    /// The first count of this thread for dispatcher `id`, or one after counting for another dispatcher.
    @inline(never)
    static func incrementSlowly(_ id: Int, slots: Int, _ slot: Int) {
        let thread: UnsafeMutablePointer<ThreadCallCounts>
        if let existing = threadState() {
            thread = existing
        } else {
            thread = .allocate(capacity: 1)
            thread.initialize(to: ThreadCallCounts())
            // The key only for its destructor at thread exit; the hot path reads the thread-local.
            pthread_setspecific(key, thread)
            dispatcher_set_thread_state(thread)
        }
        let block: UnsafeMutablePointer<Atomic<Int>>
        if let existing = thread.pointee.blocks[id] {
            block = existing
        } else {
            block = .allocate(capacity: slots)
            for index in 0..<slots { (block + index).initialize(to: Atomic(0)) }
            let others = Array(thread.pointee.blocks.keys)
            let gone = locked.withLock { state in
                state.live[id]?.blocks.append(Block(counts: block))
                return others.filter { state.live[$0] == nil }
            }
            // Blocks of dispatchers that are gone: nobody reads them any more.
            for other in gone { thread.pointee.blocks.removeValue(forKey: other)?.deallocate() }
            thread.pointee.blocks[id] = block
        }
        dispatcher_set_last(id, block)
        block[slot].store(block[slot].load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    static func values(_ id: Int) -> [Int] {
        locked.withLock { state in
            guard let counts = state.live[id] else { return [] }
            return zip(sums(counts), counts.zero).map { $0 - $1 }
        }
    }

    static func reset(_ id: Int) {
        locked.withLock { state in
            guard let counts = state.live[id] else { return }
            state.live[id]?.zero = sums(counts)
        }
    }

    private static func sums(_ counts: Counts) -> [Int] {
        var sums = counts.retired
        for block in counts.blocks {
            for index in sums.indices { sums[index] &+= block.counts[index].load(ordering: .relaxed) }
        }
        return sums
    }

    private static func threadExited(_ thread: UnsafeMutablePointer<ThreadCallCounts>) {
        // A count from a later destructor of this thread starts a new state (and registers the key again).
        dispatcher_set_thread_state(nil)
        dispatcher_set_last(-1, nil)
        let blocks = thread.pointee.blocks.map { (id: $0.key, block: Block(counts: $0.value)) }
        locked.withLock { state in
            for (id, block) in blocks {
                if var counts = state.live[id] {
                    for index in counts.retired.indices { counts.retired[index] &+= block.counts[index].load(ordering: .relaxed) }
                    counts.blocks.removeAll { $0 == block }
                    state.live[id] = counts
                }
            }
        }
        for (_, block) in thread.pointee.blocks { block.deallocate() }
        thread.deinitialize(count: 1)
        thread.deallocate()
    }
}
