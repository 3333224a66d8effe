public import CryptoContract
internal import COpenSSL
internal import COpenSSLShims
public import Certificates
import Dispatch
public import Foundation
import Synchronization
public import NetworkFetch
public import Trust

/// A protocol version this module speaks: TLS 1.2 and 1.3 only.
public enum TLSVersion: Int, Sendable, Comparable, CustomStringConvertible {
    case tls12 = 0x0303
    case tls13 = 0x0304

    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { self == .tls12 ? "TLS 1.2" : "TLS 1.3" }
}

/// A client certificate and its private key (used where it is, never written anywhere), with the intermediates
/// sent after it.
public struct TLSIdentity: Sendable {
    public var certificate: Certificate
    public var privateKey: AsymmetricKey
    public var chain: [Certificate]

    public init(certificate: Certificate, privateKey: AsymmetricKey, chain: [Certificate] = []) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.chain = chain
    }
}

/// How a client connection is made and whom it trusts. The server's chain is judged by the project's own
/// ``TrustEvaluator`` (not OpenSSL's verifier): its anchors, the SSL server policy for ``serverName`` (RFC 6125
/// names, the web-PKI profile), revocation when asked, and trust settings are those of `Trust`.
public struct TLSConfiguration: Sendable {
    /// The anchors a server chain must reach: the system's (`SystemAnchors.all`) or the application's own.
    public var anchors: [Certificate]
    /// The name the server must prove (and the SNI sent). Nil is refused when the connection opens
    /// (`.invalidConfiguration`) unless ``checksChainOnly`` is set or a ``serverJudge`` checks names itself: a client
    /// that checks no name accepts every server its anchors vouch for.
    public var serverName: String?
    /// The named opt-out from the name check when ``serverName`` is nil: the server's chain alone is judged (anchors,
    /// profile, revocation, trust settings), whatever name it proves. With a ``serverName`` the name is checked anyway.
    public var checksChainOnly = false
    /// Revocation checking of the server's chain (nil: none).
    public var revocation: RevocationPolicy?
    /// The certificate the client presents when the server asks.
    public var identity: TLSIdentity?
    /// ALPN protocols offered, most preferred first.
    public var applicationProtocols: [String]
    public var minimumVersion: TLSVersion
    public var maximumVersion: TLSVersion
    /// Name resolution, connection and handshake end within this time, all three together; then each read or write.
    public var timeout: Duration
    /// Resolves the host's name (default `getaddrinfo`, NetworkFetch's); it runs on a thread of its own and is
    /// abandoned, not waited for, when the timeout passes (`getaddrinfo` cannot be interrupted).
    public var resolver: SocketFetcher.Resolver = SocketFetcher.systemResolver
    /// Sessions kept for resumption (nil: every connection makes a full handshake). A resumed connection's chain
    /// is the one presented when the session was made, judged under this configuration.
    public var sessionCache: TLSSessionCache?
    /// Judges the server's chain (leaf first) instead of ``anchors``, ``serverName``'s check and ``revocation``:
    /// returning accepts (with the evaluation the connection reports), throwing refuses (`.untrusted`, the error's
    /// description as the reason). The server is asked to staple its OCSP status (RFC 6066), and the judge runs
    /// once per full handshake, when that status is known: `stapledOCSPResponse` is the DER response the server
    /// stapled, or nil (none, or a resumed session). The certificate manager's validation comes this way
    /// (`CertificateManager.tlsConfiguration`). ``serverName`` is still sent as SNI.
    public var serverJudge: (@Sendable (_ chain: [Certificate], _ stapledOCSPResponse: Data?) throws -> TrustResult)?
    /// The user's and administrator's trust settings the server's chain is judged under, read at each handshake
    /// (default: the domains in effect where the configuration is made, ``TrustSettingsDomains/current``; nil
    /// consults none). A denial always counts; the certificates they trust are anchors only when ``anchors`` are
    /// the system's, never beside an application's own anchors.
    public var trustSettings: TrustSettingsDomains?

    public init(
        anchors: [Certificate] = SystemAnchors.all, serverName: String?, revocation: RevocationPolicy? = nil,
        identity: TLSIdentity? = nil, applicationProtocols: [String] = [], minimumVersion: TLSVersion = .tls12,
        maximumVersion: TLSVersion = .tls13, timeout: Duration = .seconds(30), sessionCache: TLSSessionCache? = nil,
        trustSettings: TrustSettingsDomains? = TrustSettingsDomains.current
    ) {
        self.trustSettings = trustSettings
        self.anchors = anchors
        self.serverName = serverName
        self.revocation = revocation
        self.identity = identity
        self.applicationProtocols = applicationProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.timeout = timeout
        self.sessionCache = sessionCache
    }
}

