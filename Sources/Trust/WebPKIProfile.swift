internal import COpenSSL
import Certificates

/// The web-PKI profile the SSL policies enforce on a candidate path, as modern Apple platforms do (CA/Browser
/// Forum baseline requirements), on top of RFC 5280. Each rule has a name, given with the failure
/// (``TrustResult/CertificateStatus/rules``). The anchor is an input of the validation, not a certificate of the
/// path: its signature is never checked, so only rules about what it vouches for apply to it. `basicX509` stays
/// pure RFC 5280.
enum WebPKIProfile {
    struct Violation: Equatable {
        let index: Int
        let reason: TrustFailureReason
        let rule: String
    }

    /// The violations of `path` (leaf first, anchor last) for `policy`.
    static func violations(in path: [Certificate], policy: TrustPolicy) -> [Violation] {
        guard policy.enforcesWebPKIProfile else { return [] }
        var violations: [Violation] = []
        let anchorIndex = path.count - 1
        for (index, certificate) in path.enumerated() {
            func fail(_ reason: TrustFailureReason, _ rule: String) {
                violations.append(Violation(index: index, reason: reason, rule: rule))
            }
            // Forbidden keys, the anchor's included: Apple's SSL policy refuses a weak key whoever chose the anchor.
            if let rule = weakKeyRule(certificate) { fail(.weakKeyOrSignature, "webPKI.\(rule)") }
            if index < anchorIndex || path.count == 1 {
                // RFC 5280 4.2.1.11: "Conforming CAs MUST mark this extension as critical".
                if PathValidator.isPresentButNotCritical(certificate, nid: NID_policy_constraints) {
                    fail(.policyConstraints, "webPKI.policyConstraintsNotCritical")
                }
                if let digest = weakSignatureDigest(certificate) {
                    fail(.weakKeyOrSignature, "webPKI.weakSignature.\(digest)")
                }
                if let rule = serialNumberRule(certificate) { fail(.malformed, "webPKI.\(rule)") }
            }
            if index == 0 && path.count > 1 {
                // A subscriber certificate is not a CA (BR 7.1.2.7.8).
                if certificate.isCertificateAuthority { fail(.basicConstraints, "webPKI.leafIsCA") }
                // Name constraints belong in CA certificates only (RFC 5280 4.2.1.10, BR 7.1.2.7).
                if NameConstraints.extensionData(certificate, nid: NID_name_constraints) != nil {
                    fail(.malformed, "webPKI.leafNameConstraints")
                }
                // Every SAN dNSName is in the preferred name syntax, LDH (A-labels included; BR 7.1.2.7.12: no
                // underscore, no trailing dot, no empty label). Where a `*` stands is the hostname matcher's
                // business: a misplaced one matches nothing.
                // RFC 5280 4.2.1.6, BR 7.1.2.7.12: the subjectAltName is critical only when the subject is empty.
                if isCritical(certificate, nid: NID_subject_alt_name) && !certificate.subject.attributes.isEmpty {
                    fail(.malformed, "webPKI.criticalSubjectAltNameWithSubject")
                }
                if certificate.subjectAlternativeNames.contains(where: {
                    $0.kind == .dns && ASCIILabels.lowercased($0.value.utf8, underscore: false) == nil  // `*` as a letter
                }) {
                    fail(.malformed, "webPKI.invalidDNSName")
                }
                // OpenSSL's sslserver/sslclient purposes also accept Netscape's and Microsoft's Server Gated Crypto
                // EKUs (nsSGC, msSGC): the SSL policies require serverAuth or clientAuth by name.
                if case .sslClient = policy.kind, let usages = certificate.extendedKeyUsage,
                    !usages.contains("1.3.6.1.5.5.7.3.2")
                {
                    fail(.extendedKeyUsage, "webPKI.leafWithoutClientAuth")
                }
                if case .sslServer = policy.kind {
                    // BR 7.1.2.7.10: the EKU is present, names serverAuth, and never anyExtendedKeyUsage; it is not
                    // critical.
                    if let usages = certificate.extendedKeyUsage {
                        if usages.contains("2.5.29.37.0") { fail(.extendedKeyUsage, "webPKI.leafAnyExtendedKeyUsage") }
                        if !usages.contains("1.3.6.1.5.5.7.3.1") { fail(.extendedKeyUsage, "webPKI.leafWithoutServerAuth") }
                        if isCritical(certificate, nid: NID_ext_key_usage) {
                            fail(.extendedKeyUsage, "webPKI.leafCriticalExtendedKeyUsage")
                        }
                    } else {
                        fail(.extendedKeyUsage, "webPKI.leafWithoutExtendedKeyUsage")
                    }
                    // BR 7.1.2.7.12: a subscriber certificate names its subjects in a subjectAltName, whatever name is
                    // asked for (the certificate manager's CN-fallback option excepted).
                    if certificate.subjectAlternativeNames.isEmpty && !policy.commonNameFallback {
                        fail(.hostnameMismatch, "webPKI.leafWithoutSubjectAltName")
                    }
                }
            } else if index > 0 && index < anchorIndex {
                // An intermediate must be a version 3 certificate with basic constraints (BR 7.1.1).
                if certificate.version < 3 { fail(.basicConstraints, "webPKI.version1CA") }
                // RFC 5280 4.2.1.1, BR 7.1.2.2: every CA certificate but a self-signed one names its issuer's key (a
                // cross-signed root included).
                if !isSelfSigned(certificate) && !hasAuthorityKeyIdentifier(certificate) {
                    fail(.malformed, "webPKI.caWithoutAuthorityKeyIdentifier")
                }
            }
            if index < anchorIndex || path.count == 1, hasMalformedExtension(certificate, nid: NID_info_access) {
                // RFC 5280 4.2.2.1: an authorityInfoAccess that does not decode is a malformed certificate.
                fail(.malformed, "webPKI.malformedAuthorityInformationAccess")
            }
            if index == anchorIndex && path.count > 1 && isSelfSigned(certificate) {
                // BR 7.1.2.1: a root carries no EKU, and an AKI, if any, holds a keyIdentifier. (BR also forbids the
                // issuer and serial fields there, but five roots of Debian's CA bundle carry them — Go Daddy and
                // Starfield Class 2, QuoVadis Root CA 2 and 3, Certigna — and browsers trust them: not enforced.)
                if certificate.extendedKeyUsage != nil { fail(.extendedKeyUsage, "webPKI.rootExtendedKeyUsage") }
                if let rule = rootAuthorityKeyIdentifierRule(certificate) { fail(.malformed, "webPKI.\(rule)") }
            }
        }
        return violations
    }

