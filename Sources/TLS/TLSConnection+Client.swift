internal import COpenSSL
public import Certificates
import Foundation
public import NetworkFetch
import Trust

extension TLSConnection {
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
                    throw TLSError(.untrusted, "the server's chain is not trusted: \(result.failureSummary)", trust: result)
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
                        .untrusted, "the server's chain is not trusted: \(result?.failureSummary ?? "it could not be evaluated")", trust: result)
                }
            }
            // !: a completed handshake ran the judge, which set the result.
            return TLSConnection(engine: engine, socket: socket, trust: verdict.result!)
        }
    }

    /// The certificates a server presents, leaf first, fetched by a handshake that judges nothing: the handshake
    /// runs to its end and the session is closed with close_notify, no application data sent, so the server sees a
    /// client that left, not one that refused its certificate. `security verify-cert --connect` evaluates what this
    /// returns.
    /// - Throws: ``TLSError``: `.unreachable`, `.timeout`, `.handshakeFailed` (the server sent no certificate, or
    ///   refused us before it did), `.invalidConfiguration`.
    public static func presentedCertificates(
        host: String, port: UInt16, serverName: String?, timeout: Duration = .seconds(30),
        resolver: @escaping SocketFetcher.Resolver = SocketFetcher.systemResolver
    ) async throws -> [Certificate] {
        let deadline = ContinuousClock.now + timeout
        return try await offPool {
            _ = sigpipeIgnored
            // The chain is only looked at: the handshake goes on to its end and the session is closed with
            // close_notify, so that a probe is not reported by the server as a certificate it rejected. No
            // application data is exchanged over a chain nobody has judged.
            var settings = TLSEngine.Settings(role: .client) { _ in .accept }
            settings.serverName = serverName
            let socket = SocketTransport(fd: try Socket.connect(host: host, port: port, until: deadline, resolver: resolver))
            socket.setTimeout(timeout)
            socket.deadline = deadline
            let engine = try makeEngine(settings, socket)
            let step = engine.handshake()
            guard !engine.peerCertificates.isEmpty else {
                throw step == .done ? TLSError(.handshakeFailed, "the server presented no certificate") : error(step, "handshake", handshakeDone: false)
            }
            if step == .done { _ = engine.close() }
            return engine.peerCertificates
        }
    }
}