/// How a server connection is made: the identity it presents and whom it asks for a certificate.
public struct TLSServerConfiguration: Sendable {
    public var identity: TLSIdentity
    /// Whether to ask the client for a certificate (``TLSEngine/ClientAuthentication/require`` fails the handshake
    /// without one).
    public var clientAuthentication: TLSEngine.ClientAuthentication
    /// The anchors a client certificate must reach (SSL client policy).
    public var clientAnchors: [Certificate]
    /// ALPN: the first of these the client offered is chosen.
    public var applicationProtocols: [String]
    public var minimumVersion: TLSVersion
    public var maximumVersion: TLSVersion
    /// The handshake and each read or write end within this time.
    public var timeout: Duration
    /// The trust settings a client's chain is judged under, as ``TLSConfiguration/trustSettings`` (their denials
    /// and allowed errors; their anchors only when ``clientAnchors`` are the system's).
    public var trustSettings: TrustSettingsDomains?

    public init(
        identity: TLSIdentity, clientAuthentication: TLSEngine.ClientAuthentication = .none, clientAnchors: [Certificate] = [],
        applicationProtocols: [String] = [], minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion = .tls13,
        timeout: Duration = .seconds(30), trustSettings: TrustSettingsDomains? = TrustSettingsDomains.current
    ) {
        self.trustSettings = trustSettings
        self.identity = identity
        self.clientAuthentication = clientAuthentication
        self.clientAnchors = clientAnchors
        self.applicationProtocols = applicationProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.timeout = timeout
    }
}

/// Why a TLS connection failed or ended.
public struct TLSError: CodedError {
    public typealias Code = ErrorCode<TLSError>

    public let code: Code
    public let reason: String
    /// For ``Code/untrusted``: the evaluation of the server's chain.
    public let trust: TrustResult?

    public init(_ code: Code, _ reason: String, trust: TrustResult? = nil) {
        self.code = code
        self.reason = reason
        self.trust = trust
    }
}

extension ErrorCode where Domain == TLSError {
    /// A bad configuration (an empty ALPN name, a minimum above the maximum, an identity whose key is not its
    /// certificate's).
    public static let invalidConfiguration = Self(name: "invalidConfiguration")
    /// No connection: the name does not resolve, refused, unreachable.
    public static let unreachable = Self(name: "unreachable")
    /// The timeout passed.
    public static let timeout = Self(name: "timeout")
    /// The server's chain is not trusted for the server name (``TLSError/trust`` says why).
    public static let untrusted = Self(name: "untrusted")
    /// The handshake failed otherwise: no common version or cipher, the server refused our certificate, an
    /// alert (the reason quotes OpenSSL).
    public static let handshakeFailed = Self(name: "handshakeFailed")
    /// The peer sent something that is not TLS, a record that fails its integrity check, or closed mid-record.
    public static let protocolError = Self(name: "protocolError")
    /// The connection is closed (read or write after close).
    public static let closed = Self(name: "closed")
}

/// A TLS client connection over a TCP socket of its own, with libssl doing the protocol (a ``TLSEngine`` over the
/// socket) and this package's trust evaluator judging the server. The calls are `async`; a call waits for the peer on
/// the calling thread for at most ``callingThreadWaitMilliseconds``, and any longer wait goes on on a Dispatch thread
/// (never on the cooperative pool), bounded by the configuration's timeout. One reader and one writer at a time.
public final class TLSConnection: @unchecked Sendable {
    // @unchecked: the engine is only touched while holding `lock`; the rest is immutable or atomic.
    private let engine: TLSEngine
    private let socket: SocketTransport
    private let lock = NSLock()
    private let closed = Atomic<Bool>(false)

    /// The peer's certificates as sent, leaf first (a server's; a client's when it presented one).
    public let peerCertificates: [Certificate]
    /// The evaluation that admitted them: always for a client connection; for a server connection, when the client
    /// presented a certificate.
    public let trust: TrustResult?
    public let negotiatedVersion: TLSVersion
    /// The ALPN protocol the server chose, nil when none.
    public let applicationProtocol: String?
    /// Whether the handshake resumed a session from the configuration's ``TLSConfiguration/sessionCache``.
    public let sessionReused: Bool

    private init(engine: TLSEngine, socket: SocketTransport, trust: TrustResult?) {
        self.engine = engine
        self.socket = socket
        self.trust = trust
        peerCertificates = engine.peerCertificates
        negotiatedVersion = engine.negotiatedVersion ?? .tls12
        applicationProtocol = engine.selectedApplicationProtocol
        sessionReused = engine.sessionReused
    }

