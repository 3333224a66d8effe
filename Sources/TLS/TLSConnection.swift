public import CryptoContract
internal import COpenSSL
internal import COpenSSLShims
public import Certificates
import Dispatch
import Foundation
import Synchronization
import NetworkFetch
public import Trust

/// A protocol version this module speaks: TLS 1.2 and 1.3 only.
public enum TLSVersion: Int, Sendable, Comparable, CustomStringConvertible {
    case tls12 = 0x0303
    case tls13 = 0x0304

    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { self == .tls12 ? "TLS 1.2" : "TLS 1.3" }
}

/// A client certificate and its private key (used where it is, never written anywhere), with the intermediates
/// sent after it.
public struct TLSIdentity: Sendable {
    public var certificate: Certificate
    public var privateKey: AsymmetricKey
    public var chain: [Certificate]

    public init(certificate: Certificate, privateKey: AsymmetricKey, chain: [Certificate] = []) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.chain = chain
    }
}

/// How a client connection is made and whom it trusts. The server's chain is judged by the project's own
/// ``TrustEvaluator`` (not OpenSSL's verifier): its anchors, the SSL server policy for ``serverName`` (RFC 6125
/// names, the web-PKI profile), revocation when asked, and trust settings are those of `Trust`.
public struct TLSConfiguration: Sendable {
    /// The anchors a server chain must reach: the system's (`SystemAnchors.all`) or the application's own.
    public var anchors: [Certificate]
    /// The name the server must prove (and the SNI sent); nil checks the chain only.
    public var serverName: String?
    /// Revocation checking of the server's chain (nil: none).
    public var revocation: RevocationPolicy?
    /// The certificate the client presents when the server asks.
    public var identity: TLSIdentity?
    /// ALPN protocols offered, most preferred first.
    public var applicationProtocols: [String]
    public var minimumVersion: TLSVersion
    public var maximumVersion: TLSVersion
    /// Connection, handshake and each read or write end within this time.
    public var timeout: Duration

    public init(
        anchors: [Certificate] = SystemAnchors.all, serverName: String?, revocation: RevocationPolicy? = nil,
        identity: TLSIdentity? = nil, applicationProtocols: [String] = [], minimumVersion: TLSVersion = .tls12,
        maximumVersion: TLSVersion = .tls13, timeout: Duration = .seconds(30)
    ) {
        self.anchors = anchors
        self.serverName = serverName
        self.revocation = revocation
        self.identity = identity
        self.applicationProtocols = applicationProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.timeout = timeout
    }
}

/// Why a TLS connection failed or ended.
public struct TLSError: CodedError {
    public typealias Code = ErrorCode<TLSError>

    public let code: Code
    public let reason: String
    /// For ``Code/untrusted``: the evaluation of the server's chain.
    public let trust: TrustResult?

    public init(_ code: Code, _ reason: String, trust: TrustResult? = nil) {
        self.code = code
        self.reason = reason
        self.trust = trust
    }
}

extension ErrorCode where Domain == TLSError {
    /// A bad configuration (an empty ALPN name, a minimum above the maximum, an identity whose key is not its
    /// certificate's).
    public static let invalidConfiguration = Self(name: "invalidConfiguration")
    /// No connection: the name does not resolve, refused, unreachable.
    public static let unreachable = Self(name: "unreachable")
    /// The timeout passed.
    public static let timeout = Self(name: "timeout")
    /// The server's chain is not trusted for the server name (``TLSError/trust`` says why).
    public static let untrusted = Self(name: "untrusted")
    /// The handshake failed otherwise: no common version or cipher, the server refused our certificate, an
    /// alert (the reason quotes OpenSSL).
    public static let handshakeFailed = Self(name: "handshakeFailed")
    /// The peer sent something that is not TLS, a record that fails its integrity check, or closed mid-record.
    public static let protocolError = Self(name: "protocolError")
    /// The connection is closed (read or write after close).
    public static let closed = Self(name: "closed")
}

