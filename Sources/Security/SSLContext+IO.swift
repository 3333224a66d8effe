import TLS

extension SSLContext {
    func read(_ buffer: UnsafeMutableRawBufferPointer, _ processed: inout Int) -> OSStatus {
        processed = 0
        return withConnectedEngine { engine in
            let (count, step) = engine.read(into: buffer)
            processed = count
            if count > 0 || buffer.count == 0 { return errSecSuccess }
            return ioStatus(step)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, _ processed: inout Int) -> OSStatus {
        processed = 0
        return withConnectedEngine { engine in
            let (count, step) = engine.write(bytes)
            processed = count
            return step == .done ? errSecSuccess : ioStatus(step)
        }
    }

    /// Runs `body` on the engine under the context's lock, once the handshake (run first when it is not done, as
    /// Secure Transport's reads and writes do) has connected; otherwise the handshake's status.
    private func withConnectedEngine(_ body: (TLSEngine) -> OSStatus) -> OSStatus {
        locked {
            if state != .connected {
                let status = handshake()
                guard status == errSecSuccess else { return status }
            }
            guard let engine else { return errSSLInternal }
            return body(engine)
        }
    }

    func close() -> OSStatus {
        locked {
            defer { state = .closed }
            // Also after the peer's close_notify: ours marks the session as ended cleanly (libssl resumes no session
            // whose connection ended without it).
            guard state == .connected || state == .closed, let engine, engine.isHandshakeComplete else { return errSecSuccess }
            switch engine.close() {
            case .done, .wouldBlock: return errSecSuccess
            case .peerAuthenticationPending: return errSecSuccess
            case .failed(let failure): return failure == .closedAbort || failure == .closedGraceful ? errSecSuccess : status(of: failure)
            }
        }
    }

    var bufferedReadSize: Int { locked { engine?.bufferedReadSize ?? 0 } }
    var negotiatedVersion: SSLProtocol {
        locked {
            switch engine?.negotiatedVersion {
            case .tls12: .tlsProtocol12
            case .tls13: .tlsProtocol13
            case nil: .sslProtocolUnknown
            }
        }
    }
    var negotiatedCipher: SSLCipherSuite? { locked { state == .connected ? engine?.negotiatedCipherSuite : nil } }
    var selectedApplicationProtocol: String? { locked { engine?.selectedApplicationProtocol } }

    private func ioStatus(_ step: TLSEngine.Step) -> OSStatus {
        switch step {
        case .done: return errSecSuccess
        case .wouldBlock: return errSSLWouldBlock
        case .peerAuthenticationPending: return errSSLPeerAuthCompleted
        case .failed(.closedGraceful):
            state = .closed
            return errSSLClosedGraceful
        case .failed(.closedAbort):
            state = .aborted
            return errSSLClosedNoNotify
        case .failed(let failure):
            state = .aborted
            return status(of: failure)
        }
    }
}
