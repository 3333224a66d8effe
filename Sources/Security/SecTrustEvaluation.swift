import Certificates
import Foundation
import Trust

/// One evaluation of a trust's settings: the chain, each certificate's failures (after the allow-expired options),
/// Apple's result type, and the date it was done at.
struct SecTrustEvaluation: Sendable {
    let chain: [Certificate]
    /// Per certificate of `chain`, its failures.
    let reasons: [[TrustFailureReason]]
    let result: SecTrustResultType
    /// When the evaluation ran (`kSecTrustEvaluationDate`).
    let evaluationDate: Date
    /// The date the certificates were checked at.
    let verifyDate: Date
    /// Why the evaluation could not run (result `.otherError`).
    let setupFailure: String?

    init(_ settings: SecTrust.Settings) {
        evaluationDate = Date()
        verifyDate = settings.verifyDate ?? evaluationDate
        let leaf = settings.certificates[0].certificate  // [0]: creation requires at least one certificate
        do {
            let (result, extraHostnameMismatch) = try Self.run(settings, at: verifyDate)
            chain = result.chain
            var reasons = result.statuses.map(\.reasons)
            if extraHostnameMismatch, !reasons[0].contains(.hostnameMismatch) { reasons[0].append(.hostnameMismatch) }
            Self.applyOptions(settings, chain: chain, reasons: &reasons)
            self.reasons = reasons
            let all = reasons.joined()
            if all.isEmpty {
                // A chain ending at an administrator's anchor (not one the application set) is trusted by an
                // admin setting, and one a user's or administrator's trust setting vouches for by that setting:
                // Proceed, as Apple's. Anything else that passes is Unspecified.
                let anchor = chain[chain.count - 1]
                let byApplication = settings.customAnchors?.contains { $0.certificate == anchor } ?? false
                let byAdministrator = SystemAnchors.administrator.contains(anchor) && !byApplication
                self.result = byAdministrator || result.trustedBySetting ? .proceed : .unspecified
            } else if all.contains(.denied) {
                self.result = .deny
            } else if all.contains(where: \.isFatal) {
                self.result = .fatalTrustFailure
            } else if let exceptions = settings.exceptions, exceptions.covers(chain: chain, reasons: reasons) {
                self.result = .proceed
            } else {
                self.result = .recoverableTrustFailure
            }
            setupFailure = nil
        } catch {
            chain = [leaf]
            reasons = [[]]
            result = .otherError
            setupFailure = (error as? TrustError)?.reason ?? "the evaluation could not run"
        }
    }

    /// Runs the evaluator: the given certificates first, then, when an issuer is missing, with the certificates
    /// of the default keychain as intermediates too. The flag says a hostname that is not one was dropped (and
    /// must count as a mismatch).
    private static func run(_ settings: SecTrust.Settings, at date: Date) throws -> (TrustResult, Bool) {
        let leaf = settings.certificates[0].certificate
        var intermediates = settings.certificates.dropFirst().map(\.certificate)
        var anchors = SystemAnchors.all
        if let custom = settings.customAnchors {
            anchors = custom.map(\.certificate) + (settings.anchorsOnly ? [] : anchors)
        }
        var policies = settings.policies.compactMap(\.trustPolicy)
        if policies.isEmpty { policies = [.basicX509] }
        // The user's and administrator's trust settings: with the application's own anchors only, their denials
        // and allowed errors still count, their anchors do not.
        let trustSettings = try TrustSettingsDomains.current.snapshot()
        let anchorsOnly = settings.customAnchors != nil && settings.anchorsOnly
        var evaluator = TrustEvaluator(
            anchors: anchors, policies: policies, verificationDate: date, revocation: revocationPolicy(settings),
            trustSettings: anchorsOnly ? trustSettings.withoutAnchors() : trustSettings)
        var droppedHostname = false
        func evaluate() throws -> TrustResult {
            do {
                return try evaluator.evaluate(leaf, intermediates: intermediates)
            } catch let error as TrustError where error.code == .invalidHostname && !droppedHostname {
                // Apple's SecPolicyCreateSSL accepts any string; one that is no hostname matches no certificate.
                droppedHostname = true
                evaluator.policies = evaluator.policies.map { $0.hostname == nil ? $0 : .sslServer(hostname: nil) }
                return try evaluator.evaluate(leaf, intermediates: intermediates)
            }
        }
        var result = try evaluate()
        if result.reasons.contains(.missingIssuer) {
            let stored = keychainCertificates(settings.keychains).filter { !intermediates.contains($0) && $0 != leaf }
            if !stored.isEmpty {
                intermediates += stored
                result = try evaluate()
            }
        }
        // Last, when the network may be used: the issuers the certificates' AIA caIssuers URLs name.
        if result.reasons.contains(.missingIssuer), settings.isNetworkFetchAllowed {
            evaluator.issuerFetching = IssuerFetching()
            result = try evaluate()
        }
        return (result, droppedHostname)
    }

