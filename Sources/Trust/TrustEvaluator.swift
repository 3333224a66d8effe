public import Certificates
public import Foundation
public import NetworkFetch

/// Evaluates trust in a leaf certificate (Apple's `SecTrust`, as a value): which anchors, which policies, at
/// what date, how much work. Evaluating builds a path from the leaf through the given intermediates to one of
/// the anchors (backtracking across alternative issuers), has each candidate path validated by OpenSSL
/// restricted to exactly that path, and returns a ``TrustResult``.
///
/// ```swift
/// let evaluator = TrustEvaluator(anchors: [root], policies: [.sslServer(hostname: "www.example.com")])
/// let result = try await evaluator.evaluate(leaf, intermediates: [intermediate])
/// if result.isTrusted { … } else { print(result.outcome, result.statuses) }
/// ```
///
/// Evaluation is async: revocation checking and issuer fetching await the network (``network``), within one
/// deadline (``TrustBudget/networkTime``), and the task's cancellation ends them. The synchronous form, for
/// synchronous callers such as Apple's `SecTrustEvaluateWithError`, waits for the async one.
public struct TrustEvaluator: Sendable {
    /// The only anchors (`SecTrustSetAnchorCertificates` with anchors-only): a path must end at one of these.
    public var anchors: [Certificate]
    /// Every policy must pass (Apple evaluates an array of policies together).
    public var policies: [TrustPolicy]
    /// The verification date (`SecTrustSetVerifyDate`); nil means the current time at each evaluation.
    public var verificationDate: Date?
    /// The work limits.
    public var budget: TrustBudget
    /// CRLs to check revocation against. When any is given, every certificate of the path below the anchor
    /// must be covered by a valid CRL (OpenSSL's CRL_CHECK_ALL, with delta CRLs and indirect CRLs); a revoked
    /// certificate is fatal, one without a usable CRL a recoverable failure.
    public var certificateRevocationLists: [CertificateRevocationList]
    /// Revocation checking over OCSP and CRLs fetched from the certificates' URLs (nil: none). Runs on a path
    /// that reaches an anchor.
    public var revocation: RevocationPolicy?
    /// Downloading missing intermediates from AIA caIssuers URLs (nil: never; Apple's network fetch).
    public var issuerFetching: IssuerFetching?
    /// User and administrator trust settings (nil: none). Certificates they trust for the policies are anchors
    /// too (the result is then ``TrustResult/Outcome/proceed``), a certificate they deny makes the result
    /// ``TrustResult/Outcome/denied`` (a path around it is tried first), and the failures they allow on a
    /// certificate are forgiven.
    public var trustSettings: TrustSettingsSet?
    /// Where revocation and issuer fetching send their HTTP (OCSP, CRLs, caIssuers): ``SocketFetcher/shared``
    /// unless an application or a test injects its own.
    public var network: any NetworkFetching = SocketFetcher.shared

    /// - Parameters:
    ///   - anchors: the trusted certificates, and only these.
    ///   - policies: what the leaf is trusted for (default: basic X.509).
    ///   - verificationDate: the date to validate at (default: now).
    ///   - budget: the work limits (default: ``TrustBudget/standard``).
    ///   - certificateRevocationLists: CRLs that every certificate must be checked against (default: none, no
    ///     revocation checking).
    ///   - revocation: OCSP and fetched-CRL checking (default: none).
    ///   - issuerFetching: downloading missing intermediates from AIA caIssuers URLs (default: none).
    ///   - trustSettings: user and administrator trust settings (default: none).
    public init(
        anchors: [Certificate], policies: [TrustPolicy] = [.basicX509], verificationDate: Date? = nil,
        budget: TrustBudget = .standard, certificateRevocationLists: [CertificateRevocationList] = [],
        revocation: RevocationPolicy? = nil, issuerFetching: IssuerFetching? = nil,
        trustSettings: TrustSettingsSet? = nil
    ) {
        self.trustSettings = trustSettings
        self.revocation = revocation
        self.issuerFetching = issuerFetching
        self.anchors = anchors
        self.policies = policies
        self.verificationDate = verificationDate
        self.budget = budget
        self.certificateRevocationLists = certificateRevocationLists
    }

    /// Evaluates `leaf` for every policy.
    /// - Parameters:
    ///   - leaf: the certificate to trust.
    ///   - intermediates: certificates that may help build the path, in any order; extra ones are harmless.
    /// - Returns: the result: trusted or not, the chain, each certificate's failures.
    /// - Throws: ``TrustError`` for a bad setup (no policy, an invalid budget, hostname or date) or when OpenSSL
    ///   cannot allocate a validation — never because the leaf is untrusted; `CancellationError` when the task was
    ///   cancelled during a fetch (a cancelled evaluation is not a soft-failed one).
    public func evaluate(_ leaf: Certificate, intermediates: [Certificate] = []) async throws -> TrustResult {
        // On the network executor: each step resumes there after a fetch, so a cooperative pool kept busy elsewhere
        // in the process cannot spend the evaluation's network time.
        try await withTaskExecutorPreference(NetworkExecutor.shared) { try await evaluateHere(leaf, intermediates: intermediates) }
    }

