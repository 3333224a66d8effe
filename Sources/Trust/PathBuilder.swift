internal import COpenSSL
import Certificates
import Foundation

/// The bounded depth-first search for a trusted path (RFC 4158's approach, as Apple's trustd does it): from the
/// leaf, try each candidate issuer (same subject as the certificate's issuer; when both carry key identifiers,
/// the authority key identifier must equal the subject key identifier), anchors first, then issuers whose key
/// identifier matches, then those valid at the verification date, in the order given; among several
/// candidates one whose key verifies the certificate's signature is followed, and one that does not only when none
/// verifies (so a broken signature is reported as such); a lone candidate is followed without a check of its own,
/// as the path's validation checks that signature. A certificate, or a subject with the same key, never
/// appears twice in a path. Each path that reaches an anchor is validated by ``PathValidator``; the first with
/// no failure wins, else the best failing one (fewest fatal reasons, then fewest reasons) is reported, else the
/// longest dead end. The budget bounds the path length, the candidates per certificate and the signature checks.
struct PathBuilder {
    let anchors: [Certificate]
    /// The given intermediates, without duplicates, anchors or the leaf.
    let pool: [Certificate]
    let budget: TrustBudget
    let settings: ValidationSettings

    private(set) var work = TrustResult.Work()
    private(set) var isExhausted = false
    private var best: (statuses: [TrustResult.CertificateStatus], score: (Int, Int))?
    private var longestDeadEnd: [Certificate]?

    init(
        leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], budget: TrustBudget,
        settings: ValidationSettings
    ) {
        var seen = Set(anchors)
        seen.insert(leaf)
        var pool: [Certificate] = []
        for certificate in intermediates where seen.insert(certificate).inserted { pool.append(certificate) }
        self.anchors = anchors
        self.pool = pool
        self.budget = budget
        self.settings = settings
    }

    /// Adds the work of a later search of the same evaluation (one run again with fetched issuers).
    mutating func absorb(_ other: PathBuilder) {
        work.candidatesConsidered += other.work.candidatesConsidered
        work.signatureChecks += other.work.signatureChecks
        work.pathsValidated += other.work.pathsValidated
        isExhausted = isExhausted || other.isExhausted
    }

    /// Searches, and returns the chosen path's statuses (leaf first).
    mutating func run(leaf: Certificate) throws -> [TrustResult.CertificateStatus] {
        if try extend([leaf]) { return best?.statuses ?? [] }
        if let best { return best.statuses }
        // No path reached an anchor: report the longest dead end, validated up to its last certificate.
        let path = longestDeadEnd ?? [leaf]
        var statuses: [TrustResult.CertificateStatus]
        if work.signatureChecks + path.count - 1 <= budget.maxSignatureChecks {
            work.pathsValidated += 1
            work.signatureChecks += path.count - 1
            statuses = try PathValidator.validate(path, others: pool, settings: settings)
        } else {
            statuses = path.map(TrustResult.CertificateStatus.init)
            PathValidator.checkValidityPeriods(path, time: settings.time, into: &statuses)
        }
        // The last certificate stood in as the anchor: say why it is not one.
        let last = path[path.count - 1]
        let selfSigned = last.withUnsafeX509 { X509_get_extension_flags($0) & UInt32(EXFLAG_SS) != 0 }
        statuses[statuses.count - 1].add(selfSigned ? .untrustedRoot : .missingIssuer)
        return statuses
    }

    /// Extends `path`; true once a trusted path is found (the search then stops).
    private mutating func extend(_ path: [Certificate]) throws -> Bool {
        let last = path[path.count - 1]
        if anchors.contains(last) { return try validate(path) }
        guard path.count < budget.maxPathLength else {
            isExhausted = true
            noteDeadEnd(path)
            return false
        }
        let candidates = issuers(of: last, excluding: path)
        if candidates.isEmpty {
            noteDeadEnd(path)
            return false
        }
        if candidates.count > budget.maxCandidatesPerStep { isExhausted = true }
        if candidates.count == 1 {
            // One candidate is followed whether or not its key verifies the signature (see below), and the path's
            // validation checks that signature anyway: checking it here too would only double the work.
            work.candidatesConsidered += 1
            return try extend(path + [candidates[0]])
        }
        var firstUnverified: Certificate?
        var anyVerified = false
        for candidate in candidates.prefix(budget.maxCandidatesPerStep) {
            guard work.signatureChecks < budget.maxSignatureChecks else {
                isExhausted = true
                break
            }
            work.candidatesConsidered += 1
            work.signatureChecks += 1
            if Self.isSigned(last, by: candidate) {
                anyVerified = true
                if try extend(path + [candidate]) { return true }
            } else if firstUnverified == nil {
                firstUnverified = candidate
            }
        }
        if !anyVerified, let candidate = firstUnverified { return try extend(path + [candidate]) }
        return false
    }

    /// Validates a path that reaches an anchor; true when nothing fails.
    private mutating func validate(_ path: [Certificate]) throws -> Bool {
        guard work.signatureChecks + path.count - 1 <= budget.maxSignatureChecks else {
            isExhausted = true
            return false
        }
        work.pathsValidated += 1
        work.signatureChecks += path.count - 1
        let statuses = try PathValidator.validate(path, others: pool.filter { !path.contains($0) }, settings: settings)
        let reasons = statuses.flatMap(\.reasons)
        let score = (reasons.filter(\.isFatal).count, reasons.count)
        if best == nil || score < best!.score {  // !: checked non-nil on the left of ||
            best = (statuses, score)
        }
        return reasons.isEmpty
    }

    private mutating func noteDeadEnd(_ path: [Certificate]) {
        if path.count > longestDeadEnd?.count ?? 0 { longestDeadEnd = path }
    }

    /// The candidate issuers of `certificate`, best first.
    private func issuers(of certificate: Certificate, excluding path: [Certificate]) -> [Certificate] {
        let issuer = certificate.normalizedIssuer
        let authorityKey = certificate.authorityKeyIdentifier
        let now = Date(timeIntervalSince1970: TimeInterval(settings.time))
        var ranked: [(certificate: Certificate, rank: Int, order: Int)] = []
        for (order, candidate) in (anchors + pool).enumerated() {
            guard candidate.normalizedSubject == issuer, !path.contains(candidate),
                !path.contains(where: {
                    $0.normalizedSubject == candidate.normalizedSubject
                        && $0.subjectPublicKeyInfo == candidate.subjectPublicKeyInfo
                })
            else { continue }
            var rank = 0
            if let authorityKey, let subjectKey = candidate.subjectKeyIdentifier {
                guard authorityKey == subjectKey else { continue }
                rank += 4
            }
            if anchors.contains(candidate) { rank += 8 }
            if candidate.notValidBefore <= now && now <= candidate.notValidAfter { rank += 2 }
            ranked.append((candidate, rank, order))
        }
        return ranked.sorted { ($0.rank, -$0.order) > ($1.rank, -$1.order) }.map(\.certificate)
    }

    /// Whether `issuer`'s public key verifies `certificate`'s signature.
    private static func isSigned(_ certificate: Certificate, by issuer: Certificate) -> Bool {
        certificate.withUnsafeX509 { subject in
            issuer.withUnsafeX509 { issuer in
                // X509_get0_pubkey: the issuer's cached key (not owned), NULL when it cannot be decoded;
                // X509_verify: 1 when the signature verifies, 0 or -1 otherwise (errors queued).
                guard let key = X509_get0_pubkey(issuer) else {
                    ERR_clear_error()
                    return false
                }
                let verified = X509_verify(subject, key) == 1
                ERR_clear_error()
                return verified
            }
        }
    }
}
