import Certificates
import Foundation
import Trust

/// How a client judges the server: the configuration's judge, or the trust evaluator with its anchors, the SSL
/// server policy for its name and, when asked, revocation. The verdict goes to a box the opening reads.
struct ServerJudging: @unchecked Sendable {
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
final class VerdictBox: @unchecked Sendable {
    var result: TrustResult?
    /// The status-time judgement ran (in libssl's status callback).
    var statusJudged = false
    /// Why the configuration's own judge refused the chain.
    var refusal: String?
}