    private func evaluateHere(_ leaf: Certificate, intermediates: [Certificate]) async throws -> TrustResult {
        let start = try prepare()
        let network = EvaluationNetwork(self.network, time: budget.networkTime)
        var (statuses, builder) = try await search(
            leaf, intermediates: intermediates, anchors: start.anchors, settings: start.settings, network: network)
        if start.mustAvoidDenied(leaf, statuses) {
            let again = try await search(
                leaf, intermediates: start.allowed(intermediates), anchors: start.allowed(start.anchors), settings: start.settings,
                network: network)
            start.adopt(again, statuses: &statuses, builder: &builder)
        }
        let decisions = start.decisions(&statuses, builder)
        // Revocation only for a path that is otherwise valid: a path with a bad signature, a missing issuer or any
        // other failure is not trusted whatever the responder says, and must not make the evaluator fetch for it.
        if let revocation, let last = statuses.last?.certificate, start.anchors.contains(last),
            start.validOnceForgiven(statuses, decisions)
        {
            try await RevocationChecker.check(
                statuses.map(\.certificate), policy: revocation, network: network, time: start.settings.time, into: &statuses)
        }
        return finish(leaf, start, statuses, builder, decisions)
    }

    /// The evaluation without revocation or issuer fetching, which never waits: run on the calling thread.
    private func evaluateOffline(_ leaf: Certificate, intermediates: [Certificate]) throws -> TrustResult {
        let start = try prepare()
        var (statuses, builder) = try pathSearch(leaf, intermediates: intermediates, anchors: start.anchors, settings: start.settings)
        if start.mustAvoidDenied(leaf, statuses) {
            let again = try pathSearch(
                leaf, intermediates: start.allowed(intermediates), anchors: start.allowed(start.anchors), settings: start.settings)
            start.adopt(again, statuses: &statuses, builder: &builder)
        }
        let decisions = start.decisions(&statuses, builder)
        return finish(leaf, start, statuses, builder, decisions)
    }

    /// What the trust settings decide for one certificate of the path.
    private typealias Decision = (result: TrustSettings.Result?, allowed: [TrustFailureReason])

    /// What an evaluation settles before it builds a path: the validation settings, the anchors (the trust settings'
    /// included) and the certificates the trust settings deny.
    private struct Start {
        let settings: ValidationSettings
        let trustSettings: TrustSettingsSet?
        let policies: [TrustPolicy]
        let denied: Set<Certificate>
        let anchors: [Certificate]

        /// Whether the path runs through a distrusted certificate: then one that avoids it (a cross-signed CA) is
        /// looked for; without one, the first path is reported, denied.
        func mustAvoidDenied(_ leaf: Certificate, _ statuses: [TrustResult.CertificateStatus]) -> Bool {
            !denied.isEmpty && !denied.contains(leaf) && statuses.contains { denied.contains($0.certificate) }
        }

        func allowed(_ certificates: [Certificate]) -> [Certificate] { certificates.filter { !denied.contains($0) } }

        /// Takes the path that avoids the denied certificates when it is valid.
        func adopt(
            _ again: ([TrustResult.CertificateStatus], PathBuilder), statuses: inout [TrustResult.CertificateStatus],
            builder: inout PathBuilder
        ) {
            builder.absorb(again.1)
            if again.0.allSatisfy({ $0.reasons.isEmpty }) { statuses = again.0 }
        }

        /// Marks a failing path whose search ran out of budget, then says what the trust settings decide for each
        /// certificate of the path. They are applied after revocation, but decide before it whether the path is
        /// valid: a failure they forgive must not skip revocation, and a revoked certificate stays fatal whatever
        /// they allow (revocation is fatal, and only recoverable failures are forgiven).
        func decisions(_ statuses: inout [TrustResult.CertificateStatus], _ builder: PathBuilder) -> [Decision?] {
            if builder.isExhausted, statuses.contains(where: { !$0.reasons.isEmpty }) {
                statuses[0].add(.budgetExhausted)
            }
            return statuses.map { trustSettings?.decision(for: $0.certificate, policies: policies) }
        }

        func validOnceForgiven(_ statuses: [TrustResult.CertificateStatus], _ decisions: [Decision?]) -> Bool {
            zip(statuses, decisions).allSatisfy { status, decision in
                status.reasons.allSatisfy { !$0.isFatal && decision?.allowed.contains($0) == true }
            }
        }
    }

