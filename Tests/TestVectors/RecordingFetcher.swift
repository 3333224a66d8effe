public import NetworkFetch
import Synchronization

/// A fetcher tests inject where the PKI services do HTTP: it records every request, then answers through the
/// socket fetcher (to a real loopback peer) or fails as told.
public final class RecordingFetcher: NetworkFetching {
    private let recorded = Mutex<[FetchRequest]>([])
    private let failure: FetchError?

    public init(failing failure: FetchError? = nil) { self.failure = failure }

    /// The requests so far, in order.
    public var requests: [FetchRequest] { recorded.withLock { $0 } }

    public func fetch(_ request: FetchRequest) async throws(FetchError) -> [UInt8] {
        recorded.withLock { $0.append(request) }
        if let failure { throw failure }
        return try await SocketFetcher.shared.fetch(request)
    }
}
