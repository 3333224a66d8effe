public import Certificates
public import Trust

/// How the engine treats the certificates the peer presented.
public enum TLSPeerVerdict: Sendable {
    /// Go on with the handshake.
    case accept
    /// Stop it: the chain is not trusted (the evaluation, when there is one).
    case reject(TrustResult?)
    /// Stop here and let the application decide (Secure Transport's `kSSLSessionOptionBreakOnServerAuth`): the
    /// step returns ``TLSEngine/Step/peerAuthenticationPending``, and the next ``TLSEngine/handshake()`` asks again.
    case pause
}

extension TLSPeerVerdict {
    /// `evaluator`'s verdict on a presented chain (leaf first) and its evaluation: accept when trusted, reject
    /// otherwise (without a result for an empty chain or an evaluation that could not run).
    public static func judging(_ chain: [Certificate], with evaluator: TrustEvaluator) -> (verdict: TLSPeerVerdict, result: TrustResult?) {
        guard let leaf = chain.first, let result = try? evaluator.evaluate(leaf, intermediates: Array(chain.dropFirst())) else {
            return (.reject(nil), nil)
        }
        return (result.isTrusted ? .accept : .reject(result), result)
    }

    /// The trust settings a peer's chain is judged under: the settings of `domains` now (nil when there are none),
    /// their anchors counting only when `anchors` are the system's (an application's own anchors stand alone, as
    /// with `SecTrustSetAnchorCertificates`); their denials and allowed errors always count.
    /// - Throws: ``TrustError`` when a settings file cannot be read (a denial in it must not be ignored).
    public static func settings(_ domains: TrustSettingsDomains, anchors: [Certificate]) throws -> TrustSettingsSet? {
        let settings = try domains.snapshot()
        guard !settings.isEmpty else { return nil }
        return anchors.isSame(as: SystemAnchors.all) ? settings : settings.withoutAnchors()
    }
}
