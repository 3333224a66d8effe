public import Certificates
import Foundation

/// A user's or an administrator's decision about one certificate (Apple's trust settings, `SecTrustSettings`):
/// an ordered list of usage constraints, each saying for which policy (and which hostname) the certificate is
/// trusted as an anchor, distrusted, or has some failures forgiven. No constraint at all means "trusted as an
/// anchor for everything", as Apple's empty trust-settings array does.
///
/// ```swift
/// // The user distrusts a CA for TLS servers, whatever the hostname:
/// try TrustSettingsStore.current.user.set(
///     TrustSettings([.init(policy: .ssl, result: .deny)]), for: ca)
/// ```
public struct TrustSettings: Sendable, Hashable {
    /// What a matching constraint decides (Apple's `SecTrustSettingsResult`, with its raw values).
    public struct Result: Hashable, Sendable, CustomStringConvertible {
        /// `kSecTrustSettingsResult…` value.
        public let rawValue: UInt32

        /// A self-signed certificate is an anchor (`kSecTrustSettingsResultTrustRoot`).
        public static let trustRoot = Result(checked: 1)
        /// A certificate that is not self-signed is an anchor (`kSecTrustSettingsResultTrustAsRoot`).
        public static let trustAsRoot = Result(checked: 2)
        /// The certificate is distrusted: a chain through it is denied (`kSecTrustSettingsResultDeny`).
        public static let deny = Result(checked: 3)
        /// Neither: evaluation goes on as usual, with the constraint's allowed errors forgiven
        /// (`kSecTrustSettingsResultUnspecified`).
        public static let unspecified = Result(checked: 4)

        private init(checked rawValue: UInt32) { self.rawValue = rawValue }

        /// nil for a value Apple does not define (0, `kSecTrustSettingsResultInvalid`, included).
        public init?(rawValue: UInt32) {
            guard (1...4).contains(rawValue) else { return nil }
            self.rawValue = rawValue
        }

        /// Whether the result makes the certificate an anchor.
        public var isTrust: Bool { self == .trustRoot || self == .trustAsRoot }

        public var description: String {
            ["", "trustRoot", "trustAsRoot", "deny", "unspecified"][Int(rawValue)]
        }
    }

    /// The policy a constraint is limited to, by Apple's policy identifier (`kSecPolicyApple…`): one that
    /// covers both TLS policies, as Apple's SSL policy does.
    public struct Policy: Hashable, Sendable, CustomStringConvertible {
        /// The dotted OID.
        public let identifier: String

        /// `kSecPolicyAppleX509Basic`.
        public static let basicX509 = Policy(checked: "1.2.840.113635.100.1.2")
        /// `kSecPolicyAppleSSL`: TLS server and client.
        public static let ssl = Policy(checked: "1.2.840.113635.100.1.3")

        private init(checked identifier: String) { self.identifier = identifier }

        /// nil for an identifier other than the two above.
        public init?(identifier: String) {
            guard let policy = [Policy.basicX509, .ssl].first(where: { $0.identifier == identifier }) else { return nil }
            self = policy
        }

        /// Whether an evaluation under `policy` is one this constraint is limited to.
        func covers(_ policy: TrustPolicy) -> Bool {
            switch policy.kind {
            case .basicX509: self == .basicX509
            case .sslServer, .sslClient: self == .ssl
            }
        }

        public var description: String { self == .ssl ? "ssl" : "basicX509" }
    }

    /// One usage constraint (one dictionary of Apple's trust-settings array).
    public struct Constraint: Sendable, Hashable, CustomStringConvertible {
        /// The policy the constraint applies to; nil for every policy.
        public var policy: Policy?
        /// The SSL policy's hostname the constraint applies to (case-insensitive, a trailing dot ignored);
        /// nil for every hostname.
        public var policyString: String?
        /// Failures forgiven on this certificate when the constraint applies (recoverable ones only: no
        /// setting forgives a bad signature or a revocation).
        public var allowedErrors: [TrustFailureReason]
        /// What the constraint decides.
        public var result: Result

        /// - Throws: ``TrustError`` `.invalidTrustSettings` when an allowed error is fatal, or a policy string
        ///   is given without the SSL policy.
        public init(
            policy: Policy? = nil, policyString: String? = nil, allowedErrors: [TrustFailureReason] = [],
            result: Result
        ) throws {
            if let fatal = allowedErrors.first(where: \.isFatal) {
                throw TrustError(.invalidTrustSettings, "\(fatal) cannot be an allowed error: nothing forgives it")
            }
            if policyString != nil, policy != .ssl {
                throw TrustError(.invalidTrustSettings, "a policy string is the SSL policy's hostname")
            }
            self.policy = policy
            self.policyString = policyString
            self.allowedErrors = allowedErrors
            self.result = result
        }

