public import Certificates
import Foundation
public import Trust

extension CertificateManager {
    /// Validates a peer's chain for TLS server use, without checking its name.
    /// - Parameter chain: the peer's certificates, leaf first.
    /// - Returns: the evaluation (trusted).
    /// - Throws: ``CertificateManagerError`` naming the certificate at fault and the reason.
    public func validate(trust chain: [Certificate]) async throws -> TrustResult {
        try await validate(trust: chain, expectedServiceDomain: nil, expectedHostname: nil, peerPort: nil)
    }

    /// Validates a peer's chain for TLS server use and its identity: RFC 5280 path building to the private
    /// trust store alone when it exists and is enabled, else to the system anchors alone (never a mix, never a
    /// fallback); the revocation policy of ``configuration``; then the expected hostname (RFC 6125) or SIP
    /// service domain (RFC 5922), unless ``SecurityPolicyConfiguration/continueOnServerIdentityFailure`` is on.
    /// - Parameters:
    ///   - chain: the peer's certificates, leaf first.
    ///   - expectedServiceDomain: the SIP domain the server must speak for, or nil.
    ///   - expectedHostname: the DNS name or IP address the server must match, or nil.
    ///   - peerPort: the peer's port (informational: it appears in error reasons).
    /// - Returns: the evaluation.
    /// - Throws: ``CertificateManagerError`` `.invalidValidationRequest` (both names given, no certificate),
    ///   `.untrusted`, `.revoked`, `.revocationUnavailable`, `.hostnameMismatch`, `.serviceDomainMismatch`,
    ///   `.keychain`; each names the certificate (subject summary) and the reason.
    public func validate(
        trust chain: [Certificate], expectedServiceDomain: String?, expectedHostname: String?, peerPort: Int?
    ) async throws -> TrustResult {
        try Task.checkCancellation()
        return try await evaluate(chain, serviceDomain: expectedServiceDomain, hostname: expectedHostname, port: peerPort)
    }

    /// Validates the certificates a `SecTrust` was created with (leaf first), as
    /// ``validate(trust:expectedServiceDomain:expectedHostname:peerPort:)`` does: the manager's anchors and policy
    /// apply, not the `SecTrust`'s.
    /// - Parameters:
    ///   - trust: the peer's trust object, from `SecTrustCreateWithCertificates` (any ``PresentedCertificates``).
    ///   - expectedServiceDomain: the SIP domain the server must speak for, or nil.
    ///   - expectedHostname: the DNS name or IP address the server must match, or nil.
    ///   - peerPort: the peer's port, or nil.
    /// - Returns: the evaluation.
    /// - Throws: ``CertificateManagerError``, as the chain form.
    public func validate(
        trust: some PresentedCertificates, expectedServiceDomain: String? = nil, expectedHostname: String? = nil,
        peerPort: Int? = nil
    ) async throws -> TrustResult {
        try await validate(
            trust: trust.presentedCertificates, expectedServiceDomain: expectedServiceDomain,
            expectedHostname: expectedHostname, peerPort: peerPort)
    }

    /// The completion-handler form of ``validate(trust:expectedServiceDomain:expectedHostname:peerPort:)``.
    /// - Parameters:
    ///   - chain: the peer's certificates, leaf first.
    ///   - expectedServiceDomain: the SIP domain the server must speak for, or nil.
    ///   - expectedHostname: the DNS name or IP address the server must match, or nil.
    ///   - peerPort: the peer's port, or nil.
    ///   - completion: called once, on another task, with the evaluation or the error.
    public func validate(
        trust chain: [Certificate], expectedServiceDomain: String? = nil, expectedHostname: String? = nil,
        peerPort: Int? = nil, completion: @escaping @Sendable (Result<TrustResult, CertificateManagerError>) -> Void
    ) {
        Task {
            do {
                completion(
                    .success(
                        try await validate(
                            trust: chain, expectedServiceDomain: expectedServiceDomain,
                            expectedHostname: expectedHostname, peerPort: peerPort)))
            } catch {
                completion(.failure(Self.keychainError(error, "validating")))
            }
        }
    }

    /// - Parameter stapledOCSPResponses: DER OCSP responses the peer stapled, used by the revocation policy (when
    ///   there is one) before any fetch.
    func evaluate(
        _ chain: [Certificate], serviceDomain: String?, hostname: String?, port: Int?, stapledOCSPResponses: [Data] = []
    ) async throws -> TrustResult {
        guard let leaf = chain.first else {
            throw CertificateManagerError(.invalidValidationRequest, "no certificate to validate")
        }
        guard serviceDomain == nil || hostname == nil else {
            throw CertificateManagerError(
                .invalidValidationRequest, "an expected service domain and an expected hostname exclude each other")
        }
        let configuration = configuration
        let privateAnchors = configuration.privateTrustStoreEnabled ? try certificates : []
        let anchors = privateAnchors.isEmpty ? systemAnchors : privateAnchors
        let source = privateAnchors.isEmpty ? "the system anchors" : "the private trust store"
        var revocation: RevocationPolicy?
        switch configuration.revocationCheckPolicy {
        case .bestEffort: revocation = RevocationPolicy(requirePositiveResponse: false)
        case .mandatory: revocation = RevocationPolicy(requirePositiveResponse: true)
        default: revocation = nil
        }
        revocation?.stapledOCSPResponses = stapledOCSPResponses
        var evaluator = TrustEvaluator(
            anchors: anchors, policies: [.sslServerWithCommonNameFallback(hostname: hostname)], verificationDate: clock(),
            revocation: revocation)
        evaluator.network = network
        let result: TrustResult
        do {
            result = try await evaluator.evaluate(leaf, intermediates: Array(chain.dropFirst()))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw CertificateManagerError(
                .invalidValidationRequest, "\(error)", certificateSubject: leaf.subjectSummary)
        }
        let peer = hostname ?? serviceDomain ?? "the peer"
        let at = port.map { "\(peer):\($0)" } ?? peer
        for status in result.statuses {
            let reasons = status.reasons.filter { $0 != .hostnameMismatch }
            guard !reasons.isEmpty else { continue }
            let code: CertificateManagerError.Code =
                reasons.contains(.revoked)
                ? .revoked : reasons == [.revocationUnavailable] ? .revocationUnavailable : .untrusted
            throw CertificateManagerError(
                code, "\(reasons.map(\.description).joined(separator: ", ")) (anchored to \(source), peer \(at))",
                certificateSubject: status.certificate.subjectSummary)
        }
        guard !configuration.continueOnServerIdentityFailure else { return result }
        if let hostname, result.statuses.first?.reasons.contains(.hostnameMismatch) == true {
            throw CertificateManagerError(
                .hostnameMismatch, "the certificate's names do not match \(hostname) (peer \(at))",
                certificateSubject: leaf.subjectSummary)
        }
        if let serviceDomain, !ServiceDomain.matches(leaf, domain: serviceDomain) {
            let presented = ServiceDomain.identities(of: leaf)
            let names = presented.isEmpty ? "no SIP domain" : presented.joined(separator: ", ")
            throw CertificateManagerError(
                .serviceDomainMismatch, "the certificate speaks for \(names), not \(serviceDomain) (peer \(at))",
                certificateSubject: leaf.subjectSummary)
        }
        return result
    }
}