    /// Whether `certificate` has the extension `nid` marked critical.
    static func isCritical(_ certificate: Certificate, nid: Int32) -> Bool {
        certificate.withUnsafeX509 { x509 in
            // X509_get_ext_by_NID: the index of the first such extension, -1 when there is none.
            let index = X509_get_ext_by_NID(x509, nid, -1)
            guard index >= 0, let ext = X509_get_ext(x509, index) else { return false }
            return X509_EXTENSION_get_critical(ext) == 1
        }
    }

    static func hasAuthorityKeyIdentifier(_ certificate: Certificate) -> Bool {
        // X509_get_ext_by_NID: the index of the first such extension, -1 when there is none.
        certificate.withUnsafeX509 { X509_get_ext_by_NID($0, NID_authority_key_identifier, -1) >= 0 }
    }

    /// Whether `certificate` has the extension `nid` but it does not decode.
    static func hasMalformedExtension(_ certificate: Certificate, nid: Int32) -> Bool {
        certificate.withUnsafeX509 { x509 in
            guard X509_get_ext_by_NID(x509, nid, -1) >= 0 else { return false }
            // X509_get_ext_d2i: the decoded extension (ours to free), NULL when it is absent or does not decode.
            var critical: Int32 = 0
            guard let decoded = X509_get_ext_d2i(x509, nid, &critical, nil) else {
                ERR_clear_error()
                return true
            }
            if nid == NID_info_access {
                AUTHORITY_INFO_ACCESS_free(OpaquePointer(decoded))
            }
            return false
        }
    }

