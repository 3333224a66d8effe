import Dispatch
import Synchronization

/// Starts `work` in a task, cancels the task after `delay`, and waits for it: how it ended, and how long it took to
/// end once cancelled (the tests of cancellation check that a wait ended by it, not by its own timeout).
///
/// Neither the cancellation nor the time the work ended depends on the cooperative pool, which the full suite keeps
/// busy for minutes at a time: the cancellation comes from a Dispatch timer, and the work runs on a Dispatch queue
/// of its own, where its end is timed as it happens (this task may learn of it much later).
public func cancelling<T: Sendable>(
    after delay: Duration, _ work: @escaping @Sendable () async throws -> T
) async throws -> (outcome: Result<T, any Error>, afterCancel: Duration) {
    let times = Mutex<(cancelled: ContinuousClock.Instant?, ended: ContinuousClock.Instant?)>((nil, nil))
    let task = Task(executorPreference: QueueExecutor()) {
        defer { times.withLock { $0.ended = .now } }
        return try await work()
    }
    let (seconds, attoseconds) = delay.components
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) {
        times.withLock { $0.cancelled = .now }
        task.cancel()
    }
    let outcome = await task.result
    let (cancelled, ended) = times.withLock { $0 }
    guard let cancelled, let ended, cancelled < ended else { return (outcome, .zero) }
    return (outcome, cancelled.duration(to: ended))
}

/// A task executor on a serial Dispatch queue of its own (libdispatch's overcommitting pool serves it).
final class QueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "SecurityServices.tests.cancelling")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
