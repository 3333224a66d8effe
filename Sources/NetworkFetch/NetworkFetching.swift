import Dispatch
public import SecurityBase

/// One HTTP exchange the PKI services make: an OCSP request, a CRL or a caIssuers download, a SCEP message.
public struct FetchRequest: Sendable, Hashable {
    /// `http://host[:port]/path[?query]`; only plain HTTP (OCSP, CRLs, AIA and SCEP protect their own content).
    public var url: String
    /// The POST body, `nil` for a GET.
    public var body: [UInt8]?
    /// The POST body's `Content-Type`.
    public var contentType: String?
    /// The whole exchange — name resolution, connection, request and answer — ends within this time.
    public var timeout: Duration
    /// The longest answer body accepted; a longer one is ``FetchError/Kind/tooLarge``.
    public var maximumLength: Int

    public init(
        url: String, body: [UInt8]? = nil, contentType: String? = nil, timeout: Duration = .seconds(5),
        maximumLength: Int = 1 << 20
    ) {
        self.url = url
        self.body = body
        self.contentType = contentType
        self.timeout = timeout
        self.maximumLength = maximumLength
    }
}

/// Why an exchange gave no answer.
public struct FetchError: CodedError {
    public enum Kind: String, Sendable, Hashable, CustomStringConvertible {
        /// Not an `http://` URL with a host.
        case badURL = "not an http:// URL"
        /// The name did not resolve.
        case unresolved = "the name does not resolve"
        /// No connection (refused, reset, unreachable), or it closed before a whole answer.
        case unreachable = "unreachable"
        /// The timeout passed first (in resolution, connection or transfer).
        case timeout = "no answer within the timeout"
        /// The server answered with a status other than 2xx (``FetchError/detail`` is the status).
        case status = "HTTP error status"
        /// The answer is not HTTP this client reads.
        case malformed = "not an HTTP answer"
        /// The answer is longer than the request allows.
        case tooLarge = "the answer is too large"
        /// The task was cancelled.
        case cancelled = "cancelled"

        public var description: String { rawValue }
    }

    public let kind: Kind
    /// The errno (``Kind/unreachable``), the HTTP status (``Kind/status``), or 0.
    public let detail: Int32
    public let location: ErrorLocation

    public init(_ kind: Kind, _ detail: Int32 = 0, file: StaticString = #fileID, line: UInt = #line) {
        self.kind = kind
        self.detail = detail
        location = ErrorLocation(fileID: file, line: line)
    }

    /// What went wrong: equal errors are of the same kind, whatever their detail.
    public var code: Kind { kind }
    public var reason: String { detail == 0 ? kind.rawValue : "\(kind.rawValue) (\(detail))" }
    public var description: String { reason }
}

/// Where the PKI services' network I/O goes: OCSP, CRL and caIssuers fetches of the trust evaluator and SCEP
/// enrollment. The default is ``SocketFetcher``; tests and applications inject their own (a proxy, a cache, a
/// fake).
public protocol NetworkFetching: Sendable {
    /// The answer body of `request`, within its timeout; honours task cancellation.
    func fetch(_ request: FetchRequest) async throws(FetchError) -> [UInt8]
}

/// The executor network work prefers (fetches, trust evaluation): jobs run on Dispatch's threads, not on Swift's
/// cooperative pool, so a pool kept busy by blocking work elsewhere in the process cannot hold network work past its
/// deadline. Nothing on the shared executor blocks: work that may (a synchronous judge or evaluation waiting in
/// ``wait(_:)``) runs on an executor of its own (``dedicated()``).
public final class NetworkExecutor: TaskExecutor {
    public static let shared = NetworkExecutor()
    /// Where the jobs run.
    private let queue: DispatchQueue

    private init(queue: DispatchQueue = DispatchQueue(label: "SecurityServices.network", attributes: .concurrent)) {
        self.queue = queue
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// An executor of its own for work that may block while it waits (a TLS handshake whose judge evaluates trust
    /// synchronously, Apple's asynchronous trust calls over the synchronous evaluation): a serial queue that
    /// libdispatch serves from its overcommitting pool, so a blocked job holds a thread of its own, never one of the
    /// shared executor's few. One serial queue keeps the work on one thread at a time, so what it allocates and frees
    /// stays in one malloc arena.
    public static func dedicated() -> NetworkExecutor {
        NetworkExecutor(queue: DispatchQueue(label: "SecurityServices.network.dedicated"))
    }

    /// Runs async work for a synchronous API (Apple's `SecTrustEvaluateWithError` is synchronous and may fetch; so
    /// is a TLS handshake's judge): blocks the calling thread until `work` ends. The one place a synchronous caller
    /// waits for network I/O; everything beneath it is async.
    ///
    /// The work runs on an executor of its own (``dedicated()``): never on the calling thread nor on the cooperative
    /// pool, so a caller on the pool cannot starve what it waits for.
    public static func wait<R: Sendable>(_ work: @escaping @Sendable () async throws -> R) throws -> R {
        let outcome = Outcome<R>()
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: dedicated()) {
            do {
                outcome.set(.success(try await work()))
            } catch {
                outcome.set(.failure(error))
            }
            done.signal()
        }
        done.wait()
        return try outcome.get()
    }
}

/// The result ``NetworkExecutor/wait(_:)`` hands from its task to the waiting thread (written once, before the
/// semaphore is signalled, read once after).
private final class Outcome<R: Sendable>: @unchecked Sendable {
    // @unchecked: written by the task before `done.signal()`, read by the waiter after `done.wait()`: the
    // semaphore orders the two.
    private var result: Result<R, any Error> = .failure(CancellationError())
    func set(_ result: Result<R, any Error>) { self.result = result }
    func get() throws -> R { try result.get() }
}