    /// Sends `bytes` whole. What the socket takes at once is sent on the calling thread without waiting (a request
    /// usually fits its buffer); only the rest waits, on a Dispatch thread.
    public func write(_ bytes: [UInt8]) async throws {
        let sent = try lock.withLock { () throws -> Int in
            guard !closed.load(ordering: .relaxed) else { throw TLSError(.closed, "the connection is closed") }
            socket.dontWait = true
            defer { socket.dontWait = false }
            let (count, step) = bytes.withUnsafeBytes { engine.write($0) }
            guard step == .done || step == .wouldBlock else { throw Self.error(step, "write", handshakeDone: true) }
            return count
        }
        guard sent < bytes.count else { return }
        try await Self.offPool { [self] in
            try lock.withLock {
                // The rest, from the first byte not taken (libssl may hold part of it in a record it is still
                // sending: it takes the same bytes again).
                let (_, step) = bytes.withUnsafeBytes { engine.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
                if step != .done { throw Self.error(step, "write", handshakeDone: true) }
            }
        }
    }

    /// Up to `maximumCount` bytes of application data: at least one byte (waiting within the timeout), then what
    /// has already arrived; empty when the server closed the connection cleanly (close_notify). A connection cut
    /// mid-record is `.protocolError`, never a short answer. What has already arrived is read on the calling thread;
    /// only a read that must wait goes to a Dispatch thread.
    public func read(maximumCount: Int = 16_384) async throws -> [UInt8] {
        if let ready = try available(maximumCount, waiting: false) { return ready }
        // A reply to what was just sent usually arrives within the peer's turn: waited for here, a bounded while, it
        // costs the one wake-up a blocking read costs, where the hop to a Dispatch thread and back costs two more.
        if socket.awaitReadable(withinMilliseconds: Self.callingThreadWaitMilliseconds), let ready = try available(maximumCount, waiting: false) {
            return ready
        }
        return try await Self.offPool { [self] in try available(maximumCount, waiting: true) ?? [] }
    }

    /// How long a read waits for data on the calling thread before it hands the wait to a Dispatch thread: poll(2)'s
    /// smallest wait, about what one RSA-2048 signature of a handshake holds a thread for here, so a read holds the
    /// cooperative pool no longer than the computation beside it does.
    static let callingThreadWaitMilliseconds: Int32 = 1

    /// The bytes a read returns; nil when nothing has arrived and `waiting` is false.
    private func available(_ maximumCount: Int, waiting: Bool) throws -> [UInt8]? {
        try lock.withLock {
            guard !closed.load(ordering: .relaxed) else { throw TLSError(.closed, "the connection is closed") }
            var buffer = [UInt8](repeating: 0, count: max(1, maximumCount))
            socket.dontWait = !waiting
            defer { socket.dontWait = false }
            let (first, step) = buffer.withUnsafeMutableBytes { engine.read(into: $0) }
            guard first > 0 else {
                if step == .failed(.closedGraceful) { return [] }
                if !waiting && step == .wouldBlock { return nil }
                throw Self.error(step, "read", handshakeDone: true)
            }
            // Then whatever more has already arrived, without waiting (one record per engine read): a stop or an
            // error is for the next call to report.
            var total = first
            socket.dontWait = true
            while total < buffer.count {
                let (count, _) = buffer.withUnsafeMutableBytes { engine.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[total...])) }
                guard count > 0 else { break }
                total += count
            }
            return Array(buffer[..<total])
        }
    }

    /// Reads until the server closes the connection (at most `limit` bytes).
    public func readToEnd(limit: Int = 1 << 20) async throws -> [UInt8] {
        var all: [UInt8] = []
        while all.count < limit {
            let chunk = try await read(maximumCount: min(limit - all.count, 1 << 20))
            if chunk.isEmpty { break }
            all += chunk
        }
        return all
    }

    /// Sends close_notify (when the socket takes it at once: a closing side does not wait) and closes the socket's
    /// sending side.
    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        lock.withLock {
            socket.dontWait = true
            _ = engine.close()
            socket.dontWait = false
            shutdown(socket.fd, Int32(SHUT_WR))
        }
    }

    // MARK: Opening

    /// libssl writes through our transport with send(2) and MSG_NOSIGNAL, but a process may still meet a closed
    /// peer elsewhere through libssl; SIGPIPE is ignored once, process-wide, before the first connection (a write
    /// then fails with EPIPE instead).
    private static let sigpipeIgnored: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// Connects to `host`:`port` and completes the handshake.
    /// - Throws: ``TLSError``: `.untrusted` (with the evaluation), `.handshakeFailed`, `.unreachable`, `.timeout`,
    ///   `.invalidConfiguration`, `.protocolError`.
    public static func connect(host: String, port: UInt16, configuration: TLSConfiguration) async throws -> TLSConnection {
        _ = sigpipeIgnored
        guard configuration.serverName != nil || configuration.checksChainOnly || configuration.serverJudge != nil else {
            throw TLSError(
                .invalidConfiguration,
                "no server name to check: set serverName to the name the server must prove, or checksChainOnly to judge its chain alone")
        }
        let opening = ClientOpening(host: host, port: port, configuration)
        // One deadline for resolution, connection and handshake.
        let deadline = ContinuousClock.now + configuration.timeout
        // An address literal needs no resolver (which may block on the network): the connection is opened and the
        // handshake run on the calling thread, each wait for the peer bounded as a read's is
        // (``callingThreadWaitMilliseconds``); whatever must wait longer goes on on a Dispatch thread.
        if host.isIPAddressLiteral {
            let started = try startHere(host: host, port: port, opening)
            if let step = started.step { return try opening.finish(started.engine, started.socket, step) }
            return try await offPool {
                try Socket.awaitConnected(started.socket.fd, host: host, port: port, until: deadline)
                return try started.socket.until(deadline) { try opening.finish(started.engine, started.socket, started.engine.handshake()) }
            }
        }
        return try await offPool {
            let fd = try Socket.connect(host: host, port: port, until: deadline, resolver: configuration.resolver)
            let socket = SocketTransport(fd: fd)
            socket.setTimeout(configuration.timeout)
            let engine = try makeEngine(opening.settings, socket)
            return try socket.until(deadline) { try opening.finish(engine, socket, engine.handshake()) }
        }
    }

    /// A connection to an address literal, started on the calling thread: the handshake's step when it stopped
    /// without waiting longer than ``callingThreadWaitMilliseconds`` at a time, nil when it must wait longer.
    /// @unchecked: made here, then used by one thread at a time (this one, then the Dispatch thread it hands over to).
    private final class StartedHere: @unchecked Sendable {
        let socket: SocketTransport
        let engine: TLSEngine
        let step: TLSEngine.Step?

        init(socket: SocketTransport, engine: TLSEngine, step: TLSEngine.Step?) {
            self.socket = socket
            self.engine = engine
            self.step = step
        }
    }

    private static func startHere(host: String, port: UInt16, _ opening: ClientOpening) throws -> StartedHere {
        let configuration = opening.configuration
        let socket = SocketTransport(fd: try Socket.startConnecting(host: host, port: port))
        socket.setTimeout(configuration.timeout)
        let engine = try makeEngine(opening.settings, socket)
        guard Socket.awaitWritable(socket.fd, withinMilliseconds: callingThreadWaitMilliseconds) else {
            return StartedHere(socket: socket, engine: engine, step: nil)
        }
        try Socket.awaitConnected(socket.fd, host: host, port: port, until: .now)
        // OpenSSL's error queue is per thread, emptied around the engine's work here as a Dispatch thread's is.
        ERR_clear_error()
        defer { ERR_clear_error() }
        socket.dontWait = true
        defer { socket.dontWait = false }
        var step = engine.handshake()
        while step == .wouldBlock, socket.awaitReadable(withinMilliseconds: callingThreadWaitMilliseconds) {
            step = engine.handshake()
        }
        return StartedHere(socket: socket, engine: engine, step: step == .wouldBlock ? nil : step)
    }

    /// A client connection being opened: the engine's settings, and the judgement of the server they lead to.
    /// @unchecked: used by one opening at a time, its steps one after the other (the engine's callbacks run
    /// inside its handshake).
    private final class ClientOpening: @unchecked Sendable {
        let configuration: TLSConfiguration
        let settings: TLSEngine.Settings
        private let judging: ServerJudging
        private var verdict: VerdictBox { judging.verdict }
        /// Whether the chain is judged when the server's certificate status is known (a revocation policy or a
        /// judge of the configuration's), rather than when its certificates arrive.
        private let judgedAtStatus: Bool

        init(host: String, port: UInt16, _ configuration: TLSConfiguration) {
            self.configuration = configuration
            let judging = ServerJudging(configuration: configuration, verdict: VerdictBox())
            self.judging = judging
            judgedAtStatus = configuration.revocation != nil || configuration.serverJudge != nil
            // The server's chain is judged by the project's trust evaluator, from the engine's verify callback;
            // with a revocation policy or a judge of the configuration's, once the server's status is known
            // instead (a response it stapled, RFC 6066, is used before any network fetch). Judged at status time,
            // the chain is still evaluated without revocation first (a bad chain fails before any revocation
            // work), unless the configuration's judge does it all in one call.
            var settings = TLSEngine.Settings(role: .client) { chain in
                configuration.serverJudge != nil ? .accept : judging.evaluate(chain, revocation: nil, stapled: nil)
            }
            if judgedAtStatus {
                settings.stapledStatusJudge = { chain, stapled in
                    judging.verdict.statusJudged = true
                    return judging.evaluate(chain, revocation: configuration.revocation, stapled: stapled.map { Data($0) })
                }
            }
            if let cache = configuration.sessionCache {
                let key = TLSSessionCache.Key(host: host, port: port, serverName: configuration.serverName)
                settings.resumption = cache.take(key)
                settings.sessionIssued = { cache.keep($0, for: key) }
            }
            settings.serverName = configuration.serverName
            settings.identity = configuration.identity
            settings.minimumVersion = configuration.minimumVersion
            settings.maximumVersion = configuration.maximumVersion
            settings.applicationProtocols = configuration.applicationProtocols
            self.settings = settings
        }

        private func evaluate(_ chain: [Certificate], revocation: RevocationPolicy?, stapled: Data?) -> TLSPeerVerdict {
            judging.evaluate(chain, revocation: revocation, stapled: stapled)
        }

        /// The connection once the handshake has stopped at `step`, or why there is none.
        func finish(_ engine: TLSEngine, _ socket: SocketTransport, _ step: TLSEngine.Step) throws -> TLSConnection {
            guard step == .done else {
                if let refusal = verdict.refusal { throw TLSError(.untrusted, "the server's chain is refused: \(refusal)") }
                if let result = verdict.result, !result.isTrusted {
                    throw TLSError(.untrusted, "the server's chain is not trusted: \(result.outcome)", trust: result)
                }
                throw error(step, "handshake", handshakeDone: false)
            }
            if engine.sessionReused {
                // No certificates were exchanged: the session's chain is judged under this configuration (a
                // judgement kept for the same chain, anchors and name holds; see ``ChainJudgements``), unless it
                // was at status time (libssl asks on resumption too; a refusal there stopped the handshake).
                if !verdict.statusJudged, case .reject(let result) = evaluate(engine.peerCertificates, revocation: configuration.revocation, stapled: nil) {
                    throw TLSError(.untrusted, "the resumed session's chain is not trusted here \(verdict.refusal ?? "")", trust: result)
                }
            } else if judgedAtStatus, !verdict.statusJudged {
                // libssl calls the status callback whenever status was asked for; should it not have, the
                // judgement runs here, before any data moves.
                if case .reject(let result) = evaluate(engine.peerCertificates, revocation: configuration.revocation, stapled: nil) {
                    if let refusal = verdict.refusal { throw TLSError(.untrusted, "the server's chain is refused: \(refusal)") }
                    throw TLSError(
                        .untrusted, "the server's chain is not trusted: \(result?.outcome.description ?? "no result")", trust: result)
                }
            }
            // !: a completed handshake ran the judge, which set the result.
            return TLSConnection(engine: engine, socket: socket, trust: verdict.result!)
        }
    }

    /// Completes a server handshake on an accepted TCP socket, which the connection owns from then on (closed when
    /// it is released, also when this throws). A client certificate, when asked for and sent, is evaluated under
    /// the SSL client policy against ``TLSServerConfiguration/clientAnchors``.
    /// - Throws: ``TLSError``: `.untrusted` (the client's chain, with the evaluation), `.handshakeFailed` (no
    ///   common version, a required client certificate missing, an alert), `.timeout`, `.protocolError`,
    ///   `.invalidConfiguration`.
    public static func accept(socket fd: Int32, configuration: TLSServerConfiguration) async throws -> TLSConnection {
        try await offPool {
            _ = sigpipeIgnored
            let socket = SocketTransport(fd: fd)
            socket.setTimeout(configuration.timeout)
            let verdict = VerdictBox()
            var settings = TLSEngine.Settings(role: .server) { chain in
                let trustSettings: TrustSettingsSet?
                do {
                    trustSettings = try configuration.trustSettings.flatMap { try TLSPeerVerdict.settings($0, anchors: configuration.clientAnchors) }
                } catch {
                    return .reject(nil)  // a settings file that cannot be read may hold a denial
                }
                let judged = TLSPeerVerdict.judging(
                    chain, with: TrustEvaluator(anchors: configuration.clientAnchors, policies: [.sslClient], trustSettings: trustSettings))
                verdict.result = judged.result
                return judged.verdict
            }
            settings.identity = configuration.identity
            settings.clientAuthentication = configuration.clientAuthentication
            settings.minimumVersion = configuration.minimumVersion
            settings.maximumVersion = configuration.maximumVersion
            settings.applicationProtocols = configuration.applicationProtocols
            let engine = try makeEngine(settings, socket)
            let step = engine.handshake()
            guard step == .done else {
                if let result = verdict.result, !result.isTrusted {
                    throw TLSError(.untrusted, "the client's chain is not trusted: \(result.outcome)", trust: result)
                }
                throw error(step, "handshake", handshakeDone: false)
            }
            return TLSConnection(engine: engine, socket: socket, trust: verdict.result)
        }
    }

    /// The certificates a server presents, leaf first, fetched by a handshake that judges nothing: the chain is
    /// captured when it arrives and the handshake is stopped there (the server gets an alert; no application data
    /// is sent). `security verify-cert --connect` evaluates what this returns.
    /// - Throws: ``TLSError``: `.unreachable`, `.timeout`, `.handshakeFailed` (the server sent no certificate, or
    ///   refused us before it did), `.invalidConfiguration`.
    public static func presentedCertificates(
        host: String, port: UInt16, serverName: String?, timeout: Duration = .seconds(30),
        resolver: @escaping SocketFetcher.Resolver = SocketFetcher.systemResolver
    ) async throws -> [Certificate] {
        let deadline = ContinuousClock.now + timeout
        return try await offPool {
            _ = sigpipeIgnored
            var settings = TLSEngine.Settings(role: .client) { _ in .reject(nil) }
            settings.serverName = serverName
            let socket = SocketTransport(fd: try Socket.connect(host: host, port: port, until: deadline, resolver: resolver))
            socket.setTimeout(timeout)
            socket.deadline = deadline
            let engine = try makeEngine(settings, socket)
            let step = engine.handshake()
            guard !engine.peerCertificates.isEmpty else {
                throw step == .done ? TLSError(.handshakeFailed, "the server presented no certificate") : error(step, "handshake", handshakeDone: false)
            }
            return engine.peerCertificates
        }
    }

    /// An engine over `socket`; settings it cannot use are `.invalidConfiguration`.
    private static func makeEngine(_ settings: TLSEngine.Settings, _ socket: SocketTransport) throws -> TLSEngine {
        do {
            return try TLSEngine(settings, transport: socket)
        } catch {
            throw TLSError(.invalidConfiguration, error.description)
        }
    }

    /// The error of a step that did not complete.
    private static func error(_ step: TLSEngine.Step, _ what: String, handshakeDone: Bool) -> TLSError {
        switch step {
        case .done: return TLSError(.protocolError, "\(what): no error")
        // The socket blocks, with send and receive timeouts: "would block" can only mean the timeout passed.
        case .wouldBlock: return TLSError(.timeout, "\(what): no answer within the timeout")
        case .peerAuthenticationPending: return TLSError(.handshakeFailed, "\(what): paused")
        case .failed(let failure):
            switch failure {
            case .transport(let code) where code == ETIMEDOUT: return TLSError(.timeout, "\(what): no answer within the timeout")
            case .transport(let code): return TLSError(.protocolError, "\(what): \(String(cString: strerror(code)))")
            case .untrusted: return TLSError(.untrusted, "\(what): the peer's chain is not trusted")
            // An alert from the server is a refusal, at the handshake or, with TLS 1.3's client authentication,
            // at the first read.
            case .alert(let description): return TLSError(.handshakeFailed, "\(what): the server sent alert \(description)")
            case .version: return TLSError(.handshakeFailed, "\(what): no protocol version both sides allow")
            case .closedAbort:
                return TLSError(handshakeDone ? .protocolError : .handshakeFailed, "\(what): the connection ended unexpectedly")
            case .closedGraceful: return TLSError(.closed, "\(what): the server closed the connection")
            case .protocolViolation(let reason):
                return TLSError(handshakeDone ? .protocolError : .handshakeFailed, "\(what): \(reason)")
            }
        }
    }

    /// Runs blocking work on a Dispatch thread and resumes with its result. OpenSSL's error queue is per thread:
    /// it is emptied before and after, so no failure reads another call's error.
    private static func offPool<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                ERR_clear_error()
                let result = Result { try work() }
                ERR_clear_error()
                continuation.resume(with: result)
            }
        }
    }
}

