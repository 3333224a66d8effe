import Certificates
import TLS

extension SSLContext {
    // MARK: What the legacy functions read

    /// What the peer presented, leaf first (empty before its certificates arrive).
    var peerCertificates: [Certificate] { locked { engine?.peerCertificates ?? [] } }

    /// A server: the name the client asked for (SNI).
    var requestedPeerName: String? { locked { side == .serverSide ? engine?.requestedServerName : nil } }

    /// A client: the CA names the server asked for; a server: its own.
    var acceptableDistinguishedNames: [[UInt8]] {
        locked { side == .serverSide ? distinguishedNames : engine?.peerCertificateAuthorities ?? [] }
    }

    var clientCertificateState: SSLClientCertificateState {
        locked {
            guard let engine else { return .certNone }
            if side == .clientSide {
                guard engine.certificateRequested else { return .certNone }
                return identity == nil ? .certRequested : .certSent
            }
            guard clientAuthentication != .none else { return .certNone }
            switch clientCertificateAccepted {
            case true?: return .certSent
            case false?: return .certRejected
            case nil: return .certRequested
            }
        }
    }

    /// Apple's SSLSetError: kept for the next handshake step.
    func setError(_ status: OSStatus) -> OSStatus {
        locked {
            outOfBandError = status
            return errSecSuccess
        }
    }

    /// A new handshake: before the first, the first; on an established session, ``TLSEngine/renegotiate()``.
    func rehandshake() -> OSStatus {
        locked {
            switch state {
            case .closed: return errSSLClosedGraceful
            case .aborted: return errSSLClosedAbort
            case .handshake: return errSecBadReq
            case .idle: return handshake()
            case .connected: break
            }
            guard let engine else { return errSSLInternal }
            state = .handshake
            switch engine.renegotiate() {
            case .done:
                state = .connected
                return errSecSuccess
            case let step:
                return unfinished(step)  // would block: SSLHandshake goes on with it
            }
        }
    }

    /// The deprecated SSLDisposeContext: the session ends here, without close_notify, and its libssl state goes.
    func dispose() {
        locked {
            engine = nil
            if state != .closed { state = .aborted }
        }
    }
}
