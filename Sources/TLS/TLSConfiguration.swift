public import Certificates
public import Foundation
public import NetworkFetch
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
    /// The name the server must prove (and the SNI sent). Nil is refused when the connection opens
    /// (`.invalidConfiguration`) unless ``checksChainOnly`` is set or a ``serverJudge`` checks names itself: a client
    /// that checks no name accepts every server its anchors vouch for.
    public var serverName: String?
    /// The named opt-out from the name check when ``serverName`` is nil: the server's chain alone is judged (anchors,
    /// profile, revocation, trust settings), whatever name it proves. With a ``serverName`` the name is checked anyway.
    public var checksChainOnly = false
    /// Revocation checking of the server's chain (nil: none).
    public var revocation: RevocationPolicy?
    /// The certificate the client presents when the server asks.
    public var identity: TLSIdentity?
    /// ALPN protocols offered, most preferred first.
    public var applicationProtocols: [String]
    public var minimumVersion: TLSVersion
    public var maximumVersion: TLSVersion
    /// Name resolution, connection and handshake end within this time, all three together; then each read or write.
    public var timeout: Duration
    /// Resolves the host's name (default `getaddrinfo`, NetworkFetch's); it runs on a thread of its own and is
    /// abandoned, not waited for, when the timeout passes (`getaddrinfo` cannot be interrupted).
    public var resolver: SocketFetcher.Resolver = SocketFetcher.systemResolver
    /// Sessions kept for resumption (nil: every connection makes a full handshake). A resumed connection's chain
    /// is the one presented when the session was made, judged under this configuration.
    public var sessionCache: TLSSessionCache?
    /// Judges the server's chain (leaf first) instead of ``anchors``, ``serverName``'s check and ``revocation``:
    /// returning accepts (with the evaluation the connection reports), throwing refuses (`.untrusted`, the error's
    /// description as the reason). The server is asked to staple its OCSP status (RFC 6066), and the judge runs
    /// once per full handshake, when that status is known: `stapledOCSPResponse` is the DER response the server
    /// stapled, or nil (none, or a resumed session). The certificate manager's validation comes this way
    /// (`CertificateManager.tlsConfiguration`). ``serverName`` is still sent as SNI.
    public var serverJudge: (@Sendable (_ chain: [Certificate], _ stapledOCSPResponse: Data?) throws -> TrustResult)?
    /// The user's and administrator's trust settings the server's chain is judged under, read at each handshake
    /// (default: the domains in effect where the configuration is made, ``TrustSettingsDomains/current``; nil
    /// consults none). A denial always counts; the certificates they trust are anchors only when ``anchors`` are
    /// the system's, never beside an application's own anchors.
    public var trustSettings: TrustSettingsDomains?

    public init(
        anchors: [Certificate] = SystemAnchors.all, serverName: String?, revocation: RevocationPolicy? = nil,
        identity: TLSIdentity? = nil, applicationProtocols: [String] = [], minimumVersion: TLSVersion = .tls12,
        maximumVersion: TLSVersion = .tls13, timeout: Duration = .seconds(30), sessionCache: TLSSessionCache? = nil,
        trustSettings: TrustSettingsDomains? = TrustSettingsDomains.current
    ) {
        self.trustSettings = trustSettings
        self.anchors = anchors
        self.serverName = serverName
        self.revocation = revocation
        self.identity = identity
        self.applicationProtocols = applicationProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.timeout = timeout
        self.sessionCache = sessionCache
    }
}

/// How a server connection is made: the identity it presents and whom it asks for a certificate.
public struct TLSServerConfiguration: Sendable {
    public var identity: TLSIdentity
    /// Whether to ask the client for a certificate (``TLSEngine/ClientAuthentication/require`` fails the handshake
    /// without one).
    public var clientAuthentication: TLSEngine.ClientAuthentication
    /// The anchors a client certificate must reach (SSL client policy).
    public var clientAnchors: [Certificate]
    /// ALPN: the first of these the client offered is chosen.
    public var applicationProtocols: [String]
    public var minimumVersion: TLSVersion
    public var maximumVersion: TLSVersion
    /// The handshake and each read or write end within this time.
    public var timeout: Duration
    /// The trust settings a client's chain is judged under, as ``TLSConfiguration/trustSettings`` (their denials
    /// and allowed errors; their anchors only when ``clientAnchors`` are the system's).
    public var trustSettings: TrustSettingsDomains?

    public init(
        identity: TLSIdentity, clientAuthentication: TLSEngine.ClientAuthentication = .none, clientAnchors: [Certificate] = [],
        applicationProtocols: [String] = [], minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion = .tls13,
        timeout: Duration = .seconds(30), trustSettings: TrustSettingsDomains? = TrustSettingsDomains.current
    ) {
        self.trustSettings = trustSettings
        self.identity = identity
        self.clientAuthentication = clientAuthentication
        self.clientAnchors = clientAnchors
        self.applicationProtocols = applicationProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.timeout = timeout
    }
}