    private func prepare() throws -> Start {
        try budget.validate()
        guard !policies.isEmpty else { throw TrustError(.noPolicy, "an evaluation needs at least one policy") }
        for policy in policies { try policy.validate() }
        let date = verificationDate ?? Date()
        guard let time = Int(exactly: date.timeIntervalSince1970.rounded(.down)) else {
            throw TrustError(.invalidDate, "\(date.timeIntervalSince1970) seconds since 1970 is not a time")
        }
        // Settings with nothing in them cost nothing (the usual case).
        let trustSettings = self.trustSettings.flatMap { $0.isEmpty ? nil : $0 }
        var anchors = self.anchors
        for anchor in trustSettings?.anchors(for: policies) ?? [] where !anchors.contains(anchor) {
            anchors.append(anchor)
        }
        return Start(
            settings: ValidationSettings(time: time, policies: policies, crls: certificateRevocationLists), trustSettings: trustSettings,
            policies: policies, denied: trustSettings?.denied(for: policies) ?? [], anchors: anchors)
    }

    /// The hostname checks and the trust settings' decisions on the path found (and checked for revocation).
    private func finish(
        _ leaf: Certificate, _ start: Start, _ found: [TrustResult.CertificateStatus], _ builder: PathBuilder, _ decisions: [Decision?]
    ) -> TrustResult {
        var statuses = found
        for policy in policies {
            guard let hostname = policy.hostname else { continue }
            switch Hostname.match(leaf, hostname: hostname, commonNameFallback: policy.commonNameFallback) {
            case nil:
                statuses[0].add(.hostnameMismatch)
            case .alternativeName:
                break
            case .commonNames(let names):
                // A common name standing in for a SAN passes the path's constraints of its form, as the SAN would.
                if let rule = NameConstraints.refusal(of: names, in: statuses.map(\.certificate)) {
                    statuses[0].add(.nameConstraints, rule: rule)
                }
            }
        }
        var trustedBySetting = false
        if let trustSettings = start.trustSettings {
            for (index, decision) in zip(statuses.indices, decisions) {
                guard let decision else { continue }
                if decision.result == .deny { statuses[index].add(.denied) }
                if decision.result?.isTrust == true, trustSettings.anchorsFromSettings { trustedBySetting = true }
                if statuses[index].forgive(decision.allowed) { trustedBySetting = true }
            }
        }
        return TrustResult(statuses: statuses, work: builder.work, trustedBySetting: trustedBySetting)
    }

    /// The synchronous form of ``evaluate(_:intermediates:)``, for synchronous callers (Apple's
    /// `SecTrustEvaluateWithError`, the TLS handshake's judges). Without revocation or issuer fetching nothing can
    /// wait, and it runs on the calling thread; otherwise it blocks the calling thread until the async evaluation,
    /// fetches included, ends on ``NetworkExecutor`` (so a caller on the cooperative pool cannot starve it).
    public func evaluate(_ leaf: Certificate, intermediates: [Certificate] = []) throws -> TrustResult {
        guard revocation != nil || issuerFetching != nil else { return try evaluateOffline(leaf, intermediates: intermediates) }
        return try NetworkExecutor.wait { try await self.evaluate(leaf, intermediates: intermediates) }
    }

    /// Builds a path to `anchors` from what is given.
    private func pathSearch(
        _ leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], settings: ValidationSettings
    ) throws -> ([TrustResult.CertificateStatus], PathBuilder) {
        var builder = PathBuilder(leaf: leaf, intermediates: intermediates, anchors: anchors, budget: budget, settings: settings)
        return (try builder.run(leaf: leaf), builder)
    }

    /// Builds a path to `anchors`; when it stops at a missing issuer and fetching is allowed, fetches the issuer
    /// the AIA names and searches again.
    private func search(
        _ leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], settings: ValidationSettings,
        network: EvaluationNetwork
    ) async throws -> ([TrustResult.CertificateStatus], PathBuilder) {
        var (statuses, builder) = try pathSearch(leaf, intermediates: intermediates, anchors: anchors, settings: settings)
        if let issuerFetching {
            var pool = intermediates
            var fetches = 0
            while fetches < issuerFetching.maximumFetches, let last = statuses.last,
                last.reasons.contains(.missingIssuer)
            {
                let issuers = try await IssuerCache.shared.issuers(of: last.certificate, timeout: issuerFetching.timeout, network: network)
                    .filter { !pool.contains($0) && !anchors.contains($0) && $0 != leaf }
                guard !issuers.isEmpty else { break }
                fetches += 1
                pool += issuers
                let again = try pathSearch(leaf, intermediates: pool, anchors: anchors, settings: settings)
                statuses = again.0
                builder.absorb(again.1)
            }
        }
        return (statuses, builder)
    }
}
