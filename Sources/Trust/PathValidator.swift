internal import COpenSSL
internal import COpenSSLShims
import Certificates
import Foundation

/// What one evaluation hands every candidate path's validation.
struct ValidationSettings {
    /// The verification time in whole seconds since 1970 (the date rounded down: a certificate is valid through
    /// its notAfter second).
    let time: Int
    let policies: [TrustPolicy]
    let crls: [CertificateRevocationList]

    /// One OpenSSL run per distinct (purpose, strictness): usually one.
    var runs: [(purpose: Int32, strict: Bool, extendedKeyUsage: String?)] {
        var runs: [(purpose: Int32, strict: Bool, extendedKeyUsage: String?)] = []
        for policy in policies
        where !runs.contains(where: { $0.purpose == policy.openSSLPurpose && $0.strict == policy.isStrict }) {
            runs.append((policy.openSSLPurpose, policy.isStrict, policy.requiredExtendedKeyUsage))
        }
        return runs
    }
}

/// Validates one candidate path with OpenSSL's `X509_verify_cert`, restricted to exactly that path: a store
/// holding only the path's last certificate (the anchor, trusted as a partial chain; ``AnchorStores`` keeps one per
/// anchor), the path's intermediates as the untrusted certificates, the evaluation's time, RFC 5280 policy
/// processing with the initial policy set {anyPolicy}, the policy's purpose. Every error is collected (the verify
/// callback records it and lets OpenSSL go on), so each certificate gets all its reasons.
enum PathValidator {
    /// The statuses of `path` (leaf first, anchor last).
    /// - Parameters:
    ///   - path: the candidate path; its last certificate is trusted.
    ///   - others: given certificates outside the path, offered to OpenSSL only to verify CRLs (indirect CRL
    ///     issuers, separate CRL-signing keys), so only when CRLs are given; a chain OpenSSL builds through one
    ///     of them is not this path and never counts as trusted.
    /// - Throws: ``TrustError`` `.validationSetup` when OpenSSL cannot allocate the validation.
    static func validate(
        _ path: [Certificate], others: [Certificate], settings: ValidationSettings
    ) throws -> [TrustResult.CertificateStatus] {
        var statuses = path.map(TrustResult.CertificateStatus.init)
        checkValidityPeriods(path, time: settings.time, into: &statuses)
        let extras = settings.crls.isEmpty ? [] : others
        try withX509s(path + extras) { x509s in
            // A CRL without the CRLNumber extension (RFC 5280 5.2.3: conforming CRL issuers MUST include it) is not
            // trusted, nor one without nextUpdate (5.1.2.5), which would never be stale (fetched and stapled ones are
            // refused the same way): it is left out, so the certificates it would cover have no CRL
            // (revocationUnavailable).
            try withCRLs(settings.crls.filter { $0.hasCRLNumber && $0.hasNextUpdate }) { crls in
                for run in settings.runs {
                    try verify(
                        x509s, pathCount: path.count, crls: crls, run: run, settings: settings, path: path,
                        into: &statuses)
                }
            }
        }
        for (index, rule) in NameConstraints.violations(in: path) { statuses[index].add(.nameConstraints, rule: rule) }
        // RFC 5280 4.2.1.10: conforming CAs MUST mark name constraints critical, so that a client that does not know
        // them cannot ignore them. (The same rule for policyConstraints is the web-PKI profile's: RFC 3280 allowed
        // either, and PKITS, written for it, has CAs with non-critical policyConstraints that must validate.)
        for (index, certificate) in path.enumerated() where isPresentButNotCritical(certificate, nid: NID_name_constraints) {
            statuses[index].add(.nameConstraints, rule: "rfc5280.nameConstraintsNotCritical")
        }
        for policy in settings.policies {
            for violation in WebPKIProfile.violations(in: path, policy: policy) {
                statuses[violation.index].add(violation.reason, rule: violation.rule)
            }
        }
        return statuses
    }

    static func isPresentButNotCritical(_ certificate: Certificate, nid: Int32) -> Bool {
        NameConstraints.extensionData(certificate, nid: nid) != nil && !WebPKIProfile.isCritical(certificate, nid: nid)
    }

