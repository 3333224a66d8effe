import Foundation
import Synchronization

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
