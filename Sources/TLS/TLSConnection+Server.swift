import NetworkFetch
import Trust

extension TLSConnection {
    /// Completes a server handshake on an accepted TCP socket, which the connection owns from then on (closed when
    /// it is released, also when this throws). A client certificate, when asked for and sent, is evaluated under
    /// the SSL client policy against ``TLSServerConfiguration/clientAnchors``.
    /// - Throws: ``TLSError``: `.untrusted` (the client's chain, with the evaluation), `.handshakeFailed` (no
    ///   common version, a required client certificate missing, an alert), `.timeout`, `.protocolError`,
    ///   `.invalidConfiguration`.
    public static func accept(socket fd: Int32, configuration: TLSServerConfiguration) async throws -> TLSConnection {
        let deadline = ContinuousClock.now + configuration.timeout
        let socket = SocketTransport(Connection(adopting: fd))
        return try await on(socket.connection.loop) {
            _ = sigpipeIgnored
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
            let (_, step) = try await socket.drive(until: deadline, "handshake") { ((), engine.handshake()) }
            guard step == .done else {
                if let result = verdict.result, !result.isTrusted {
                    throw TLSError(.untrusted, "the client's chain is not trusted: \(result.failureSummary)", trust: result)
                }
                throw error(step, "handshake", handshakeDone: false)
            }
            return TLSConnection(engine: engine, socket: socket, trust: verdict.result, timeout: configuration.timeout)
        }
    }
}
