internal import COpenSSL

/// What the certificate is trusted for (Apple's `SecPolicy`): a value compared by what it checks.
public struct TrustPolicy: Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case basicX509
        case sslServer(hostname: String?, commonNameFallback: Bool)
        case sslClient
    }

    let kind: Kind

    /// `SecPolicyCreateBasicX509`: RFC 5280 path validation and nothing more.
    public static let basicX509 = TrustPolicy(kind: .basicX509)

    /// `SecPolicyCreateSSL(true, hostname)`: the leaf and every CA allow serverAuth (an extended key usage, when
    /// present, names it), the leaf's key usage allows TLS, the strict X.509 profile holds, and, when a hostname
    /// is given, the leaf's names match it (RFC 6125).
    /// - Parameter hostname: a DNS name (A-labels for internationalized names) or an IPv4/IPv6 address; nil
    ///   checks no name.
    public static func sslServer(hostname: String? = nil) -> TrustPolicy {
        TrustPolicy(kind: .sslServer(hostname: hostname, commonNameFallback: false))
    }

    /// As ``sslServer(hostname:)``, except that the subject's common names stand in for the names when the leaf
    /// has no subjectAltName extension at all (the certificate manager's server-identity rules: SAN first, CN only
    /// when there is no SAN). The path's name constraints apply to such a CN too. Modern Apple platforms no longer
    /// fall back: use this only where a product asks for it.
    /// - Parameter hostname: as for ``sslServer(hostname:)``.
    public static func sslServerWithCommonNameFallback(hostname: String?) -> TrustPolicy {
        TrustPolicy(kind: .sslServer(hostname: hostname, commonNameFallback: true))
    }

    /// Whether the web-PKI profile (``WebPKIProfile``) applies: the SSL policies, not basic X.509.
    var enforcesWebPKIProfile: Bool {
        switch kind {
        case .basicX509: false
        case .sslServer, .sslClient: true
        }
    }

    /// Whether the leaf's common names stand in for a missing subjectAltName extension.
    var commonNameFallback: Bool {
        if case .sslServer(_, let fallback) = kind { return fallback }
        return false
    }

    /// `SecPolicyCreateSSL(false, nil)`: as the server policy, for clientAuth, with no hostname.
    public static let sslClient = TrustPolicy(kind: .sslClient)

    /// The hostname the leaf must match, if any.
    public var hostname: String? {
        if case .sslServer(let hostname, _) = kind { return hostname }
        return nil
    }

    public var description: String {
        switch kind {
        case .basicX509: "basicX509"
        case .sslServer(let hostname, let fallback):
            (hostname.map { "sslServer(\($0))" } ?? "sslServer") + (fallback ? "+CN" : "")
        case .sslClient: "sslClient"
        }
    }

    /// OpenSSL's purpose for the policy (0: none), which checks the EKU and KU of the leaf and the CAs.
    var openSSLPurpose: Int32 {
        switch kind {
        case .basicX509: 0
        case .sslServer: X509_PURPOSE_SSL_SERVER
        case .sslClient: X509_PURPOSE_SSL_CLIENT
        }
    }

    /// The extended key usage the policy requires (a dotted OID), nil for none.
    var requiredExtendedKeyUsage: String? {
        switch kind {
        case .basicX509: nil
        case .sslServer: "1.3.6.1.5.5.7.3.1"
        case .sslClient: "1.3.6.1.5.5.7.3.2"
        }
    }

    /// Whether OpenSSL's X509_V_FLAG_X509_STRICT applies. Not for basic X.509: it rejects a CA whose basic
    /// constraints are not critical, which RFC 5280 allows and PKITS 4.6.4 requires to pass. The SSL policies
    /// follow the CA/Browser Forum profile, which requires it.
    var isStrict: Bool {
        switch kind {
        case .basicX509: false
        case .sslServer, .sslClient: true
        }
    }

    func validate() throws {
        if let hostname, !Hostname.isWellFormed(hostname) {
            throw TrustError(.invalidHostname, "\"\(hostname)\" is not a DNS name or an IP address")
        }
    }
}
