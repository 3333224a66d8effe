/// Why a certificate of the chain fails, with Apple's classification (Security's `SecPolicyChecks.list`): a
/// recoverable reason is one a changed setting can fix (a date, a hostname, an anchor, a missing intermediate,
/// a usage); a fatal one nothing can fix (a bad signature, a malformed certificate, a CA constraint broken).
/// Equal by kind; new reasons never break callers.
public struct TrustFailureReason: Hashable, Sendable, CustomStringConvertible {
    /// Whether a changed setting can fix the failure.
    public struct Severity: Hashable, Sendable, CustomStringConvertible {
        fileprivate let name: String
        /// `kSecTrustResultRecoverableTrustFailure`.
        public static let recoverable = Severity(name: "recoverable")
        /// `kSecTrustResultFatalTrustFailure`.
        public static let fatal = Severity(name: "fatal")
        public var description: String { name }
    }

    fileprivate let name: String
    public let severity: Severity

    private init(_ name: String, _ severity: Severity) {
        self.name = name
        self.severity = severity
    }

    public var isFatal: Bool { severity == .fatal }
    public var description: String { name }

    // Recoverable.
    /// The verification date is after the certificate's notAfter second.
    public static let expired = TrustFailureReason("expired", .recoverable)
    /// The verification date is before the certificate's notBefore.
    public static let notYetValid = TrustFailureReason("notYetValid", .recoverable)
    /// The path ends in a self-signed certificate that is not an anchor.
    public static let untrustedRoot = TrustFailureReason("untrustedRoot", .recoverable)
    /// No issuer of the certificate was given (a missing intermediate or anchor).
    public static let missingIssuer = TrustFailureReason("missingIssuer", .recoverable)
    /// An issuing certificate is not a CA (basic constraints absent or cA false).
    public static let basicConstraints = TrustFailureReason("basicConstraints", .recoverable)
    /// A CA's pathLenConstraint is exceeded, or the path is longer than the budget allows.
    public static let pathLength = TrustFailureReason("pathLength", .recoverable)
    /// The key usage does not allow what the certificate is used for (keyCertSign, cRLSign, a TLS usage).
    public static let keyUsage = TrustFailureReason("keyUsage", .recoverable)
    /// The extended key usage lacks the policy's purpose (serverAuth, clientAuth).
    public static let extendedKeyUsage = TrustFailureReason("extendedKeyUsage", .recoverable)
    /// A critical extension this evaluator does not process.
    public static let unhandledCriticalExtension = TrustFailureReason("unhandledCriticalExtension", .recoverable)
    /// The SSL policy's hostname matches none of the leaf's names.
    public static let hostnameMismatch = TrustFailureReason("hostnameMismatch", .recoverable)
    /// Revocation was required and could not be established (no CRL, a CRL that is stale, unverifiable or out of
    /// scope).
    public static let revocationUnavailable = TrustFailureReason("revocationUnavailable", .recoverable)
    /// The work budget ran out before a trusted path was found.
    public static let budgetExhausted = TrustFailureReason("budgetExhausted", .recoverable)

    // Fatal.
    /// A signature in the path does not verify with its issuer's key.
    public static let badSignature = TrustFailureReason("badSignature", .fatal)
    /// The certificate is malformed: an unreadable time or extension, or a strict-profile violation.
    public static let malformed = TrustFailureReason("malformed", .fatal)
    /// A key or signature algorithm too weak for the policy.
    public static let weakKeyOrSignature = TrustFailureReason("weakKeyOrSignature", .fatal)
    /// A name outside an issuer's name constraints.
    public static let nameConstraints = TrustFailureReason("nameConstraints", .fatal)
    /// The certificate policies fail an issuer's policy constraints (no acceptable policy, a bad mapping).
    public static let policyConstraints = TrustFailureReason("policyConstraints", .fatal)
    /// The certificate is revoked.
    public static let revoked = TrustFailureReason("revoked", .fatal)
    /// OpenSSL rejected the path for a reason this evaluator does not name (its code is in `openSSLErrors`).
    public static let other = TrustFailureReason("other", .fatal)
    /// A user's or administrator's trust setting distrusts the certificate (Apple's result type Deny). Fatal
    /// in that no exception or option forgives it; only changing the setting does.
    public static let denied = TrustFailureReason("denied", .fatal)

    /// Every reason, for reading one back by name.
    public static let all: [TrustFailureReason] = [
        .expired, .notYetValid, .untrustedRoot, .missingIssuer, .basicConstraints, .pathLength, .keyUsage,
        .extendedKeyUsage, .unhandledCriticalExtension, .hostnameMismatch, .revocationUnavailable, .budgetExhausted,
        .badSignature, .malformed, .weakKeyOrSignature, .nameConstraints, .policyConstraints, .revoked, .other,
        .denied,
    ]

    /// The reason of that ``description``; nil for none.
    public init?(named name: String) {
        guard let reason = Self.all.first(where: { $0.name == name }) else { return nil }
        self = reason
    }

    public static func == (lhs: TrustFailureReason, rhs: TrustFailureReason) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
