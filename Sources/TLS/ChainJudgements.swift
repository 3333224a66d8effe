import Certificates
import Foundation
import Synchronization
import Trust

/// Trusted judgements of server chains, kept for the process so that a client connecting again to the same server
/// (a full handshake or a resumption, which exchanges no certificates) does not evaluate the same chain again, as
/// browsers' verifiers cache their results. A judgement is used only where the same one would be made again: the
/// same chain as presented, the same server name, the same anchors and trust settings, no revocation policy (its answers change)
/// and no judge of the application's, and every certificate still within its validity. Only trusted judgements
/// are kept; bounded, the oldest dropped first.
final class ChainJudgements: Sendable {
    static let shared = ChainJudgements()
    static let capacity = 128

    struct Key: Hashable {
        let chain: [Certificate]
        let serverName: String?
    }

    struct Judgement {
        let result: TrustResult
        /// The anchors and trust settings it was judged under.
        let anchors: [Certificate]
        let settings: TrustSettingsSet?

        /// Whether it holds for `anchors` and `settings` at `now`.
        func holds(under anchors: [Certificate], settings: TrustSettingsSet?, at now: Date) -> Bool {
            guard self.anchors.isSame(as: anchors), self.settings == settings else { return false }
            return result.chain.allSatisfy { $0.notValidBefore <= now && now <= $0.notValidAfter }
        }
    }

    private struct State {
        var judgements: [Key: Judgement] = [:]
        var order: [Key] = []
    }

    private let state = Mutex(State())

    /// The kept judgement of `chain` for `serverName` under `anchors` and `settings`, when it holds at `now`.
    func judgement(
        of chain: [Certificate], serverName: String?, anchors: [Certificate], settings: TrustSettingsSet?, at now: Date
    ) -> TrustResult? {
        let key = Key(chain: chain, serverName: serverName)
        guard let judgement = state.withLock({ $0.judgements[key] }), judgement.holds(under: anchors, settings: settings, at: now)
        else { return nil }
        return judgement.result
    }

    /// Keeps a trusted evaluation (anything else is not kept).
    func keep(
        _ result: TrustResult, of chain: [Certificate], serverName: String?, anchors: [Certificate], settings: TrustSettingsSet?
    ) {
        guard result.isTrusted else { return }
        let key = Key(chain: chain, serverName: serverName)
        state.withLock { state in
            if state.judgements.updateValue(Judgement(result: result, anchors: anchors, settings: settings), forKey: key) == nil {
                state.order.append(key)
                if state.order.count > Self.capacity { state.judgements[state.order.removeFirst()] = nil }
            }
        }
    }

    /// Forgets every judgement.
    func removeAll() { state.withLock { $0 = State() } }
}

extension [Certificate] {
    /// Whether `other` holds the same certificates: the same array (its storage, checked first: the system anchors
    /// are one array, passed around) or equal ones.
    func isSame(as other: [Certificate]) -> Bool {
        let shared = withUnsafeBufferPointer { mine in
            other.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress && $0.count == mine.count }
        }
        return shared || self == other
    }
}