/// A TLS client connection over a TCP socket of its own, with libssl doing the protocol and this package's
/// trust evaluator judging the server. The calls are `async`; each runs its blocking libssl call on a Dispatch
/// thread (never on the cooperative pool), bounded by the configuration's timeout. One reader and one writer at
/// a time.
public final class TLSConnection: @unchecked Sendable {
    // @unchecked: the SSL objects are only touched while holding `lock`; the rest is immutable.
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let fd: Int32
    private let lock = NSLock()
    private let closed = Atomic<Bool>(false)

    /// The server's certificates as sent, leaf first.
    public let peerCertificates: [Certificate]
    /// The evaluation that admitted them.
    public let trust: TrustResult
    public let negotiatedVersion: TLSVersion
    /// The ALPN protocol the server chose, nil when none.
    public let applicationProtocol: String?

    private init(
        context: OpaquePointer, ssl: OpaquePointer, fd: Int32, peer: [Certificate], trust: TrustResult, version: TLSVersion,
        applicationProtocol: String?
    ) {
        self.context = context
        self.ssl = ssl
        self.fd = fd
        peerCertificates = peer
        self.trust = trust
        negotiatedVersion = version
        self.applicationProtocol = applicationProtocol
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
        Glibc.close(fd)
    }

    /// Connects to `host`:`port` and completes the handshake.
    /// - Throws: ``TLSError``: `.untrusted` (with the evaluation), `.handshakeFailed`, `.unreachable`, `.timeout`,
    ///   `.invalidConfiguration`, `.protocolError`.
    public static func connect(host: String, port: UInt16, configuration: TLSConfiguration) async throws -> TLSConnection {
        try await offPool { try open(host: host, port: port, configuration) }
    }

    /// Sends `bytes` whole.
    public func write(_ bytes: [UInt8]) async throws {
        try await Self.offPool { [self] in
            try lock.withLock {
                guard !closed.load(ordering: .relaxed) else { throw TLSError(.closed, "the connection is closed") }
                var written = 0
                while written < bytes.count {
                    var count = 0
                    let status = bytes.withUnsafeBytes { SSL_write_ex(ssl, $0.baseAddress! + written, $0.count - written, &count) }  // !: not empty
                    let error = errno
                    guard status == 1 else { throw failure(status, "write", errno: error) }
                    written += count
                }
            }
        }
    }

    /// Up to `maximumCount` bytes of application data; empty when the server closed the connection cleanly
    /// (close_notify). A connection cut mid-record is `.protocolError`, never a short answer.
    public func read(maximumCount: Int = 16_384) async throws -> [UInt8] {
        try await Self.offPool { [self] in
            try lock.withLock {
                guard !closed.load(ordering: .relaxed) else { throw TLSError(.closed, "the connection is closed") }
                var buffer = [UInt8](repeating: 0, count: max(1, maximumCount))
                var count = 0
                let status = buffer.withUnsafeMutableBytes { SSL_read_ex(ssl, $0.baseAddress, $0.count, &count) }
                let error = errno
                if status == 1 { return Array(buffer[..<count]) }
                if SSL_get_error(ssl, status) == SSL_ERROR_ZERO_RETURN { return [] }
                throw failure(status, "read", errno: error)
            }
        }
    }

    /// Reads until the server closes the connection (at most `limit` bytes).
    public func readToEnd(limit: Int = 1 << 20) async throws -> [UInt8] {
        var all: [UInt8] = []
        while all.count < limit {
            let chunk = try await read()
            if chunk.isEmpty { break }
            all += chunk
        }
        return all
    }

