internal import COpenSSL
internal import COpenSSLShims
public import Certificates
import Foundation
public import Trust

/// One TLS connection's protocol state over libssl, without I/O of its own: a ``TLSTransport`` carries the bytes,
/// and every step says whether it finished, would block, or stopped for the application. The peer's certificates
/// are judged by the caller's closure (the project's trust evaluator, never OpenSSL's). Not thread-safe: one
/// caller at a time, as Secure Transport's contexts.
public final class TLSEngine {
    public enum Role: Sendable { case client, server }

    /// Whether a server asks for a client certificate.
    public enum ClientAuthentication: Sendable { case none, request, require }

    public struct Settings {
        public var role: Role
        /// The name sent as SNI (a client; never an IP address).
        public var serverName: String?
        public var identity: TLSIdentity?
        public var minimumVersion: TLSVersion = .tls12
        public var maximumVersion: TLSVersion = .tls13
        /// ALPN: the client offers these; a server picks the first of its own the client offered.
        public var applicationProtocols: [String] = []
        public var clientAuthentication: ClientAuthentication = .none
        /// Judges the peer's chain (leaf first), as presented.
        public var judge: ([Certificate]) -> TLSPeerVerdict
        /// A client's revocation judge: when set, the server is asked to staple an OCSP response (RFC 6066 status
        /// request), and this judges the chain with it (nil when none was stapled) once the server's status is
        /// known, after ``judge`` accepted the chain and before the handshake completes.
        public var stapledStatusJudge: (([Certificate], [UInt8]?) -> TLSPeerVerdict)?
        /// A client's earlier session to resume (``TLSSession``), and where the sessions the server issues go (TLS 1.3
        /// tickets arrive after the handshake, with the first reads).
        public var resumption: TLSSession?
        public var sessionIssued: ((TLSSession) -> Void)?
        /// The cipher suites allowed (IANA numbers, each one of ``TLSEngine/supportedCipherSuites``); nil for
        /// libssl's default list. TLS 1.3 suites go to `SSL_set_ciphersuites`, the others to `SSL_set_cipher_list`:
        /// a list without TLS 1.3 suites makes TLS 1.3 impossible, one without TLS 1.2 suites makes TLS 1.2 so.
        public var cipherSuites: [UInt16]?
        /// Whether session tickets (RFC 5077; TLS 1.3's resumption tickets) are used (`SSL_OP_NO_TICKET` when not).
        public var sessionTickets = true
        /// A server's CA names (DER X.509 Names) sent in its CertificateRequest.
        public var certificateAuthorities: [[UInt8]] = []
        /// A server's OCSP response, stapled when the client asks for the certificate status.
        public var stapledResponse: [UInt8]?
        /// A server's Diffie-Hellman group for TLS 1.2's DHE suites (DER PKCS #3 DHParameter); nil: none, and no
        /// DHE suite is chosen.
        public var diffieHellmanParameters: [UInt8]?

        public init(role: Role, judge: @escaping ([Certificate]) -> TLSPeerVerdict) {
            self.role = role
            self.judge = judge
        }
    }

    public enum Step: Equatable {
        case done
        case wouldBlock
        /// The peer's certificates arrived and the judge said ``TLSPeerVerdict/pause``.
        case peerAuthenticationPending
        case failed(Failure)
    }

    /// Why a step failed, in the terms Secure Transport distinguishes.
    public enum Failure: Equatable, Sendable {
        /// The peer's chain was rejected by the judge.
        case untrusted
        /// The peer sent an alert (its TLS AlertDescription).
        case alert(Int32)
        /// No protocol version both sides allow.
        case version
        /// The peer closed without close_notify, in the handshake or mid-record.
        case closedAbort
        /// The peer sent close_notify: a graceful end (reads).
        case closedGraceful
        /// Not TLS, a record that fails its integrity check, or another protocol violation (OpenSSL's reason).
        case protocolViolation(String)
        /// The transport failed with this status.
        case transport(Int32)
    }

    public let settings: Settings
    private let transport: any TLSTransport
    let ssl: OpaquePointer
    /// The ALPN list in wire form, for the server's selection callback.
    private let wireProtocols: [UInt8]
    /// What the peer presented, leaf first (set when its certificates arrive).
    public private(set) var peerCertificates: [Certificate] = []
    /// The judge's rejection, when that ended the handshake.
    public private(set) var rejection: TrustResult?
    var lastTransport: TLSTransportResult = .transferred(0)
    /// The pause was reported; the next verify callback accepts.
    private var resumeAfterPause = false
    /// A client: the server sent a CertificateRequest.
    public private(set) var certificateRequested = false
    /// A client: the CA names the server's CertificateRequest listed (DER X.509 Names), in its order.
    public private(set) var peerCertificateAuthorities: [[UInt8]] = []

