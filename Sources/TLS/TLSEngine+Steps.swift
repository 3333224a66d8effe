internal import COpenSSL

extension TLSEngine {
    // MARK: Steps

    // Each step empties this thread's OpenSSL error queue before and after its libssl call. SSL_get_error(3): "The
    // current thread's error queue must be empty before the TLS/SSL I/O operation is attempted, or SSL_get_error()
    // will not work reliably." A step may run on a thread other OpenSSL work left errors on (a cooperative thread
    // that parsed a malformed certificate: seen as a read failing with "asn1 encoding routines::too long").

    /// Runs the handshake as far as the transport allows.
    public func handshake() -> Step {
        ERR_clear_error()
        defer { ERR_clear_error() }
        let status = SSL_do_handshake(ssl)
        if status == 1 { return .done }
        return step(status)
    }

    /// Reads decrypted bytes (at most one record's worth) into `buffer`: the count and `.done`, or 0 and why not.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, step: Step) {
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard buffer.count > 0 else { return (0, .done) }
        var count = 0
        let status = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if status == 1 { return (count, .done) }
        return (0, step(status))
    }

    /// Writes `bytes` record by record: how many were taken, and `.done` when all were, else why it stopped.
    public func write(_ bytes: UnsafeRawBufferPointer) -> (count: Int, step: Step) {
        ERR_clear_error()
        defer { ERR_clear_error() }
        var offset = 0
        while offset < bytes.count {
            var written = 0
            let status = SSL_write_ex(ssl, bytes.baseAddress! + offset, bytes.count - offset, &written)  // !: count > 0
            guard status == 1 else { return (offset, step(status)) }
            offset += written
        }
        return (offset, .done)
    }

    /// Sends close_notify (once; a peer's is not awaited).
    public func close() -> Step {
        ERR_clear_error()
        defer { ERR_clear_error() }
        let status = SSL_shutdown(ssl)
        return status >= 0 ? .done : step(status)
    }

    /// Decrypted bytes waiting in the engine (Secure Transport's `SSLGetBufferedReadSize`).
    public var bufferedReadSize: Int { Int(SSL_pending(ssl)) }

    public var negotiatedVersion: TLSVersion? {
        switch SSL_version(ssl) {
        case TLS1_3_VERSION: .tls13
        case TLS1_2_VERSION: .tls12
        default: nil
        }
    }

    /// The IANA number of the negotiated cipher suite (Secure Transport's `SSLCipherSuite`), nil before.
    public var negotiatedCipherSuite: UInt16? {
        guard let cipher = SSL_get_current_cipher(ssl) else { return nil }
        return SSL_CIPHER_get_protocol_id(cipher)
    }

    /// The ALPN protocol both sides chose, nil when none.
    public var selectedApplicationProtocol: String? {
        var name: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &name, &length)
        guard let name, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: name, count: Int(length)), as: UTF8.self)
    }

    public var isHandshakeComplete: Bool { SSL_is_init_finished(ssl) == 1 }

    /// A server: the name the client asked for (SNI), nil when none.
    public var requestedServerName: String? {
        SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
    }

    /// A new handshake on an established connection: TLS 1.2 renegotiates (`SSL_renegotiate`; a client runs the
    /// handshake now, a server's HelloRequest goes out now and the client's handshake is taken in by the next
    /// reads), TLS 1.3 updates the traffic keys and asks the peer to update its own (`SSL_key_update`, RFC 8446
    /// §4.6.3: TLS 1.3 has no renegotiation).
    public func renegotiate() -> Step {
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard isHandshakeComplete else { return .failed(.protocolViolation("no established connection")) }
        if negotiatedVersion == .tls13 {
            guard SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) == 1 else { return .failed(.protocolViolation("SSL_key_update failed")) }
        } else {
            guard SSL_renegotiate(ssl) == 1 else { return .failed(.protocolViolation("the peer or libssl refuses renegotiation")) }
        }
        let status = SSL_do_handshake(ssl)
        if status == 1 { return .done }
        return step(status)
    }

    /// Whether the handshake resumed an earlier session (no certificates were exchanged: the peer was judged when
    /// the session was made).
    public var sessionReused: Bool { SSL_session_reused(ssl) == 1 }

    /// Why a libssl call returned `status`.
    private func step(_ status: Int32) -> Step {
        let kind = SSL_get_error(ssl, status)
        switch kind {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            if case .failed(let code) = lastTransport { return .failed(.transport(code)) }
            return .wouldBlock
        case SSL_ERROR_WANT_RETRY_VERIFY:
            return .peerAuthenticationPending
        case SSL_ERROR_ZERO_RETURN:
            return .failed(.closedGraceful)
        default:
            break
        }
        if case .failed(let code) = lastTransport { return .failed(.transport(code)) }
        if rejection != nil || (kind == SSL_ERROR_SSL && SSL_get_verify_result(ssl) != X509_V_OK && !peerCertificates.isEmpty) {
            return .failed(.untrusted)
        }
        let code = ERR_peek_error()
        if kind == SSL_ERROR_SYSCALL || (code == 0 && kind == SSL_ERROR_SSL) { return .failed(.closedAbort) }
        let reason = ERR_GET_REASON(code)
        if reason >= SSL_AD_REASON_OFFSET { return .failed(.alert(reason - SSL_AD_REASON_OFFSET)) }
        if reason == SSL_R_UNEXPECTED_EOF_WHILE_READING { return .failed(.closedAbort) }
        if reason == SSL_R_UNSUPPORTED_PROTOCOL || reason == SSL_R_NO_PROTOCOLS_AVAILABLE { return .failed(.version) }
        // The peer's no_renegotiation warning, which libssl turns into this error of its own.
        if reason == SSL_R_NO_RENEGOTIATION { return .failed(.alert(100)) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return .failed(.protocolViolation(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
    }
}