    /// Sends close_notify and closes the socket's sending side.
    public func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        _ = try? await Self.offPool { [self] in
            lock.withLock {
                _ = SSL_shutdown(ssl)
                shutdown(fd, Int32(SHUT_WR))
            }
        }
    }

    private func failure(_ status: Int32, _ what: String, errno: Int32) -> TLSError {
        Self.failure(ssl, status, what, errno: errno)
    }

    // MARK: Opening

    /// libssl writes with send(2) without MSG_NOSIGNAL: a peer that has gone would raise SIGPIPE and end the
    /// process. Ignored once, process-wide, before the first connection (a write then fails with EPIPE instead).
    private static let sigpipeIgnored: Void = { signal(SIGPIPE, SIG_IGN) }()

    private static func open(host: String, port: UInt16, _ configuration: TLSConfiguration) throws -> TLSConnection {
        _ = sigpipeIgnored
        guard configuration.minimumVersion <= configuration.maximumVersion,
            configuration.applicationProtocols.allSatisfy({ !$0.isEmpty && $0.utf8.count < 256 })
        else { throw TLSError(.invalidConfiguration, "the versions or ALPN names are not usable") }
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError(.handshakeFailed, "SSL_CTX_new failed")
        }
        var owned = true
        defer { if owned { SSL_CTX_free(context) } }
        guard copenssl_tls_set_versions(context, Int32(configuration.minimumVersion.rawValue), Int32(configuration.maximumVersion.rawValue)) == 1
        else { throw TLSError(.invalidConfiguration, "the protocol versions cannot be set") }
        // The server's chain is judged by the verify callback below, which runs the project's trust evaluator.
        let verifier = Verifier(configuration)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        SSL_CTX_set_cert_verify_callback(context, Verifier.callback, Unmanaged.passUnretained(verifier).toOpaque())
        if let identity = configuration.identity { try use(identity, in: context) }
        if !configuration.applicationProtocols.isEmpty {
            let wire = configuration.applicationProtocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            guard SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0 else {
                throw TLSError(.invalidConfiguration, "the ALPN list cannot be set")
            }
        }
        let fd = try Socket.connect(host: host, port: port, timeout: configuration.timeout)
        guard let ssl = SSL_new(context) else {
            Glibc.close(fd)
            throw TLSError(.handshakeFailed, "SSL_new failed")
        }
        let connection: TLSConnection
        do {
            guard SSL_set_fd(ssl, fd) == 1 else { throw TLSError(.handshakeFailed, "SSL_set_fd failed") }
            if let name = configuration.serverName, !name.isIPAddressLiteral {
                _ = copenssl_tls_set_server_name(ssl, name)
            }
            let status = withExtendedLifetime(verifier) { SSL_connect(ssl) }
            let error = errno
            guard status == 1 else {
                if let result = verifier.result, !result.isTrusted {
                    throw TLSError(.untrusted, "the server's chain is not trusted: \(result.outcome)", trust: result)
                }
                throw failure(ssl, status, "handshake", errno: error)
            }
            // !: a completed handshake ran the verify callback, which sets both.
            let version: TLSVersion = SSL_version(ssl) == TLS1_3_VERSION ? .tls13 : .tls12
            var protocolName: UnsafePointer<UInt8>?
            var protocolLength: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &protocolName, &protocolLength)
            let selected = protocolName.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(protocolLength)), as: UTF8.self) }
            owned = false
            connection = TLSConnection(
                context: context, ssl: ssl, fd: fd, peer: verifier.presented, trust: verifier.result!, version: version,
                applicationProtocol: selected)
        } catch {
            SSL_free(ssl)
            Glibc.close(fd)
            throw error
        }
        return connection
    }

    private static func use(_ identity: TLSIdentity, in context: OpaquePointer) throws {
        let loaded = identity.certificate.withUnsafeX509 { x509 in
            identity.privateKey.withUnsafePKEY { key in
                SSL_CTX_use_certificate(context, x509) == 1 && SSL_CTX_use_PrivateKey(context, key) == 1
                    && SSL_CTX_check_private_key(context) == 1
            }
        }
        ERR_clear_error()
        guard loaded else { throw TLSError(.invalidConfiguration, "the identity's key is not its certificate's") }
        for certificate in identity.chain {
            guard certificate.withUnsafeX509({ copenssl_tls_add_chain_certificate(context, $0) }) == 1 else {
                throw TLSError(.invalidConfiguration, "an identity chain certificate cannot be added")
            }
        }
    }

    /// The error of a failed libssl call; `errno` is the one saved right after it (the calls below may change it).
    private static func failure(_ ssl: OpaquePointer, _ status: Int32, _ what: String, errno: Int32) -> TLSError {
        let kind = SSL_get_error(ssl, status)
        let code = ERR_peek_error()
        var text = [CChar](repeating: 0, count: 256)
        if code != 0 { ERR_error_string_n(code, &text, text.count) }
        let detail = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        ERR_clear_error()
        // The socket blocks, with send and receive timeouts: "would block" can only mean the timeout passed.
        if kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE
            || (kind == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK))
        {
            return TLSError(.timeout, "\(what): no answer within the timeout")
        }
        if kind == SSL_ERROR_SYSCALL {
            return TLSError(.protocolError, "\(what): the connection ended unexpectedly" + (detail.isEmpty ? "" : " (\(detail))"))
        }
        // An alert from the server (reason 1000 + its code) is a refusal, at the handshake or, with TLS 1.3's
        // client authentication, at the first read; anything else after the handshake is a broken protocol.
        let alert = code != 0 && ERR_GET_REASON(code) >= SSL_AD_REASON_OFFSET
        if what == "handshake" || alert { return TLSError(.handshakeFailed, "\(what): \(detail)") }
        return TLSError(.protocolError, "\(what): \(detail)")
    }

    /// Runs blocking work on a Dispatch thread and resumes with its result. OpenSSL's error queue is per thread:
    /// it is emptied before and after, so no failure reads another call's error.
    private static func offPool<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                ERR_clear_error()
                let result = Result { try work() }
                ERR_clear_error()
                continuation.resume(with: result)
            }
        }
    }
}