    public init(_ settings: Settings, transport: any TLSTransport) throws(TLSEngineError) {
        self.settings = settings
        self.transport = transport
        guard settings.minimumVersion <= settings.maximumVersion,
            settings.applicationProtocols.allSatisfy({ !$0.isEmpty && $0.utf8.count < 256 })
        else { throw TLSEngineError("the versions or ALPN names are not usable") }
        wireProtocols = settings.applicationProtocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        // One context per role for the process (SSL_CTX_new costs ~80 µs, a tenth of a loopback handshake); every
        // setting that differs between connections is made on the SSL itself.
        let context = (settings.role == .client ? Self.clientContext : Self.serverContext).pointer
        guard let ssl = SSL_new(context) else { throw TLSEngineError("SSL_new failed") }
        self.ssl = ssl
        // A cipher list without a version's suites rules that version out (libssl would offer TLS 1.3 without a
        // suite for it, and fail).
        var (minimum, maximum) = (settings.minimumVersion, settings.maximumVersion)
        if let suites = settings.cipherSuites {
            let chosen = Self.cipherSuiteTable.filter { suites.contains($0.number) }
            if !chosen.contains(where: \.isTLS13) { maximum = min(maximum, .tls12) }
            if !chosen.contains(where: { !$0.isTLS13 }) { minimum = max(minimum, .tls13) }
        }
        // SSL_set_min/max_proto_version, macros over SSL_ctrl.
        guard minimum <= maximum, SSL_ctrl(ssl, SSL_CTRL_SET_MIN_PROTO_VERSION, minimum.rawValue, nil) == 1,
            SSL_ctrl(ssl, SSL_CTRL_SET_MAX_PROTO_VERSION, maximum.rawValue, nil) == 1
        else { throw TLSEngineError("the protocol versions cannot be set, or no enabled suite is usable with them") }
        try configure()
    }

    deinit {
        SSL_free(ssl)  // frees the BIO too
    }

    /// A role's shared context, with the callbacks every engine uses (each finds its engine through the SSL's BIO).
    /// @unchecked: configured once, then only read by libssl (SSL_new takes a reference, thread-safe).
    private struct SharedContext: @unchecked Sendable {
        let pointer: OpaquePointer

        init(_ method: OpaquePointer?, client: Bool) {
            // !: SSL_CTX_new fails only without memory, at first use.
            pointer = SSL_CTX_new(method)!
            // A client's certificate callback runs only when the server asked for a certificate.
            if client { SSL_CTX_set_cert_cb(pointer, TLSEngine.certificateRequestCallback, nil) }
            SSL_CTX_set_cert_verify_callback(pointer, TLSEngine.verifyCallback, nil)
            SSL_CTX_set_alpn_select_cb(pointer, TLSEngine.alpnCallback, nil)
            copenssl_tls_set_status_callback(pointer, TLSEngine.statusCallback, nil)
            // SSL_CTX_set_session_cache_mode, a macro over SSL_CTX_ctrl: a client cache kept by the caller, not libssl.
            SSL_CTX_ctrl(pointer, SSL_CTRL_SET_SESS_CACHE_MODE, Int(SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE), nil)
            SSL_CTX_sess_set_new_cb(pointer, TLSEngine.newSessionCallback)
        }
    }

    private static let clientContext = SharedContext(TLS_client_method(), client: true)
    private static let serverContext = SharedContext(TLS_server_method(), client: false)

    /// A cipher suite libssl offers here: its IANA number, its OpenSSL name, whether it is a TLS 1.3 suite.
    struct CipherSuite: Sendable {
        let number: UInt16
        let name: String
        let isTLS13: Bool
    }

    /// libssl's default suites (its `DEFAULT` list and TLS 1.3 suites, at the default security level), in its
    /// order of preference: all are usable in TLS 1.2 or 1.3.
    static let cipherSuiteTable: [CipherSuite] = {
        guard let stack = SSL_CTX_get_ciphers(clientContext.pointer) else { return [] }
        return (0..<OPENSSL_sk_num(stack)).compactMap { index in
            guard let raw = OPENSSL_sk_value(stack, index) else { return nil }
            let cipher = OpaquePointer(raw)
            guard let name = SSL_CIPHER_get_name(cipher) else { return nil }
            let version = SSL_CIPHER_get_version(cipher).map { String(cString: $0) }
            return CipherSuite(number: SSL_CIPHER_get_protocol_id(cipher), name: String(cString: name), isTLS13: version == "TLSv1.3")
        }
    }()

