import CEpoll
import Foundation
import Synchronization

/// Where the network's sockets wait: a thread that waits in epoll for their readiness and for the waits' deadlines,
/// and that runs, as a task executor, the jobs given to it. A connection whose steps prefer its loop is woken once
/// per event, on the thread that saw it, as a blocking socket's thread is by the kernel (a Dispatch event source
/// wakes libdispatch's event thread, which wakes a queue's). One loop per processor; a connection keeps to one.
///
/// Nothing that blocks runs on a loop: a step that may (a TLS judge that waits for its fetches) runs on an executor
/// of its own, and only its waits are the loop's.
package final class EventLoop: TaskExecutor, @unchecked Sendable {
    // @unchecked: `epoll` and `wake` are fixed descriptors; everything that changes is in `state`.

    /// The loops, one per processor.
    package static let loops: [EventLoop] = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map { _ in EventLoop() }
    private static let turn = Atomic<Int>(0)

    /// The loop a new connection keeps to, in turn.
    package static func next() -> EventLoop {
        loops[Int(UInt(bitPattern: turn.wrappingAdd(1, ordering: .relaxed).oldValue) % UInt(loops.count))]
    }

    /// A wait for a descriptor's readiness: until when, and how it ends (nil: ready).
    private struct Waiter {
        let deadline: ContinuousClock.Instant
        let finish: @Sendable (FetchError?) -> Void
    }

    private struct State {
        var jobs: [UnownedJob] = []
        /// One wait per descriptor at a time (a connection waits one way at a time).
        var waiters: [Int32: Waiter] = [:]
        /// The descriptors epoll knows (later waits re-arm them).
        var registered: Set<Int32> = []
        /// Whether the loop sleeps in epoll (then a new job, or a deadline before `until`, must wake it).
        var sleeping = false
        var until: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    /// The loop's thread (`pthread_self`), once it runs.
    private let thread = Atomic<UInt>(0)
    private let epoll: Int32
    private let wake: Int32

    private init() {
        epoll = cepoll_create()
        wake = ceventfd_create()
        // A loop that cannot be made is a process that cannot use the network: say so at once.
        precondition(epoll >= 0 && wake >= 0 && cepoll_control(epoll, CEPOLL_ADD, wake, CEPOLL_IN) == 0, "no event loop: \(errno)")
        Thread { [self] in run() }.start()
    }

    /// Whether this runs on the loop's thread.
    package var isCurrent: Bool { thread.load(ordering: .acquiring) == UInt(pthread_self()) }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let sleeping = state.withLock { state in
            state.jobs.append(job)
            defer { state.sleeping = false }
            return state.sleeping
        }
        if sleeping { poke() }
    }

    /// Waits until `fd` is readable or writable, `deadline` passes, or the task is cancelled.
    /// - Throws: ``FetchError`` `.timeout`, `.cancelled`, `.unreachable` when epoll refuses the descriptor.
    package func wait(_ fd: Int32, writable: Bool, deadline: ContinuousClock.Instant) async throws(FetchError) {
        if Task.isCancelled { throw FetchError(.cancelled) }
        let failure: FetchError? = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<FetchError?, Never>) in
                let resumed = Atomic<Bool>(false)
                register(fd, writable: writable, deadline: deadline) { failure in
                    if !resumed.exchange(true, ordering: .acquiringAndReleasing) { continuation.resume(returning: failure) }
                }
                // A cancellation that came before the wait was registered found nothing to end.
                if Task.isCancelled { end(fd, FetchError(.cancelled)) }
            }
        } onCancel: {
            end(fd, FetchError(.cancelled))
        }
        if let failure { throw failure }
    }

    /// Ends the wait on `fd`, if any, and forgets the descriptor: before it is closed.
    package func forget(_ fd: Int32) {
        let waiter = state.withLock { state -> Waiter? in
            if state.registered.remove(fd) != nil { _ = cepoll_control(epoll, CEPOLL_DEL, fd, 0) }
            return state.waiters.removeValue(forKey: fd)
        }
        waiter?.finish(FetchError(.cancelled))
    }

    private func register(_ fd: Int32, writable: Bool, deadline: ContinuousClock.Instant, finish: @escaping @Sendable (FetchError?) -> Void) {
        let (refused, sleeping): (FetchError?, Bool) = state.withLock { state in
            guard state.waiters[fd] == nil else { return (FetchError(.unreachable, EBUSY), false) }
            let events = (writable ? CEPOLL_OUT : CEPOLL_IN) | CEPOLL_ONESHOT
            // A descriptor closed without ``forget(_:)`` left epoll by itself: its number may be a new socket's.
            var armed = state.registered.contains(fd) && cepoll_control(epoll, CEPOLL_MOD, fd, events) == 0
            if !armed { armed = cepoll_control(epoll, CEPOLL_ADD, fd, events) == 0 }
            guard armed else { return (FetchError(.unreachable, errno), false) }
            state.registered.insert(fd)
            state.waiters[fd] = Waiter(deadline: deadline, finish: finish)
            // The loop sleeps past this deadline: it must look again.
            guard state.sleeping, state.until.map({ deadline < $0 }) ?? true else { return (nil, false) }
            state.sleeping = false
            return (nil, true)
        }
        if let refused { finish(refused) }
        if sleeping { poke() }
    }

    private func end(_ fd: Int32, _ failure: FetchError) {
        state.withLock { $0.waiters.removeValue(forKey: fd) }?.finish(failure)
    }

    private func poke() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// The loop: the jobs given, then the events and deadlines due, sleeping in epoll when there is nothing to do.
    private func run() {
        thread.store(UInt(pthread_self()), ordering: .releasing)
        let executor = asUnownedTaskExecutor()
        let capacity: Int32 = 64
        var fds = [Int32](repeating: 0, count: Int(capacity))
        var events = [UInt32](repeating: 0, count: Int(capacity))
        while true {
            let (jobs, timeout) = state.withLock { state -> ([UnownedJob], Int32) in
                if !state.jobs.isEmpty {
                    defer { state.jobs.removeAll(keepingCapacity: true) }
                    return (state.jobs, 0)
                }
                let earliest = state.waiters.values.lazy.map(\.deadline).min()
                state.sleeping = true
                state.until = earliest
                return ([], earliest.map(Self.milliseconds(until:)) ?? -1)
            }
            for job in jobs { job.runSynchronously(on: executor) }
            let count = fds.withUnsafeMutableBufferPointer { fds in
                events.withUnsafeMutableBufferPointer { events in
                    cepoll_wait_many(epoll, timeout, fds.baseAddress, events.baseAddress, capacity)
                }
            }
            let now = ContinuousClock.now
            let due = state.withLock { state -> [(Waiter, FetchError?)] in
                state.sleeping = false
                var due: [(Waiter, FetchError?)] = []
                for index in 0..<max(0, Int(count)) where fds[index] != wake {
                    if let waiter = state.waiters.removeValue(forKey: fds[index]) { due.append((waiter, nil)) }
                }
                for (fd, waiter) in state.waiters where waiter.deadline <= now {
                    state.waiters[fd] = nil
                    due.append((waiter, FetchError(.timeout)))
                }
                return due
            }
            if (0..<max(0, Int(count))).contains(where: { fds[$0] == wake }) {
                var value: UInt64 = 0
                _ = read(wake, &value, 8)
            }
            for (waiter, failure) in due { waiter.finish(failure) }
        }
    }

    /// Milliseconds from now to `deadline`, rounded up (epoll's unit), at least 0.
    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