    static func isSelfSigned(_ certificate: Certificate) -> Bool {
        certificate.withUnsafeX509 { X509_get_extension_flags($0) & UInt32(EXFLAG_SS) != 0 }
    }

    /// The rule a root's authorityKeyIdentifier breaks: present without a keyIdentifier.
    static func rootAuthorityKeyIdentifierRule(_ certificate: Certificate) -> String? {
        certificate.withUnsafeX509 { x509 -> String? in
            guard X509_get_ext_by_NID(x509, NID_authority_key_identifier, -1) >= 0 else { return nil }
            // X509_get0_authority_key_id: an internal pointer into the cached AKI (not owned), NULL without a keyid.
            return X509_get0_authority_key_id(x509) == nil ? "rootAuthorityKeyIdentifierWithoutKeyIdentifier" : nil
        }
    }

    /// "sha1", "md5"… for a signature made with a digest the web PKI no longer accepts; nil otherwise.
    static func weakSignatureDigest(_ certificate: Certificate) -> String? {
        certificate.withUnsafeX509 { x509 -> String? in
            // X509_get_signature_nid: the signature algorithm's NID (NID_undef when unknown); OBJ_find_sigid_algs
            // splits it into digest and key NIDs, 0 when it is not a known signature algorithm.
            var digest: Int32 = 0
            var key: Int32 = 0
            guard OBJ_find_sigid_algs(X509_get_signature_nid(x509), &digest, &key) == 1 else { return nil }
            switch digest {
            case NID_sha1: return "sha1"
            case NID_md5: return "md5"
            case NID_md4: return "md4"
            case NID_md2: return "md2"
            default: return nil
            }
        }
    }

    /// The rule a forbidden key breaks: DSA, RSA under 2048 bits or with a modulus that is not a whole number of
    /// bytes, an elliptic curve other than P-256, P-384, P-521.
    static func weakKeyRule(_ certificate: Certificate) -> String? {
        switch certificate.publicKeyAlgorithm {
        case "1.2.840.10040.4.1":
            return "weakKey.dsa"
        case "1.2.840.113549.1.1.1":
            guard let bits = certificate.publicKeySizeInBits else { return "weakKey.rsaUnreadable" }
            if bits < 2048 { return "weakKey.rsaUnder2048" }
            if bits % 8 != 0 { return "weakKey.rsaModulusNotWholeBytes" }
            return nil
        case "1.2.840.10045.2.1":
            switch certificate.publicKeyCurveName {
            case "prime256v1", "secp384r1", "secp521r1", "P-256", "P-384", "P-521": return nil
            default: return "weakKey.curve"
            }
        default:
            return nil
        }
    }

    /// The rule a serial number breaks (RFC 5280 4.1.2.2, BR 7.1): positive, at most 20 octets.
    static func serialNumberRule(_ certificate: Certificate) -> String? {
        certificate.withUnsafeX509 { x509 -> String? in
            // X509_get0_serialNumber: an internal pointer (not owned); the ASN1_INTEGER holds the magnitude, its
            // type says the sign.
            guard let serial = X509_get0_serialNumber(x509) else { return "serialNumberMissing" }
            if ASN1_STRING_type(serial) == V_ASN1_NEG_INTEGER { return "serialNumberNegative" }
            let count = Int(ASN1_STRING_length(serial))
            guard count > 0, let data = ASN1_STRING_get0_data(serial) else { return "serialNumberZero" }
            let bytes = UnsafeBufferPointer(start: data, count: count)
            if bytes.allSatisfy({ $0 == 0 }) { return "serialNumberZero" }
            // The DER content adds a leading zero octet when the magnitude's top bit is set.
            let encodedLength = count + (bytes[0] & 0x80 != 0 ? 1 : 0)
            if encodedLength > 20 { return "serialNumberLongerThan20Octets" }
            return nil
        }
    }
}
