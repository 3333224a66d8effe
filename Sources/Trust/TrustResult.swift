public import Certificates

/// What an evaluation found: whether the leaf is trusted for the policies, the chain it built (leaf to anchor,
/// or as far as it got), and each certificate's failures.
public struct TrustResult: Sendable, CustomStringConvertible {
    /// Apple's result types, for an evaluation that ran.
    public struct Outcome: Hashable, Sendable, CustomStringConvertible {
        fileprivate let name: String
        /// `kSecTrustResultUnspecified`: a trusted chain, with no user setting involved.
        public static let trusted = Outcome(name: "trusted")
        /// `kSecTrustResultProceed`: a trusted chain, because a trust setting says so (it makes a certificate of
        /// the chain an anchor, or forgives a failure).
        public static let proceed = Outcome(name: "proceed")
        /// `kSecTrustResultDeny`: a trust setting distrusts a certificate of the chain.
        public static let denied = Outcome(name: "denied")
        /// `kSecTrustResultRecoverableTrustFailure`: only failures a changed setting can fix.
        public static let recoverableTrustFailure = Outcome(name: "recoverableTrustFailure")
        /// `kSecTrustResultFatalTrustFailure`: at least one failure nothing can fix.
        public static let fatalTrustFailure = Outcome(name: "fatalTrustFailure")
        public var description: String { name }
    }

    /// One OpenSSL verification error, kept as OpenSSL reported it.
    public struct OpenSSLError: Hashable, Sendable, CustomStringConvertible {
        /// The `X509_V_ERR_*` code.
        public let code: Int
        /// `X509_verify_cert_error_string(code)`.
        public let message: String
        public var description: String { "\(code): \(message)" }
    }

    /// One certificate of the chain and what fails about it.
    public struct CertificateStatus: Sendable, CustomStringConvertible {
        /// The certificate at this position of the chain.
        public let certificate: Certificate
        /// The failures, each once, in the order found; empty when the certificate passes.
        public internal(set) var reasons: [TrustFailureReason]
        /// The OpenSSL verification errors behind `reasons` (the validity period and hostname are checked here,
        /// not by OpenSSL, and have none).
        public internal(set) var openSSLErrors: [OpenSSLError]
        /// The named rules of our own checks behind `reasons` (`webPKI.weakSignature.sha1`,
        /// `nameConstraints.excluded DNS:www.bank.com`…), each once, in the order found.
        public internal(set) var rules: [String]

        init(_ certificate: Certificate) {
            self.certificate = certificate
            reasons = []
            openSSLErrors = []
            rules = []
        }

        mutating func add(_ reason: TrustFailureReason, openSSL: OpenSSLError? = nil, rule: String? = nil) {
            if !reasons.contains(reason) { reasons.append(reason) }
            if let openSSL, !openSSLErrors.contains(openSSL) { openSSLErrors.append(openSSL) }
            if let rule, !rules.contains(rule) { rules.append(rule) }
        }

        /// Removes the recoverable reasons of `allowed`; true when one was there. The OpenSSL errors stay as
        /// OpenSSL reported them.
        mutating func forgive(_ allowed: [TrustFailureReason]) -> Bool {
            let before = reasons.count
            reasons.removeAll { !$0.isFatal && allowed.contains($0) }
            return reasons.count != before
        }

        public var description: String {
            var failures = reasons.isEmpty ? "ok" : reasons.map(\.description).joined(separator: ", ")
            if !rules.isEmpty { failures += " (\(rules.joined(separator: ", ")))" }
            return "\(certificate.subjectSummary ?? "?"): \(failures)"
        }
    }

    /// The chain, leaf first, with each certificate's failures. It ends at an anchor when a path to one was
    /// found, else where building stopped.
    public let statuses: [CertificateStatus]
    /// The work the evaluation did.
    public let work: Work
    /// Whether a trust setting made a certificate of the chain an anchor or forgave a failure.
    public let trustedBySetting: Bool

    init(statuses: [CertificateStatus], work: Work, trustedBySetting: Bool = false) {
        self.statuses = statuses
        self.work = work
        self.trustedBySetting = trustedBySetting
    }

    /// The chain, leaf first (`SecTrustCopyCertificateChain`).
    public var chain: [Certificate] { statuses.map(\.certificate) }
    /// Every failure of the chain, each once.
    public var reasons: [TrustFailureReason] {
        statuses.flatMap(\.reasons).reduce(into: []) { all, reason in if !all.contains(reason) { all.append(reason) } }
    }
    /// Each failing certificate, leaf first, with its reasons: `localhost: expired; Test CA: missingIntermediate`
    /// (a certificate without a subject summary is named by its place in the chain).
    public var failureSummary: String {
        statuses.enumerated().filter { !$0.element.reasons.isEmpty }.map { index, status in
            "\(status.certificate.subjectSummary ?? "certificate \(index)"): \(status.reasons.map(\.description).joined(separator: ", "))"
        }.joined(separator: "; ")
    }

    /// Whether the leaf is trusted for every policy.
    public var isTrusted: Bool { statuses.allSatisfy { $0.reasons.isEmpty } }
    /// Apple's classification of the result.
    public var outcome: Outcome {
        let reasons = self.reasons
        if reasons.isEmpty { return trustedBySetting ? .proceed : .trusted }
        if reasons.contains(.denied) { return .denied }
        return reasons.contains(where: \.isFatal) ? .fatalTrustFailure : .recoverableTrustFailure
    }

    public var description: String {
        "\(outcome) [\(statuses.map(\.description).joined(separator: " | "))]"
    }
}
