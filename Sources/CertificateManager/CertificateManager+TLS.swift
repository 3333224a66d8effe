import NetworkFetch
public import TLS

extension CertificateManager {
    /// A TLS client configuration for "all the connections an application is making": the server's chain is
    /// validated by this manager (``validate(trust:expectedServiceDomain:expectedHostname:peerPort:)``'s rules: the
    /// private trust store alone when it is enabled and holds certificates, else the system's anchors; the
    /// configuration's revocation policy, which uses an OCSP response the server staples before any fetch; the
    /// hostname or SIP service domain), and the manager's client identity
    /// is presented when the server asks for one. The name is sent as SNI.
    /// - Parameters:
    ///   - hostname: the DNS name or IP address the server must match.
    ///   - serviceDomain: the SIP domain the server must speak for (exclusive with `hostname`).
    ///   - checkingChainOnly: the named opt-out when neither name is given: the server's chain alone is validated,
    ///     whatever name it proves.
    ///   - port: the server's port, for error reasons.
    /// - Throws: ``CertificateManagerError`` `.invalidValidationRequest` when both names are given, or neither without
    ///   `checkingChainOnly` (the manager exists to validate the server's identity); `.keychain` when the identity
    ///   cannot be read.
    public func tlsConfiguration(
        hostname: String? = nil, serviceDomain: String? = nil, checkingChainOnly: Bool = false, port: Int? = nil,
        applicationProtocols: [String] = [], timeout: Duration = .seconds(30)
    ) throws -> TLSConfiguration {
        guard hostname == nil || serviceDomain == nil else {
            throw CertificateManagerError(
                .invalidValidationRequest, "an expected service domain and an expected hostname exclude each other")
        }
        guard hostname != nil || serviceDomain != nil || checkingChainOnly else {
            throw CertificateManagerError(
                .invalidValidationRequest,
                "a TLS configuration needs the hostname or SIP service domain the server must prove (or checkingChainOnly to validate its chain alone)")
        }
        var configuration = TLSConfiguration(
            anchors: [], serverName: hostname ?? serviceDomain, applicationProtocols: applicationProtocols, timeout: timeout)
        if let identity = try clientIdentity {
            configuration.identity = TLSIdentity(
                certificate: identity.certificate, privateKey: identity.privateKey, chain: try clientIdentityCertificateChain)
        }
        // The TLS engine judges the server inside its handshake, synchronously.
        configuration.serverJudge = { [self] chain, stapledOCSPResponse in
            try NetworkExecutor.wait {
                try await self.evaluate(
                    chain, serviceDomain: serviceDomain, hostname: hostname, port: port,
                    stapledOCSPResponses: stapledOCSPResponse.map { [$0] } ?? [])
            }
        }
        return configuration
    }
}