    /// Our own validity check (OpenSSL's is one second short: it treats the notAfter second as expired).
    static func checkValidityPeriods(
        _ path: [Certificate], time: Int, into statuses: inout [TrustResult.CertificateStatus]
    ) {
        let now = Date(timeIntervalSince1970: TimeInterval(time))
        for (index, certificate) in path.enumerated() {
            if now < certificate.notValidBefore { statuses[index].add(.notYetValid) }
            if now > certificate.notValidAfter { statuses[index].add(.expired) }
        }
    }

    private static func verify(
        _ x509s: [OpaquePointer], pathCount: Int, crls: [OpaquePointer],
        run: (purpose: Int32, strict: Bool, extendedKeyUsage: String?), settings: ValidationSettings,
        path: [Certificate], into statuses: inout [TrustResult.CertificateStatus]
    ) throws {
        ERR_clear_error()
        // The anchor's store, shared with every validation that ends at it (kept alive by this call meanwhile).
        guard let anchorStore = AnchorStores.shared.store(for: x509s[pathCount - 1]) else {
            throw setupError("X509_STORE_new or X509_STORE_add_cert")
        }
        defer { withExtendedLifetime(anchorStore) {} }
        let store = anchorStore.store
        guard let untrusted = copenssl_trust_certificates_new() else { throw setupError("sk_X509_new_null") }
        defer { copenssl_trust_certificates_free(untrusted) }
        for (index, x509) in x509s.enumerated() where index != 0 && index != pathCount - 1 {
            guard copenssl_trust_certificates_push(untrusted, x509) > 0 else { throw setupError("sk_X509_push") }
        }
        guard let crlStack = copenssl_trust_crls_new() else { throw setupError("sk_X509_CRL_new_null") }
        defer { copenssl_trust_crls_free(crlStack) }
        for crl in crls {
            guard copenssl_trust_crls_push(crlStack, crl) > 0 else { throw setupError("sk_X509_CRL_push") }
        }
        guard let context = X509_STORE_CTX_new() else { throw setupError("X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, x509s[0], untrusted) == 1 else {
            throw setupError("X509_STORE_CTX_init")
        }
        // set0_crls: the context uses the stack without freeing it (freed above, after the context).
        if !crls.isEmpty { X509_STORE_CTX_set0_crls(context, crlStack) }
        guard let parameters = X509_STORE_CTX_get0_param(context) else { throw setupError("X509_STORE_CTX_get0_param") }
        var flags = UInt(X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_POLICY_CHECK)
        if run.strict { flags |= UInt(X509_V_FLAG_X509_STRICT) }
        if settings.crls.isEmpty {
            // The certificates' validity periods are ours (checkValidityPeriods), and OpenSSL's own check prints
            // each time as text to compare it. Without CRLs nothing else of OpenSSL's reads the time but its
            // preference, among issuers of one name, for one valid then: it is given only this path's certificates,
            // and a chain other than the path is never trusted (below).
            flags |= UInt(X509_V_FLAG_NO_CHECK_TIME)
        } else {
            // A CRL's thisUpdate and nextUpdate are OpenSSL's to check, at the verification time (a time set here
            // takes precedence over NO_CHECK_TIME, so the two never meet).
            X509_VERIFY_PARAM_set_time(parameters, time_t(settings.time))
            flags |= UInt(
                X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL | X509_V_FLAG_USE_DELTAS
                    | X509_V_FLAG_EXTENDED_CRL_SUPPORT)
        }
        guard X509_VERIFY_PARAM_set_flags(parameters, flags) == 1,
            copenssl_trust_param_add_any_policy(parameters) == 1
        else { throw setupError("X509_VERIFY_PARAM") }
        if run.purpose != 0, X509_STORE_CTX_set_purpose(context, run.purpose) != 1 {
            throw setupError("X509_STORE_CTX_set_purpose")
        }
        X509_STORE_CTX_set_verify_cb(context, collectError)

        let collector = ErrorCollector()
        let verified = withExtendedLifetime(collector) { () -> Int32 in
            _ = copenssl_trust_set_app_data(context, Unmanaged.passUnretained(collector).toOpaque())
            return X509_verify_cert(context)
        }
        ERR_clear_error()

        var skippedNameConstraintErrors = false
        for error in collector.errors {
            // The validity period is checked by checkValidityPeriods, inclusive of the notAfter second.
            if error.code == X509_V_ERR_CERT_HAS_EXPIRED || error.code == X509_V_ERR_CERT_NOT_YET_VALID { continue }
            let index = min(max(error.depth, 0), pathCount - 1)
            let reason = reason(for: error.code, certificate: path[index], extendedKeyUsage: run.extendedKeyUsage)
            // The last certificate is the anchor (RFC 5280 6.1: an input of validation, not a certificate of the
            // path, so not checked for revocation; Apple does not either) or, for a dead end, stands in for one
            // whose issuer is missing: OpenSSL's CRL_CHECK_ALL wants a CRL for it too, and that is not a failure.
            if index == pathCount - 1, reason == .revocationUnavailable { continue }
            // Name constraints are ours (NameConstraints, run on every path): OpenSSL's verdict on them is both
            // too lax (names it cannot parse pass) and too strict (a CN it takes for a hostname).
            if reason == .nameConstraints {
                skippedNameConstraintErrors = true
                continue
            }
            statuses[index].add(reason, openSSL: openSSLError(error.code))
        }
        // A chain that is not exactly this path (OpenSSL chose another issuer), or a failure the callback never
        // saw, is never trusted.
        let chain = X509_STORE_CTX_get0_chain(context)
        let count = chain.map { Int(copenssl_trust_certificates_count($0)) } ?? 0
        let samePath =
            count == pathCount
            && (0..<count).allSatisfy { copenssl_trust_certificates_at(chain, Int32($0)) == x509s[$0] }
        if verified != 1 && !skippedNameConstraintErrors || !samePath, statuses.allSatisfy({ $0.reasons.isEmpty }) {
            statuses[0].add(.other, openSSL: openSSLError(X509_STORE_CTX_get_error(context)))
        }
    }

    /// Apple's reason for an OpenSSL verification error.
    static func reason(for code: Int32, certificate: Certificate, extendedKeyUsage: String?) -> TrustFailureReason {
        switch code {
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
            X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY, X509_V_ERR_NO_ISSUER_PUBLIC_KEY,
            X509_V_ERR_SIGNATURE_ALGORITHM_MISMATCH, X509_V_ERR_UNSUPPORTED_SIGNATURE_ALGORITHM:
            return .badSignature
        case X509_V_ERR_CERT_REVOKED:
            return .revoked
        case X509_V_ERR_UNABLE_TO_GET_CRL, X509_V_ERR_UNABLE_TO_DECRYPT_CRL_SIGNATURE, X509_V_ERR_CRL_SIGNATURE_FAILURE,
            X509_V_ERR_CRL_NOT_YET_VALID, X509_V_ERR_CRL_HAS_EXPIRED, X509_V_ERR_ERROR_IN_CRL_LAST_UPDATE_FIELD,
            X509_V_ERR_ERROR_IN_CRL_NEXT_UPDATE_FIELD, X509_V_ERR_UNABLE_TO_GET_CRL_ISSUER,
            X509_V_ERR_KEYUSAGE_NO_CRL_SIGN, X509_V_ERR_UNHANDLED_CRITICAL_CRL_EXTENSION,
            X509_V_ERR_DIFFERENT_CRL_SCOPE, X509_V_ERR_CRL_PATH_VALIDATION_ERROR:
            return .revocationUnavailable
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_UNTRUSTED,
            X509_V_ERR_CERT_REJECTED:
            return .untrustedRoot
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_SUBJECT_ISSUER_MISMATCH,
            X509_V_ERR_AKID_SKID_MISMATCH, X509_V_ERR_AKID_ISSUER_SERIAL_MISMATCH:
            return .missingIssuer
        case X509_V_ERR_INVALID_CA:
            // X509_check_ca fails for a certificate whose basic constraints say cA but whose key usage lacks
            // keyCertSign: then the key usage is what fails.
            return certificate.isCertificateAuthority ? .keyUsage : .basicConstraints
        case X509_V_ERR_INVALID_NON_CA, X509_V_ERR_CA_BCONS_NOT_CRITICAL, X509_V_ERR_PATHLEN_INVALID_FOR_NON_CA:
            return .basicConstraints
        case X509_V_ERR_PATH_LENGTH_EXCEEDED, X509_V_ERR_PROXY_PATH_LENGTH_EXCEEDED, X509_V_ERR_CERT_CHAIN_TOO_LONG:
            return .pathLength
        case X509_V_ERR_KEYUSAGE_NO_CERTSIGN, X509_V_ERR_KEYUSAGE_NO_DIGITAL_SIGNATURE,
            X509_V_ERR_PATHLEN_WITHOUT_KU_KEY_CERT_SIGN, X509_V_ERR_KU_KEY_CERT_SIGN_INVALID_FOR_NON_CA,
            X509_V_ERR_CA_CERT_MISSING_KEY_USAGE:
            return .keyUsage
        case X509_V_ERR_INVALID_PURPOSE:
            // OpenSSL's purpose check covers the EKU and the KU: name the one that fails.
            if let required = extendedKeyUsage, let usages = certificate.extendedKeyUsage, !usages.contains(required) {
                return .extendedKeyUsage
            }
            return .keyUsage
        case X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION:
            return .unhandledCriticalExtension
        case X509_V_ERR_INVALID_POLICY_EXTENSION, X509_V_ERR_NO_EXPLICIT_POLICY:
            return .policyConstraints
        case X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION, X509_V_ERR_SUBTREE_MINMAX,
            X509_V_ERR_UNSUPPORTED_CONSTRAINT_TYPE, X509_V_ERR_UNSUPPORTED_CONSTRAINT_SYNTAX,
            X509_V_ERR_UNSUPPORTED_NAME_SYNTAX:
            return .nameConstraints
        case X509_V_ERR_EE_KEY_TOO_SMALL, X509_V_ERR_CA_KEY_TOO_SMALL, X509_V_ERR_CA_MD_TOO_WEAK:
            return .weakKeyOrSignature
        case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD,
            X509_V_ERR_INVALID_EXTENSION, X509_V_ERR_ISSUER_NAME_EMPTY, X509_V_ERR_SUBJECT_NAME_EMPTY,
            X509_V_ERR_MISSING_AUTHORITY_KEY_IDENTIFIER, X509_V_ERR_MISSING_SUBJECT_KEY_IDENTIFIER,
            X509_V_ERR_EMPTY_SUBJECT_ALT_NAME, X509_V_ERR_EMPTY_SUBJECT_SAN_NOT_CRITICAL,
            X509_V_ERR_AUTHORITY_KEY_IDENTIFIER_CRITICAL, X509_V_ERR_SUBJECT_KEY_IDENTIFIER_CRITICAL,
            X509_V_ERR_EXTENSIONS_REQUIRE_VERSION_3, X509_V_ERR_EC_KEY_EXPLICIT_PARAMS,
            X509_V_ERR_SIGNATURE_ALGORITHM_INCONSISTENCY:
            return .malformed
        default:
            return .other
        }
    }

    static func openSSLError(_ code: Int32) -> TrustResult.OpenSSLError {
        TrustResult.OpenSSLError(
            code: Int(code), message: X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "")
    }

    private static func setupError(_ call: String) -> TrustError {
        var queue: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            queue.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return TrustError(.validationSetup, "\(call) failed", openSSLErrors: queue)
    }

    /// Lends every certificate's `X509` at once, in order.
    private static func withX509s<R>(
        _ certificates: [Certificate], _ body: ([OpaquePointer]) throws -> R
    ) throws -> R {
        func nest(_ index: Int, _ lent: [OpaquePointer]) throws -> R {
            guard index < certificates.count else { return try body(lent) }
            return try certificates[index].withUnsafeX509 { try nest(index + 1, lent + [$0]) }
        }
        return try nest(0, [])
    }

    private static func withCRLs<R>(_ crls: [CertificateRevocationList], _ body: ([OpaquePointer]) throws -> R) throws
        -> R
    {
        func nest(_ index: Int, _ lent: [OpaquePointer]) throws -> R {
            guard index < crls.count else { return try body(lent) }
            return try crls[index].withUnsafeCRL { try nest(index + 1, lent + [$0]) }
        }
        return try nest(0, [])
    }
}

/// The errors OpenSSL reported through the verify callback, with their depths.
private final class ErrorCollector {
    var errors: [(depth: Int, code: Int32)] = []
}

/// The verify callback: records each error and lets OpenSSL go on, so every check runs. Contexts without our
/// app data (the nested context OpenSSL makes to validate a CRL issuer's path) keep OpenSSL's verdict.
private func collectError(_ ok: Int32, _ context: OpaquePointer?) -> Int32 {
    guard ok == 0, let context, let data = copenssl_trust_get_app_data(context) else { return ok }
    let collector = Unmanaged<ErrorCollector>.fromOpaque(data).takeUnretainedValue()
    collector.errors.append((Int(X509_STORE_CTX_get_error_depth(context)), X509_STORE_CTX_get_error(context)))
    return 1
}