        /// Whether the constraint applies to an evaluation under `policies`.
        func applies(to policies: [TrustPolicy]) -> Bool {
            policies.contains { evaluated in
                if let policy, !policy.covers(evaluated) { return false }
                guard let policyString else { return true }
                guard let hostname = evaluated.hostname else { return false }
                return Self.normalized(policyString) == Self.normalized(hostname)
            }
        }

        private static func normalized(_ name: String) -> String {
            let lower = name.lowercased()
            return lower.hasSuffix(".") ? String(lower.dropLast()) : lower
        }

        public var description: String {
            var parts = ["\(result)"]
            if let policy { parts.append("policy \(policy)") }
            if let policyString { parts.append("for \(policyString)") }
            if !allowedErrors.isEmpty { parts.append("allowing \(allowedErrors.map(\.description).joined(separator: ", "))") }
            return parts.joined(separator: ", ")
        }
    }

    /// The constraints, in order: the first that applies and decides (a result other than `unspecified`)
    /// wins. Empty: an anchor for every use.
    public var constraints: [Constraint]

    public init(_ constraints: [Constraint] = []) { self.constraints = constraints }

    /// What these settings decide for an evaluation under `policies`: the result of the first applicable
    /// constraint that decides (none when none does), and the allowed errors of every applicable constraint up
    /// to it. `selfSigned` picks the anchor result of an empty list.
    func decision(for policies: [TrustPolicy], selfSigned: Bool) -> (result: Result?, allowed: [TrustFailureReason]) {
        if constraints.isEmpty { return (selfSigned ? .trustRoot : .trustAsRoot, []) }
        var allowed: [TrustFailureReason] = []
        for constraint in constraints where constraint.applies(to: policies) {
            allowed += constraint.allowedErrors
            if constraint.result != .unspecified { return (constraint.result, allowed) }
        }
        return (nil, allowed)
    }

    /// Checks the settings fit `certificate`: `trustRoot` only for a self-signed certificate, `trustAsRoot` only
    /// for one that is not (Apple's rule).
    /// - Throws: ``TrustError`` `.invalidTrustSettings`.
    public func validate(for certificate: Certificate) throws {
        let selfSigned = certificate.isSelfIssued
        for constraint in constraints {
            if constraint.result == .trustRoot, !selfSigned {
                throw TrustError(.invalidTrustSettings, "trustRoot is for a self-signed certificate; use trustAsRoot")
            }
            if constraint.result == .trustAsRoot, selfSigned {
                throw TrustError(.invalidTrustSettings, "trustAsRoot is for a certificate that is not self-signed")
            }
        }
    }
}

/// The trust settings an evaluation consults, strongest domain first (the user's over the administrator's, as
/// on Apple's): per certificate, the first domain that decides wins, and allowed errors come from every
/// domain that has an applicable constraint.
public struct TrustSettingsSet: Sendable, Equatable {
    /// Each domain's settings per certificate, strongest first.
    public let domains: [[Certificate: TrustSettings]]
    /// Whether trusting settings make anchors (false keeps only denials and allowed errors: an evaluation with
    /// the application's own anchors only).
    public let anchorsFromSettings: Bool

    public init(domains: [[Certificate: TrustSettings]], anchorsFromSettings: Bool = true) {
        self.domains = domains
        self.anchorsFromSettings = anchorsFromSettings
    }

    /// The same settings with their anchors left out.
    public func withoutAnchors() -> TrustSettingsSet { TrustSettingsSet(domains: domains, anchorsFromSettings: false) }

    /// Whether no domain holds any setting.
    public var isEmpty: Bool { domains.allSatisfy(\.isEmpty) }

    /// The decision for `certificate` under `policies`.
    func decision(for certificate: Certificate, policies: [TrustPolicy]) -> (result: Result?, allowed: [TrustFailureReason]) {
        var allowed: [TrustFailureReason] = []
        for domain in domains {
            guard let settings = domain[certificate] else { continue }
            let decision = settings.decision(for: policies, selfSigned: certificate.isSelfIssued)
            allowed += decision.allowed
            if let result = decision.result { return (result, allowed) }
        }
        return (nil, allowed)
    }

    typealias Result = TrustSettings.Result

    /// The certificates the settings make anchors for `policies`.
    func anchors(for policies: [TrustPolicy]) -> [Certificate] {
        guard anchorsFromSettings else { return [] }
        var seen = Set<Certificate>()
        var anchors: [Certificate] = []
        for domain in domains {
            for certificate in domain.keys.sorted(by: { $0.sha1Fingerprint.lexicographicallyPrecedes($1.sha1Fingerprint) })
            where seen.insert(certificate).inserted {
                if decision(for: certificate, policies: policies).result?.isTrust == true { anchors.append(certificate) }
            }
        }
        return anchors
    }

    /// The certificates the settings deny for `policies`.
    func denied(for policies: [TrustPolicy]) -> Set<Certificate> {
        var denied = Set<Certificate>()
        for domain in domains {
            for certificate in domain.keys where decision(for: certificate, policies: policies).result == .deny {
                denied.insert(certificate)
            }
        }
        return denied
    }
}