    /// The certificates stored in the keychains `SecTrustSetKeychains` named, else in the default keychain (none
    /// when it cannot be opened, or when an empty list was set).
    private static func keychainCertificates(_ keychains: [SecKeychain]?) -> [Certificate] {
        if keychains?.isEmpty == true { return [] }
        var found: CFTypeRef?
        var query: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecMatchLimit as String: kSecMatchLimitAll,
            kSecReturnRef as String: kCFBooleanTrue!,  // !: a constant that is never nil
        ]
        if let keychains { query[kSecMatchSearchList as String] = NSArray(array: keychains) }
        guard SecItemCopyMatching(query as CFDictionary, &found) == errSecSuccess, let array = found as? NSArray else {
            return []
        }
        return array.compactMap { ($0 as? SecCertificate)?.certificate }
    }

    /// The allow-expired options and the revocation policy's hard fail, on the evaluator's reasons.
    private static func applyOptions(
        _ settings: SecTrust.Settings, chain: [Certificate], reasons: inout [[TrustFailureReason]]
    ) {
        let last = chain.count - 1
        let endsAtRoot = chain[last].isSelfIssued
        for index in reasons.indices {
            let isRoot = index == last && endsAtRoot
            if settings.options.contains(isRoot ? .allowExpiredRoot : .allowExpired) {
                reasons[index].removeAll { $0 == .expired || $0 == .notYetValid }
            }
        }
        // A required positive response cannot come for a path that reaches no anchor (the evaluator checks
        // revocation only on a complete path): every certificate then lacks one, as Apple reports.
        let requirePositive = settings.revocationFlags & kSecRevocationRequirePositiveResponse != 0
        let reachedAnchor = !reasons[last].contains(.untrustedRoot) && !reasons[last].contains(.missingIssuer)
        if requirePositive, !reachedAnchor {
            for index in reasons.indices where !reasons[index].contains(.revocationUnavailable) {
                reasons[index].append(.revocationUnavailable)
            }
        }
    }

    /// The evaluator's revocation checking from the revocation policy's flags (`kSecRevocation…`), the network
    /// setting and the stapled responses. Without a revocation policy, stapled responses are still used (OCSP,
    /// soft-fail, no network), as Apple uses a peer's stapled response whenever it has one.
    static func revocationPolicy(_ settings: SecTrust.Settings) -> RevocationPolicy? {
        let flags = settings.revocationFlags
        guard flags != 0 || !settings.stapledOCSPResponses.isEmpty else { return nil }
        guard flags != 0 else {
            return RevocationPolicy(
                methods: .ocsp, networkAccessAllowed: false, stapledOCSPResponses: settings.stapledOCSPResponses)
        }
        var methods: RevocationPolicy.Methods = []
        if flags & kSecRevocationOCSPMethod != 0 { methods.insert(.ocsp) }
        if flags & kSecRevocationCRLMethod != 0 { methods.insert(.crl) }
        let network = settings.isNetworkFetchAllowed
        return RevocationPolicy(
            methods: methods, preferCRL: flags & kSecRevocationPreferCRL != 0,
            requirePositiveResponse: flags & kSecRevocationRequirePositiveResponse != 0,
            networkAccessAllowed: network, stapledOCSPResponses: settings.stapledOCSPResponses)
    }

    /// The failure an error reports: the first fatal one from the leaf up, else the first one from the leaf up.
    var primaryFailure: (index: Int, reason: TrustFailureReason)? {
        for fatal in [true, false] {
            for (index, list) in reasons.enumerated() {
                if let reason = list.first(where: { $0.isFatal == fatal }) { return (index, reason) }
            }
        }
        return nil
    }

    /// The CFError of a failed evaluation (NSOSStatusErrorDomain, Apple's code, a description naming the
    /// certificate and the reason); nil when trusted.
    var error: CFError? {
        if let setupFailure {
            return NSError(
                domain: "NSOSStatusErrorDomain", code: Int(errSecParam),
                userInfo: [NSLocalizedDescriptionKey: "the trust could not be evaluated: \(setupFailure)"])
        }
        guard result != .unspecified, result != .proceed, let (index, reason) = primaryFailure else { return nil }
        let check = TrustCheck(reason)
        let name = chain[index].subjectSummary ?? "certificate \(index)"
        return NSError(
            domain: "NSOSStatusErrorDomain", code: Int(check.status),
            userInfo: [NSLocalizedDescriptionKey: "“\(name)” certificate \(check.message)"])
    }
}

