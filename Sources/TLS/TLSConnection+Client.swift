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
        // Judges that may fetch (a revocation policy, the configuration's own judge) wait inside the handshake.
        let stepsMayBlock = configuration.revocation != nil || configuration.serverJudge != nil
        let loop = EventLoop.next()
        return try await on(stepsMayBlock ? NetworkExecutor.dedicated() : loop) {
            let connection = try await open(host: host, port: port, until: deadline, resolver: configuration.resolver, loop: loop)
            let socket = SocketTransport(connection)
            let engine = try makeEngine(opening.settings, socket)
            let (_, step) = try await socket.drive(until: deadline, "handshake") { ((), engine.handshake()) }
            return try opening.finish(engine, socket, step)
        }
    }

    /// A TCP connection to `host` (resolved by `resolver`) by `deadline`, waiting on `loop`.
    /// - Throws: ``TLSError`` `.unreachable`, `.timeout`; `CancellationError`.
    static func open(
        host: String, port: UInt16, until deadline: ContinuousClock.Instant, resolver: @escaping SocketFetcher.Resolver,
        loop: EventLoop
    ) async throws -> Connection {
        let addresses: [SocketAddress]
        do {
            // An address literal needs no resolver.
            if let literal = SocketAddress(numeric: host, port: port) {
                addresses = [literal]
            } else {
                addresses = try await Connection.resolve(host: host, port: port, deadline: deadline, resolver: resolver)
            }
        } catch {
            switch error.kind {
            case .cancelled: throw CancellationError()
            case .timeout: throw TLSError(.timeout, "\(host) did not resolve within the timeout")
            default: throw TLSError(.unreachable, "\(host) does not resolve")
            }
        }
        do {
            return try await Connection.connect(addresses, deadline: deadline, loop: loop)
        } catch {
            switch error.kind {
            case .cancelled: throw CancellationError()
            case .timeout: throw TLSError(.timeout, "no connection to \(host):\(port) within the timeout")
            default: throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(error.detail == 0 ? ECONNREFUSED : error.detail)))")
            }
        }
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
            return TLSConnection(engine: engine, socket: socket, trust: verdict.result!, timeout: configuration.timeout)
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
        let loop = EventLoop.next()
        return try await on(loop) {
            _ = sigpipeIgnored
            // The chain is only looked at: the handshake goes on to its end and the session is closed with
            // close_notify, so that a probe is not reported by the server as a certificate it rejected. No
            // application data is exchanged over a chain nobody has judged.
            var settings = TLSEngine.Settings(role: .client) { _ in .accept }
            settings.serverName = serverName
            let socket = SocketTransport(try await open(host: host, port: port, until: deadline, resolver: resolver, loop: loop))
            let engine = try makeEngine(settings, socket)
            let step: TLSEngine.Step
            do {
                step = try await socket.drive(until: deadline, "handshake") { ((), engine.handshake()) }.1
            } catch let error as TLSError where !engine.peerCertificates.isEmpty && error.code == .timeout {
                return engine.peerCertificates
            }
            guard !engine.peerCertificates.isEmpty else {
                throw step == .done ? TLSError(.handshakeFailed, "the server presented no certificate") : error(step, "handshake", handshakeDone: false)
            }
            if step == .done { _ = engine.close() }
            return engine.peerCertificates
        }
    }
}
