import Dispatch
import Synchronization

/// Starts `work` in a task, cancels the task after `delay`, and waits for it: how it ended, and how long it took to
/// end once cancelled (the tests of cancellation check that a wait ended by it, not by its own timeout).
///
/// The cancellation comes from a Dispatch timer, not from a sleeping task: the full suite keeps the cooperative pool
/// busy for longer than the work's own timeouts, and a sleep on it would cancel too late to test anything.
public func cancelling<T: Sendable>(
    after delay: Duration, _ work: @escaping @Sendable () async throws -> T
) async throws -> (outcome: Result<T, any Error>, afterCancel: Duration) {
    let task = Task { try await work() }
    let cancelled = Mutex<ContinuousClock.Instant?>(nil)
    let (seconds, attoseconds) = delay.components
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) {
        cancelled.withLock { $0 = .now }
        task.cancel()
    }
    let outcome = await task.result
    let ended = ContinuousClock.now
    return (outcome, cancelled.withLock { $0.map { $0.duration(to: ended) } } ?? .zero)
}