    /// The IANA numbers of the cipher suites libssl offers for TLS 1.2 and 1.3 here, preferred first.
    public static var supportedCipherSuites: [UInt16] { cipherSuiteTable.map(\.number) }

    /// The engine of an SSL (its BIO's data).
    private static func engine(of ssl: OpaquePointer?) -> TLSEngine? {
        guard let ssl, let bio = SSL_get_rbio(ssl) else { return nil }
        return engine(BIO_get_data(bio))
    }

    private func configure() throws(TLSEngineError) {
        defer { ERR_clear_error() }
        // Writes return record by record, and may be retried from a moved buffer (the caller's remaining bytes).
        SSL_ctrl(ssl, SSL_CTRL_MODE, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), nil)
        let me = Unmanaged.passUnretained(self).toOpaque()
        var mode = SSL_VERIFY_PEER
        if settings.role == .server {
            switch settings.clientAuthentication {
            case .none: mode = SSL_VERIFY_NONE
            case .request: mode = SSL_VERIFY_PEER
            case .require: mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
            }
        }
        SSL_set_verify(ssl, mode, nil)
        if let suites = settings.cipherSuites {
            let chosen = suites.compactMap { number in Self.cipherSuiteTable.first { $0.number == number } }
            guard !chosen.isEmpty, chosen.count == suites.count else { throw TLSEngineError("a cipher suite is not offered here") }
            // An empty TLS 1.3 list disables TLS 1.3's suites; an empty TLS 1.2 list leaves none for TLS 1.2
            // (SSL_set_cipher_list then reports "no cipher match" and has set the list all the same).
            guard SSL_set_ciphersuites(ssl, chosen.filter(\.isTLS13).map(\.name).joined(separator: ":")) == 1 else {
                throw TLSEngineError("the TLS 1.3 cipher suites cannot be set")
            }
            let tls12 = chosen.filter { !$0.isTLS13 }.map(\.name)
            if SSL_set_cipher_list(ssl, tls12.isEmpty ? "-ALL" : tls12.joined(separator: ":")) != 1 && !tls12.isEmpty {
                throw TLSEngineError("the TLS 1.2 cipher suites cannot be set")
            }
        }
        // SSL_OP_NO_TICKET is SSL_OP_BIT(14), a macro Swift does not import.
        let noTicket: UInt64 = 1 << 14
        if settings.sessionTickets { SSL_clear_options(ssl, noTicket) } else { SSL_set_options(ssl, noTicket) }
        if settings.role == .server {
            if !settings.certificateAuthorities.isEmpty {
                guard let names = OPENSSL_sk_new_null() else { throw TLSEngineError("no memory for the CA names") }
                for der in settings.certificateAuthorities {
                    guard let name = Self.x509Name(der), OPENSSL_sk_push(names, UnsafeRawPointer(name)) > 0 else {
                        while let left = OPENSSL_sk_pop(names) { X509_NAME_free(OpaquePointer(left)) }
                        OPENSSL_sk_free(names)
                        throw TLSEngineError("a CA name is not a DER X.509 Name")
                    }
                }
                // SSL_set0_CA_list takes the stack and its names.
                SSL_set0_CA_list(ssl, names)
            }
            if let response = settings.stapledResponse, !response.isEmpty {
                // SSL_set_tlsext_status_ocsp_resp (a macro over SSL_ctrl) takes memory of OPENSSL_malloc's, and
                // frees it with the SSL.
                guard let copy = CRYPTO_malloc(response.count, #fileID, #line) else { throw TLSEngineError("no memory for the OCSP response") }
                response.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: response.count) }  // !: not empty
                guard SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_STATUS_REQ_OCSP_RESP, response.count, copy) == 1 else {
                    CRYPTO_free(copy, #fileID, #line)
                    throw TLSEngineError("the OCSP response cannot be set")
                }
            }
            if let parameters = settings.diffieHellmanParameters {
                guard let key = Self.diffieHellmanKey(parameters) else { throw TLSEngineError("the DH parameters are not usable") }
                // SSL_set0_tmp_dh_pkey takes the key on success only.
                guard SSL_set0_tmp_dh_pkey(ssl, key) == 1 else {
                    EVP_PKEY_free(key)
                    throw TLSEngineError("the DH parameters are refused")
                }
            }
        }
        if let identity = settings.identity {
            let loaded = identity.certificate.withUnsafeX509 { x509 in
                identity.privateKey.withUnsafePKEY { key in
                    SSL_use_certificate(ssl, x509) == 1 && SSL_use_PrivateKey(ssl, key) == 1 && SSL_check_private_key(ssl) == 1
                }
            }
            guard loaded else { throw TLSEngineError("the identity's key is not its certificate's") }
            for certificate in identity.chain {
                // SSL_add1_chain_cert, a macro over SSL_ctrl: the SSL's own chain (the context's was copied at SSL_new).
                guard certificate.withUnsafeX509({ SSL_ctrl(ssl, SSL_CTRL_CHAIN_CERT, 1, UnsafeMutableRawPointer($0)) }) == 1 else {
                    throw TLSEngineError("an identity chain certificate cannot be added")
                }
            }
        }
        if !wireProtocols.isEmpty {
            if settings.role == .client {
                guard SSL_set_alpn_protos(ssl, wireProtocols, UInt32(wireProtocols.count)) == 0 else {
                    throw TLSEngineError("the ALPN list cannot be set")
                }
            }
        }
        guard let bio = BIO_new(Self.method.pointer) else { throw TLSEngineError("BIO_new failed") }
        BIO_set_data(bio, me)
        SSL_set_bio(ssl, bio, bio)
        if settings.role == .client, settings.stapledStatusJudge != nil {
            guard copenssl_tls_request_ocsp_status(ssl) == 1 else { throw TLSEngineError("the status request cannot be set") }
        }
        if settings.role == .client {
            if let resumption = settings.resumption {
                guard resumption.use(in: ssl) else { throw TLSEngineError("the session to resume cannot be offered") }
                // A resumed handshake exchanges no certificates: the session's are the peer's.
                peerCertificates = resumption.peerCertificates
            }
        }
        if settings.role == .client {
            SSL_set_connect_state(ssl)
            if let name = settings.serverName, !name.isEmpty, !name.isIPAddressLiteral {
                _ = copenssl_tls_set_server_name(ssl, name)
            }
        } else {
            SSL_set_accept_state(ssl)
        }
    }

    // MARK: Callbacks

    private static func engine(_ pointer: UnsafeMutableRawPointer?) -> TLSEngine? {
        pointer.map { Unmanaged<TLSEngine>.fromOpaque($0).takeUnretainedValue() }
    }

    /// libssl's certificate verification, replaced by the settings' judge.
    private static let verifyCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { store, _ in
        guard let store,
            let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
            let engine = engine(of: OpaquePointer(ssl))
        else { return 0 }
        if engine.resumeAfterPause {
            engine.resumeAfterPause = false
            return 1
        }
        var chain: [Certificate] = []
        if let untrusted = X509_STORE_CTX_get0_untrusted(store) {
            for index in 0..<copenssl_trust_certificates_count(untrusted) {
                if let x509 = copenssl_trust_certificates_at(untrusted, index), let certificate = copiedCertificate(x509) {
                    chain.append(certificate)
                }
            }
        }
        if chain.isEmpty, let leaf = X509_STORE_CTX_get0_cert(store), let certificate = copiedCertificate(leaf) { chain = [certificate] }
        engine.peerCertificates = chain
        let verdict = engine.settings.judge(chain)
        // Reading the certificates may leave OpenSSL errors queued; SSL_get_error would then report SSL_ERROR_SSL
        // instead of what the verdict asks for.
        ERR_clear_error()
        switch verdict {
        case .accept:
            return 1
        case .reject(let result):
            engine.rejection = result
            X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_UNTRUSTED)
            return 0
        case .pause:
            engine.resumeAfterPause = true
            // SSL_set_retry_verify (a macro over SSL_ctrl), and 1, as OpenSSL's own test of it returns: the handshake
            // then returns SSL_ERROR_WANT_RETRY_VERIFY and calls this again when resumed.
            return SSL_ctrl(engine.ssl, SSL_CTRL_SET_RETRY_VERIFY, 0, nil) > 0 ? 1 : 0
        }
    }

    /// A session the server issued, for the caller's cache: returning 1 hands libssl's reference over to it.
    private static let newSessionCallback: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { ssl, session in
        guard let engine = engine(of: ssl), let keep = engine.settings.sessionIssued, let session else { return 0 }
        if let issued = TLSSession(adopting: session, peerCertificates: engine.peerCertificates) { keep(issued) }
        return 1
    }

    /// A client's certificate callback, called only when the server sent a CertificateRequest: notes it and the
    /// CA names it listed (the identity was set before the handshake).
    private static let certificateRequestCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _ in
        guard let ssl, let engine = engine(of: ssl) else { return 1 }
        engine.certificateRequested = true
        if let names = SSL_get0_peer_CA_list(ssl) {
            engine.peerCertificateAuthorities = (0..<OPENSSL_sk_num(names)).compactMap { index in
                OPENSSL_sk_value(names, index).flatMap { encoded(name: OpaquePointer($0)) }
            }
        }
        return 1
    }

    /// A client's view of the server's certificate status: the stapled OCSP response, if any, to the settings'
    /// judge. A server's answer to a client's status request: staple its response when it has one (libssl fails
    /// the handshake on any answer but SSL_TLSEXT_ERR_OK or _NOACK).
    private static let statusCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _ in
        if let ssl, SSL_is_server(ssl) == 1 {
            guard let engine = engine(of: ssl), engine.settings.stapledResponse?.isEmpty == false else { return SSL_TLSEXT_ERR_NOACK }
            return SSL_TLSEXT_ERR_OK
        }
        guard let ssl, let engine = engine(of: ssl), let judge = engine.settings.stapledStatusJudge else { return 1 }
        var response: UnsafePointer<UInt8>?
        let length = copenssl_tls_stapled_response(ssl, &response)
        let stapled = response.flatMap { length > 0 ? Array(UnsafeBufferPointer(start: $0, count: length)) : nil }
        let verdict = judge(engine.peerCertificates, stapled)
        ERR_clear_error()
        switch verdict {
        case .accept: return 1
        case .reject(let result):
            engine.rejection = result
            return 0
        case .pause: return 1  // not offered at this point: the chain was already judged
        }
    }

    /// A server's ALPN choice: the first of its own protocols the client offered; none, and no ALPN, otherwise.
    private static let alpnCallback:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?,
            UInt32, UnsafeMutableRawPointer?
        ) -> Int32 = { ssl, out, outLength, offered, offeredLength, _ in
            guard let engine = engine(of: ssl), !engine.wireProtocols.isEmpty, let out, let outLength, let offered else {
                return SSL_TLSEXT_ERR_NOACK
            }
            return engine.wireProtocols.withUnsafeBufferPointer { ours -> Int32 in
                var chosen: UnsafeMutablePointer<UInt8>?
                var chosenLength: UInt8 = 0
                let status = SSL_select_next_proto(&chosen, &chosenLength, ours.baseAddress, UInt32(ours.count), offered, offeredLength)
                guard status == OPENSSL_NPN_NEGOTIATED, let chosen else { return SSL_TLSEXT_ERR_NOACK }
                // The choice points into `ours`, which the engine keeps for its life.
                out.pointee = UnsafePointer(chosen)
                outLength.pointee = chosenLength
                return SSL_TLSEXT_ERR_OK
            }
        }

    /// The BIO method, made once. @unchecked: a BIO_METHOD is only read after it is made.
    private struct Method: @unchecked Sendable { let pointer: OpaquePointer }

    /// The BIO between libssl and the transport.
    private static let method = Method(pointer: {
        // !: BIO_meth_new fails only without memory at first use.
        let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "SecurityServices TLS transport")!
        BIO_meth_set_write(method) { bio, data, length in
            guard let bio, let data, length > 0, let engine = engine(BIO_get_data(bio)) else { return -1 }
            BIO_clear_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY)
            let result = engine.transport.send(UnsafeRawBufferPointer(start: data, count: Int(length)))
            engine.lastTransport = result
            switch result {
            case .transferred(let count): return Int32(count)
            case .wouldBlock:
                BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY)
                return -1
            case .closed, .failed: return -1
            }
        }
        BIO_meth_set_read(method) { bio, data, length in
            guard let bio, let data, length > 0, let engine = engine(BIO_get_data(bio)) else { return -1 }
            BIO_clear_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY)
            let buffer = UnsafeMutableRawBufferPointer(start: data, count: Int(length))
            let result = engine.transport.receive(into: buffer)
            engine.lastTransport = result
            switch result {
            case .transferred(let count): return Int32(count)
            case .wouldBlock:
                BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY)
                return -1
            case .closed: return 0
            case .failed: return -1
            }
        }
        BIO_meth_set_ctrl(method) { _, command, _, _ in
            // libssl flushes after each flight; the transport has no buffer of its own to flush.
            command == BIO_CTRL_FLUSH ? 1 : 0
        }
        BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        return method
    }())
}

/// A certificate of libssl's (a peer's), shared by reference rather than encoded and parsed again.
func copiedCertificate(_ x509: OpaquePointer) -> Certificate? {
    try? Certificate(retaining: x509)
}