/// Client sessions for resumption, per host, port and server name: the newest few the server issued, each used
/// once (RFC 8446 §C.4: a ticket reused would link connections). Bounded: at most ``maximumEntries`` destinations.
public final class TLSSessionCache: Sendable {
    public static let maximumEntries = 256
    /// Sessions kept per destination (TLS 1.3 servers issue two by default).
    static let sessionsPerDestination = 4

    struct Key: Hashable {
        let host: String
        let port: UInt16
        let serverName: String?

        init(host: String, port: UInt16, serverName: String?) {
            self.host = host
            self.port = port
            self.serverName = serverName
        }

        /// An opaque peer ID as a key of its own (no host is empty, so none collides with it).
        init(peerID: [UInt8]) {
            self.init(host: "", port: 0, serverName: peerID.map { String(format: "%02x", $0) }.joined())
        }
    }

    private struct State {
        var sessions: [Key: [TLSSession]] = [:]
        var order: [Key] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// How many sessions are kept, over every destination.
    public var count: Int { state.withLock { $0.sessions.values.reduce(0) { $0 + $1.count } } }

    /// A session kept under an application's peer ID (Secure Transport's `SSLSetPeerID`).
    package func take(peerID: [UInt8]) -> TLSSession? { take(Key(peerID: peerID)) }

