import NetworkFetch

/// The network as one evaluation uses it: each fetch within its own timeout and within what is left of the
/// evaluation's network time (``TrustBudget/networkTime``), so that however many certificates a path has, the
/// evaluation's fetches end by one deadline; a fetch the task's cancellation ends cancels the evaluation.
struct EvaluationNetwork: Sendable {
    let network: any NetworkFetching
    /// When the evaluation's fetches must have ended (nil: each fetch its own timeout only).
    let deadline: ContinuousClock.Instant?

    init(_ network: any NetworkFetching, time: Duration?) {
        self.network = network
        deadline = time.map { ContinuousClock.now + $0 }
    }

    /// The answer to `request`, or nil: it failed, timed out, or the evaluation's network time is spent (no answer,
    /// which the caller reads as its policy says). Throws `CancellationError` when the task was cancelled.
    func fetch(_ request: FetchRequest) async throws(CancellationError) -> [UInt8]? {
        var request = request
        if let deadline {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            request.timeout = min(request.timeout, left)
        }
        do {
            return try await network.fetch(request)
        } catch where error.kind == .cancelled || Task.isCancelled {
            throw CancellationError()
        } catch {
            return nil
        }
    }
}
