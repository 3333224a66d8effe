/// How strictly the manager validates peers. The default is strict: the private store is used when it exists,
/// a server whose identity does not match is refused, and revocation is checked on a best-effort basis.
public struct SecurityPolicyConfiguration: Sendable, Hashable {
    /// How revocation is checked (OCSP preferred over CRLs, both over HTTP).
    public struct RevocationCheckPolicy: Hashable, Sendable, CustomStringConvertible {
        fileprivate let name: String
        /// No revocation checking: a revoked certificate passes.
        public static let disabled = RevocationCheckPolicy(name: "disabled")
        /// Soft-fail: a revoked certificate fails; no answer (an unreachable responder) passes.
        public static let bestEffort = RevocationCheckPolicy(name: "bestEffort")
        /// Hard-fail: a revoked certificate fails, and so does one whose status cannot be had.
        public static let mandatory = RevocationCheckPolicy(name: "mandatory")
        public var description: String { name }
    }

    /// Whether the private trust store, when it exists, is the set of anchors (else the system anchors are).
    public var privateTrustStoreEnabled: Bool
    /// Whether a server whose name does not match the expected hostname or service domain is accepted anyway
    /// (the chain must still be trusted). Off by default.
    public var continueOnServerIdentityFailure: Bool
    /// How revocation is checked.
    public var revocationCheckPolicy: RevocationCheckPolicy

    /// - Parameters:
    ///   - privateTrustStoreEnabled: anchor to the private store when it exists (default true).
    ///   - continueOnServerIdentityFailure: accept a name mismatch (default false: strict).
    ///   - revocationCheckPolicy: revocation checking (default best effort).
    public init(
        privateTrustStoreEnabled: Bool = true, continueOnServerIdentityFailure: Bool = false,
        revocationCheckPolicy: RevocationCheckPolicy = .bestEffort
    ) {
        self.privateTrustStoreEnabled = privateTrustStoreEnabled
        self.continueOnServerIdentityFailure = continueOnServerIdentityFailure
        self.revocationCheckPolicy = revocationCheckPolicy
    }
}