/// How the Apple surface reports one of the evaluator's reasons: the check's name (Apple's SecPolicyChecks name
/// where Apple has one; the key of `kSecTrustResultDetails` and of the exceptions), the `errSec…` status, and the
/// words after "“subject” certificate" in an error's description (in the style of Apple's, not its exact text).
struct TrustCheck: Sendable {
    let name: String
    let status: OSStatus
    let message: String

    init(_ reason: TrustFailureReason) { self = Self.table[reason] ?? Self.other }

    /// The recoverable reason reported with `status` (the first, in ``TrustFailureReason/all``'s order, when
    /// several share it); nil when none is.
    static func reason(for status: OSStatus) -> TrustFailureReason? {
        TrustFailureReason.all.first { !$0.isFatal && table[$0]?.status == status }
    }

    private init(_ name: String, _ status: OSStatus, _ message: String) {
        self.name = name
        self.status = status
        self.message = message
    }

    private static let other = TrustCheck("Other", errSecVerifyFailed, "could not be verified")
    private static let table: [TrustFailureReason: TrustCheck] = [
        // Recoverable.
        .expired: TrustCheck("TemporalValidity", errSecCertificateExpired, "is expired"),
        .notYetValid: TrustCheck("TemporalValidity", errSecCertificateNotValidYet, "is not yet valid"),
        .untrustedRoot: TrustCheck("AnchorTrusted", errSecNotTrusted, "is not trusted"),
        .missingIssuer: TrustCheck("MissingIntermediate", errSecCreateChainFailed, "has no issuer that was found"),
        .basicConstraints: TrustCheck("BasicConstraints", errSecNoBasicConstraintsCA, "is not a certificate authority"),
        .pathLength: TrustCheck(
            "BasicConstraintsPathLen", errSecPathLengthConstraintExceeded, "exceeds a path length constraint"),
        .keyUsage: TrustCheck("KeyUsage", errSecInvalidKeyUsageForPolicy, "has a key usage not valid for the policy"),
        .extendedKeyUsage: TrustCheck(
            "ExtendedKeyUsage", errSecInvalidExtendedKeyUsage, "has an extended key usage not valid for the policy"),
        .unhandledCriticalExtension: TrustCheck(
            "CriticalExtensions", errSecUnknownCriticalExtensionFlag, "has an unknown critical extension"),
        .hostnameMismatch: TrustCheck("SSLHostname", errSecHostNameMismatch, "name does not match input"),
        .revocationUnavailable: TrustCheck(
            "RevocationResponseRequired", errSecIncompleteCertRevocationCheck, "has no revocation response"),
        .budgetExhausted: TrustCheck("ChainLength", errSecCreateChainFailed, "has too many candidate issuers"),
        // Fatal.
        .badSignature: TrustCheck("Signature", errSecInvalidSignature, "has an invalid signature"),
        .malformed: TrustCheck("ValidLeaf", errSecUnknownCertExtension, "is not standards compliant"),
        .weakKeyOrSignature: TrustCheck("WeakKeySize", errSecInvalidDigestAlgorithm, "uses a weak key or signature"),
        .nameConstraints: TrustCheck(
            "NameConstraints", errSecCertificateNameNotAllowed, "has a name that is not permitted"),
        .policyConstraints: TrustCheck(
            "PolicyConstraints", errSecInvalidPolicyIdentifiers, "fails a policy constraint"),
        .revoked: TrustCheck("Revocation", errSecCertificateRevoked, "is revoked"),
        .denied: TrustCheck("UsageConstraints", errSecTrustSettingDeny, "is distrusted by a trust setting"),
        .other: other,
    ]
}

