public import TLS

extension CertificateManager {
    /// A TLS client configuration for "all the connections an application is making": the server's chain is
    /// validated by this manager (``validate(trust:expectedServiceDomain:expectedHostname:peerPort:)``'s rules: the
    /// private trust store alone when it is enabled and holds certificates, else the system's anchors; the
    /// configuration's revocation policy, which uses an OCSP response the server staples before any fetch; the
    /// hostname or SIP service domain), and the manager's client identity
    /// is presented when the server asks for one. The name is sent as SNI.
    /// - Parameters:
    ///   - hostname: the DNS name or IP address the server must match, or nil.
    ///   - serviceDomain: the SIP domain the server must speak for, or nil (exclusive with `hostname`).
    ///   - port: the server's port, for error reasons.
    /// - Throws: ``CertificateManagerError`` `.invalidValidationRequest` when both names are given, `.keychain` when
    ///   the identity cannot be read.
    public func tlsConfiguration(
        hostname: String? = nil, serviceDomain: String? = nil, port: Int? = nil, applicationProtocols: [String] = [],
        timeout: Duration = .seconds(30)
    ) throws -> TLSConfiguration {
        guard hostname == nil || serviceDomain == nil else {
            throw CertificateManagerError(
                .invalidValidationRequest, "an expected service domain and an expected hostname exclude each other")
        }
        var configuration = TLSConfiguration(
            anchors: [], serverName: hostname ?? serviceDomain, applicationProtocols: applicationProtocols, timeout: timeout)
        if let identity = try clientIdentity {
            configuration.identity = TLSIdentity(
                certificate: identity.certificate, privateKey: identity.privateKey, chain: try clientIdentityCertificateChain)
        }
        configuration.serverJudge = { [self] chain, stapledOCSPResponse in
            try evaluate(
                chain, serviceDomain: serviceDomain, hostname: hostname, port: port,
                stapledOCSPResponses: stapledOCSPResponse.map { [$0] } ?? [])
        }
        return configuration
    }
}