    package func keep(_ session: TLSSession, peerID: [UInt8]) { keep(session, for: Key(peerID: peerID)) }

    func take(_ key: Key) -> TLSSession? {
        state.withLock { state in state.sessions[key]?.popLast() }
    }

    func keep(_ session: TLSSession, for key: Key) {
        state.withLock { state in
            if state.sessions[key] == nil {
                state.order.append(key)
                if state.order.count > Self.maximumEntries { state.sessions[state.order.removeFirst()] = nil }
            }
            var kept = state.sessions[key] ?? []
            kept.append(session)
            if kept.count > Self.sessionsPerDestination { kept.removeFirst() }
            state.sessions[key] = kept
        }
    }
}

/// How a client judges the server: the configuration's judge, or the trust evaluator with its anchors, the SSL
/// server policy for its name and, when asked, revocation. The verdict goes to a box the opening reads.
private struct ServerJudging: @unchecked Sendable {
    // @unchecked: the box is written inside the handshake and read after it, one step after the other.
    let configuration: TLSConfiguration
    let verdict: VerdictBox

    func evaluate(_ chain: [Certificate], revocation: RevocationPolicy?, stapled: Data?) -> TLSPeerVerdict {
        if let judge = configuration.serverJudge {
            do {
                verdict.result = try judge(chain, stapled)
                return .accept
            } catch {
                verdict.refusal = "\(error)"
                return .reject(nil)
            }
        }
        let settings: TrustSettingsSet?
        do {
            settings = try configuration.trustSettings.flatMap { try TLSPeerVerdict.settings($0, anchors: configuration.anchors) }
        } catch {
            // A settings file that cannot be read may hold a denial: refuse rather than ignore it.
            verdict.refusal = "\(error)"
            return .reject(nil)
        }
        // Without revocation, a judgement kept for this chain, name, anchors and settings holds while its
        // certificates are valid: the evaluation would give it again.
        let keepable = revocation == nil
        if keepable,
            let kept = ChainJudgements.shared.judgement(
                of: chain, serverName: configuration.serverName, anchors: configuration.anchors, settings: settings, at: Date())
        {
            verdict.result = kept
            return .accept
        }
        var revocation = revocation
        if let stapled { revocation?.stapledOCSPResponses.insert(stapled, at: 0) }
        let judged = TLSPeerVerdict.judging(
            chain,
            with: TrustEvaluator(
                anchors: configuration.anchors, policies: [.sslServer(hostname: configuration.serverName)], revocation: revocation,
                trustSettings: settings))
        verdict.result = judged.result
        if keepable, let result = judged.result {
            ChainJudgements.shared.keep(
                result, of: chain, serverName: configuration.serverName, anchors: configuration.anchors, settings: settings)
        }
        return judged.verdict
    }
}

/// The judge's evaluation, read after the handshake on the same thread. @unchecked: written by the verify callback
/// during the handshake call, read after it returns, on that thread.
private final class VerdictBox: @unchecked Sendable {
    var result: TrustResult?
    /// The status-time judgement ran (in libssl's status callback).
    var statusJudged = false
    /// Why the configuration's own judge refused the chain.
    var refusal: String?
}

/// A blocking socket with send and receive timeouts as the engine's transport; owns the descriptor.
final class SocketTransport: TLSTransport {
    let fd: Int32
    /// Reads take only what has arrived and writes only what the socket takes at once (MSG_DONTWAIT): "would
    /// block", not a timeout.
    var dontWait = false
    /// While set (the opening), a read or write that must wait does so only until then: a peer answering a byte at a
    /// time cannot stretch the opening past its one deadline. After it, the socket's timeouts bound each call.
    var deadline: ContinuousClock.Instant?