/// The exceptions of ``SecTrustCopyExceptions(_:)``: per certificate of the chain, its SHA-1 and the names of
/// its recoverable failures (Apple's shape: an array of dictionaries, `"SHA1"` and a check name → false, as a
/// binary property list).
struct TrustExceptions: Sendable {
    struct Entry: Sendable {
        let sha1: Data
        let checks: Set<String>
    }

    let entries: [Entry]

    init(chain: [Certificate], reasons: [[TrustFailureReason]]) {
        entries = zip(chain, reasons).map { certificate, reasons in
            Entry(
                sha1: certificate.sha1Fingerprint,
                checks: Set(reasons.filter { !$0.isFatal }.map { TrustCheck($0).name }))
        }
    }

    /// Decodes `data`; nil when it is not exceptions.
    init?(_ data: Data) {
        guard let list = PropertyListValue.object(from: data),
            let array = list as? [Any], !array.isEmpty
        else { return nil }
        var entries: [Entry] = []
        for element in array {
            guard let dictionary = element as? [String: Any], let sha1 = dictionary["SHA1"].flatMap(dataValue),
                sha1.count == 20
            else { return nil }
            entries.append(Entry(sha1: sha1, checks: Set(dictionary.keys.filter { $0 != "SHA1" })))
        }
        self.entries = entries
    }

    var encoded: Data {
        let array: [[String: Any]] = entries.map { entry in
            var dictionary: [String: Any] = ["SHA1": entry.sha1]
            for check in entry.checks { dictionary[check] = false }
            return dictionary
        }
        // A property list of arrays, dictionaries, strings, data and booleans always serializes.
        return (try? PropertyListSerialization.data(fromPropertyList: array, format: .binary, options: 0)) ?? Data()
    }

    /// Whether these exceptions are for `leaf`.
    func isFor(_ leaf: Certificate) -> Bool { entries[0].sha1 == leaf.sha1Fingerprint }

    /// Whether every failure of the chain is recoverable and recorded for the same certificate.
    func covers(chain: [Certificate], reasons: [[TrustFailureReason]]) -> Bool {
        for (index, list) in reasons.enumerated() where !list.isEmpty {
            guard index < entries.count, entries[index].sha1 == chain[index].sha1Fingerprint else { return false }
            for reason in list where reason.isFatal || !entries[index].checks.contains(TrustCheck(reason).name) {
                return false
            }
        }
        return true
    }
}