/// The verify callback's state: the configuration, then what the server presented and how it was judged.
private final class Verifier: @unchecked Sendable {
    // @unchecked: written by the callback during SSL_connect, read after it returns, on the same thread.
    let configuration: TLSConfiguration
    var presented: [Certificate] = []
    var result: TrustResult?

    init(_ configuration: TLSConfiguration) { self.configuration = configuration }

    /// libssl's certificate verification, replaced: the peer's chain through the project's trust evaluator.
    static let callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { store, argument in
        guard let store, let argument else { return 0 }
        let verifier = Unmanaged<Verifier>.fromOpaque(argument).takeUnretainedValue()
        var chain: [Certificate] = []
        if let untrusted = X509_STORE_CTX_get0_untrusted(store) {
            for index in 0..<copenssl_trust_certificates_count(untrusted) {
                if let x509 = copenssl_trust_certificates_at(untrusted, index), let certificate = copiedCertificate(x509) {
                    chain.append(certificate)
                }
            }
        }
        if chain.isEmpty, let leaf = X509_STORE_CTX_get0_cert(store), let certificate = copiedCertificate(leaf) {
            chain = [certificate]
        }
        verifier.presented = chain
        guard let leaf = chain.first else { return 0 }
        let configuration = verifier.configuration
        let evaluator = TrustEvaluator(
            anchors: configuration.anchors, policies: [.sslServer(hostname: configuration.serverName)],
            revocation: configuration.revocation)
        let result = try? evaluator.evaluate(leaf, intermediates: Array(chain.dropFirst()))
        verifier.result = result
        guard let result, result.isTrusted else {
            X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_UNTRUSTED)
            return 0
        }
        return 1
    }
}

/// The TCP connection under a TLS client: resolved, connected within the timeout, then blocking with send and
/// receive timeouts (libssl's calls run on a Dispatch thread).
enum Socket {
    static func connect(host: String, port: UInt16, timeout: Duration) throws -> Int32 {
        // The resolver NetworkFetch uses; the connection here stays blocking, for libssl's calls.
        guard case .success(let addresses) = SocketFetcher.systemResolver(host, port) else {
            throw TLSError(.unreachable, "\(host) does not resolve")
        }
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var lastError: Int32 = ECONNREFUSED
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var status = address.bytes.withUnsafeBytes {
                Glibc.connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))  // !: not empty
            }
            if status != 0 && errno == EINPROGRESS {
                var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&waiting, 1, milliseconds)
                if ready == 0 {
                    Glibc.close(fd)
                    throw TLSError(.timeout, "no connection to \(host):\(port) within \(timeout)")
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                status = error == 0 ? 0 : -1
                errno = error
            }
            guard status == 0 else {
                lastError = errno
                Glibc.close(fd)
                continue
            }
            _ = fcntl(fd, F_SETFL, flags)
            var limit = timeval(tv_sec: Int(milliseconds / 1000), tv_usec: Int(milliseconds % 1000) * 1000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            return fd
        }
        throw TLSError(.unreachable, "\(host):\(port): \(String(cString: strerror(lastError)))")
    }
}
