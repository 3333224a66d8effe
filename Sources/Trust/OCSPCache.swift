import Certificates
import Foundation
import Synchronization

/// The OCSP answers fetched over HTTP, kept per certificate while they are fresh, so that evaluating the same
/// chain again asks the responder once per answer's lifetime (as a browser's or Apple's `ocspd` cache does).
///
/// Only an answer that was checked in full (signed by the issuer or its delegated responder, for this certificate,
/// with our nonce where the responder echoes nonces) and said good or revoked is kept: what it said and when it
/// was issued and expires. A later lookup decides freshness again at its own verification time. The key is the
/// certificate, its issuer and the anchor its path ended at (the responder's authority was judged against them).
/// Bounded: at most ``maximumEntries`` answers, the least recently used going first.
final class OCSPCache: Sendable {
    static let shared = OCSPCache()
    static let maximumEntries = 1024

    struct Key: Hashable {
        let certificate: Data
        let issuer: Data
        let anchor: Data
    }

    struct Answer {
        let status: RevocationStatus
        let thisUpdate: Int?
        let nextUpdate: Int?
    }

    private struct Entry {
        let answer: Answer
        var lastUsed: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The kept answer for `key` when it is fresh at `time`; a stale one is dropped.
    func answer(for key: Key, at time: Int) -> RevocationStatus? {
        state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            guard
                RevocationFreshness.isFresh(
                    thisUpdate: entry.answer.thisUpdate, nextUpdate: entry.answer.nextUpdate, at: time,
                    maximumAgeWithoutNextUpdate: RevocationFreshness.ocspMaximumAgeWithoutNextUpdate)
            else {
                // Stale at this time; a verification date in the past may still find it fresh, so it is kept
                // unless it has expired for good (nextUpdate, or the age limit, is behind the clock).
                if !Self.current(entry.answer) { state.entries.removeValue(forKey: key) }
                return nil
            }
            state.clock += 1
            entry.lastUsed = state.clock
            state.entries[key] = entry
            return entry.answer.status
        }
    }

    /// Keeps a checked, fresh good or revoked answer.
    func keep(_ answer: Answer, for key: Key) {
        guard answer.status == .good || answer.status == .revoked else { return }
        state.withLock { state in
            state.entries.removeValue(forKey: key)
            while state.entries.count >= Self.maximumEntries {
                // min: entries holds maximumEntries > 0 answers here.
                let oldest = state.entries.min { $0.value.lastUsed < $1.value.lastUsed }!
                state.entries.removeValue(forKey: oldest.key)
            }
            state.clock += 1
            state.entries[key] = Entry(answer: answer, lastUsed: state.clock)
        }
    }

    /// Whether an answer is still current by the wall clock.
    private static func current(_ answer: Answer) -> Bool {
        RevocationFreshness.isFresh(
            thisUpdate: answer.thisUpdate, nextUpdate: answer.nextUpdate, at: Int(Date().timeIntervalSince1970),
            maximumAgeWithoutNextUpdate: RevocationFreshness.ocspMaximumAgeWithoutNextUpdate)
    }

    /// How many answers are kept (tests).
    var count: Int { state.withLock { $0.entries.count } }

    /// Forgets every kept answer (tests).
    func removeAll() { state.withLock { $0 = State() } }
}

extension OCSPCache.Key {
    init(_ certificate: Certificate, _ issuer: Certificate, _ anchor: Certificate) {
        self.init(certificate: certificate.sha256Fingerprint, issuer: issuer.sha256Fingerprint, anchor: anchor.sha256Fingerprint)
    }
}