    /// Runs `body` (the opening's handshake) with ``deadline`` set.
    func until<R>(_ deadline: ContinuousClock.Instant, _ body: () throws -> R) rethrows -> R {
        self.deadline = deadline
        defer { self.deadline = nil }
        return try body()
    }

    /// Whether the socket is ready for `events` before ``deadline`` (always, without one or when not waiting).
    private func readyBeforeDeadline(_ events: Int32) -> Bool {
        guard let deadline, !dontWait else { return true }
        var waiting = pollfd(fd: fd, events: Int16(events), revents: 0)
        while true {
            let remaining = Socket.milliseconds(deadline - .now)
            guard remaining > 0 else { return false }
            let ready = poll(&waiting, 1, remaining)
            if ready != 0, ready > 0 || errno != EINTR { return true }  // ready, or an error the call will report
            if ready == 0 { return false }
        }
    }

    init(fd: Int32) { self.fd = fd }

    deinit { Glibc.close(fd) }

    /// Send and receive timeouts of `timeout` (an accepted socket has none).
    func setTimeout(_ timeout: Duration) {
        let milliseconds = Int(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var limit = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Whether the socket has something to read (data, an end or an error) within `milliseconds`: poll(2), retried
    /// on EINTR.
    func awaitReadable(withinMilliseconds milliseconds: Int32) -> Bool {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&waiting, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 || errno != EINTR { return false }
        }
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TLSTransportResult {
        guard readyBeforeDeadline(POLLIN) else { return .failed(ETIMEDOUT) }
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, dontWait ? Int32(MSG_DONTWAIT) : 0)
            if count > 0 { return .transferred(count) }
            if count == 0 { return .closed }
            if errno == EINTR { continue }
            if dontWait && (errno == EAGAIN || errno == EWOULDBLOCK) { return .wouldBlock }
            // SO_RCVTIMEO expired.
            return .failed(errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno)
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> TLSTransportResult {
        guard readyBeforeDeadline(POLLOUT) else { return .failed(ETIMEDOUT) }
        while true {
            let count = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | (dontWait ? Int32(MSG_DONTWAIT) : 0))
            if count > 0 { return .transferred(count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && dontWait && (errno == EAGAIN || errno == EWOULDBLOCK) { return .wouldBlock }
            return .failed(count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? ETIMEDOUT : (count < 0 ? errno : EPIPE))
        }
    }
}

/// The TCP connection under a TLS client: resolved and connected within the timeout, then blocking (the caller
/// sets send and receive timeouts; libssl's calls run on a Dispatch thread).
enum Socket {
    /// A blocking socket whose connection to the address literal `host` has started (non-blocking connect(2): done,
    /// or in progress; refused at once is an error).
    static func startConnecting(host: String, port: UInt16) throws -> Int32 {
        guard case .success(let addresses) = SocketFetcher.systemResolver(host, port), let address = addresses.first else {
            throw TLSError(.unreachable, "\(host) is not an address")
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(errno)))") }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        let status = address.bytes.withUnsafeBytes {
            Glibc.connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))  // !: not empty
        }
        let error = errno
        _ = fcntl(fd, F_SETFL, flags)
        guard status == 0 || error == EINPROGRESS else {
            Glibc.close(fd)
            throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(error)))")
        }
        return fd
    }

    /// Whether `fd` is writable (its connection done, or failed) within `milliseconds`.
    static func awaitWritable(_ fd: Int32, withinMilliseconds milliseconds: Int32) -> Bool {
        var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        while true {
            let ready = poll(&waiting, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 || errno != EINTR { return false }
        }
    }

    /// Waits until `deadline` for the connection started on `fd` and checks that it succeeded.
    /// - Throws: ``TLSError`` `.timeout`, or `.unreachable` with the connection's error.
    static func awaitConnected(_ fd: Int32, host: String, port: UInt16, until deadline: ContinuousClock.Instant) throws {
        guard awaitWritable(fd, withinMilliseconds: milliseconds(deadline - .now)) else {
            throw TLSError(.timeout, "no connection to \(host):\(port) within the timeout")
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else { throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(error)))") }
    }

    /// Whole milliseconds of `duration` for poll(2), none when it is negative.
    static func milliseconds(_ duration: Duration) -> Int32 {
        max(0, Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
    }

    /// What `resolver` answers for `host`, waited for until `deadline`. `getaddrinfo` cannot be interrupted: the
    /// resolver runs on a queue of its own (libdispatch's overcommitting pool, so a hung one holds no worker of the
    /// global queues) and is abandoned when the deadline passes.
    static func resolve(
        _ host: String, _ port: UInt16, until deadline: ContinuousClock.Instant, resolver: @escaping SocketFetcher.Resolver
    ) throws -> [SocketAddress] {
        final class Answer: Sendable {
            let result = Mutex<Result<[SocketAddress], FetchError>?>(nil)
            let done = DispatchSemaphore(value: 0)
        }
        let answer = Answer()
        DispatchQueue(label: "SecurityServices.tls.resolve").async {
            let result = resolver(host, port)
            answer.result.withLock { $0 = result }
            answer.done.signal()
        }
        guard answer.done.wait(timeout: .now() + .milliseconds(Int(milliseconds(deadline - .now)))) == .success else {
            throw TLSError(.timeout, "\(host) did not resolve within the timeout")
        }
        guard case .success(let addresses)? = answer.result.withLock({ $0 }) else { throw TLSError(.unreachable, "\(host) does not resolve") }
        return addresses
    }

    /// A blocking socket connected to `host` (resolved by `resolver`) before `deadline`.
    static func connect(
        host: String, port: UInt16, until deadline: ContinuousClock.Instant, resolver: @escaping SocketFetcher.Resolver
    ) throws -> Int32 {
        let addresses = try resolve(host, port, until: deadline, resolver: resolver)
        var lastError: Int32 = ECONNREFUSED
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var status = address.bytes.withUnsafeBytes {
                Glibc.connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))  // !: not empty
            }
            if status != 0 && errno == EINPROGRESS {
                guard awaitWritable(fd, withinMilliseconds: milliseconds(deadline - .now)) else {
                    Glibc.close(fd)
                    throw TLSError(.timeout, "no connection to \(host):\(port) within the timeout")
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                status = error == 0 ? 0 : -1
                errno = error
            }
            guard status == 0 else {
                lastError = errno
                Glibc.close(fd)
                continue
            }
            _ = fcntl(fd, F_SETFL, flags)
            return fd
        }
        throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(lastError)))")
    }
}
