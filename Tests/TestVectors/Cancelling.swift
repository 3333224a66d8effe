/// Starts `work` in a task, cancels the task after `delay`, and waits for it: how it ended, and how long it took to
/// end once cancelled (the tests of cancellation check that a wait ended by it, not by its own timeout).
public func cancelling<T: Sendable>(
    after delay: Duration, _ work: @escaping @Sendable () async throws -> T
) async throws -> (outcome: Result<T, any Error>, afterCancel: Duration) {
    let task = Task { try await work() }
    try await Task.sleep(for: delay)
    let cancelled = ContinuousClock.now
    task.cancel()
    let outcome = await task.result
    return (outcome, ContinuousClock.now - cancelled)
}
