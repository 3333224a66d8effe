internal import COpenSSL
import Foundation

/// What one OCSP response or CRL says about one certificate, read and checked with OpenSSL's primitives; the rules
/// (which signer may answer, what a missing nonce means, when an answer is fresh, what follows from it) are
/// decided here and in ``RevocationChecker``, in Swift.
struct RevocationAnswer: Equatable {
    /// `.good` or `.revoked` from an answer that verified and is about this certificate; `.unknown` otherwise
    /// (an unknown status, an unverifiable or foreign answer).
    var status: RevocationStatus
    /// When the answer was issued (OCSP thisUpdate, CRL lastUpdate) and until when it is current (nextUpdate), in
    /// seconds since 1970.
    var thisUpdate: Int?
    var nextUpdate: Int?

    static let unknown = RevocationAnswer(status: .unknown)

    /// Whether it settles the question at `time`: good or revoked, and fresh (``RevocationFreshness``).
    func decided(at time: Int, maximumAgeWithoutNextUpdate: Int?) -> RevocationStatus? {
        guard status != .unknown,
            RevocationFreshness.isFresh(
                thisUpdate: thisUpdate, nextUpdate: nextUpdate, at: time, maximumAgeWithoutNextUpdate: maximumAgeWithoutNextUpdate)
        else { return nil }
        return status
    }

    /// `time` (an ASN1_TIME) as seconds since 1970, `nil` when absent or unreadable.
    static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int(timegm(&parts))
    }
}

/// OCSP responses (RFC 6960).
enum OCSPAnswers {
    /// Checks a DER OCSP response about `certificate` (issued by `issuer`, whose path ends at `anchor`) at `time`:
    /// a successful response (one structure, nothing after it), signed by the issuer itself or by a responder the
    /// issuer delegated to (id-kp-OCSPSigning, RFC 6960 §4.2.2.2, verified to the issuer at `time`), answering for
    /// this certificate's CertID. When `request` is given (our own fetch), a nonce the responder echoes must be
    /// ours; a response without one is allowed, its freshness then resting on its dates (RFC 5019).
    static func check(
        _ der: [UInt8], certificate: OpaquePointer, issuer: OpaquePointer, anchor: OpaquePointer, request: OpaquePointer?,
        time: Int
    ) -> RevocationAnswer {
        defer { ERR_clear_error() }
        let response = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            guard let response = d2i_OCSP_RESPONSE(nil, &cursor, buffer.count) else { return nil }
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                OCSP_RESPONSE_free(response)
                return nil
            }
            return response
        }
        guard let response else { return .unknown }
        defer { OCSP_RESPONSE_free(response) }
        guard OCSP_response_status(response) == OCSP_RESPONSE_STATUS_SUCCESSFUL, let basic = OCSP_response_get1_basic(response)
        else { return .unknown }
        defer { OCSP_BASICRESP_free(basic) }
        // OCSP_check_nonce: 1 the nonces match, -1 the response has none, 0 they differ, 2 and 3 the request had none.
        if let request, OCSP_check_nonce(request, basic) == 0 { return .unknown }
        guard signedByIssuerOrDelegate(basic, issuer: issuer, anchor: anchor, time: time),
            let id = OCSP_cert_to_id(nil, certificate, issuer)
        else { return .unknown }
        defer { OCSP_CERTID_free(id) }
        var status: Int32 = -1
        var reason: Int32 = 0
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, id, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1 else {
            return .unknown
        }
        let said: RevocationStatus =
            switch status {
            case V_OCSP_CERTSTATUS_GOOD: .good
            case V_OCSP_CERTSTATUS_REVOKED: .revoked
            default: .unknown
            }
        return RevocationAnswer(
            status: said, thisUpdate: RevocationAnswer.seconds(UnsafePointer(thisUpdate)),
            nextUpdate: RevocationAnswer.seconds(UnsafePointer(nextUpdate)))
    }

    /// OCSP_basic_verify against a store of the anchor and the issuer (a partial chain: the issuer may be an
    /// intermediate), with the issuer as the one untrusted certificate a delegated responder's may chain through.
    private static func signedByIssuerOrDelegate(
        _ basic: OpaquePointer, issuer: OpaquePointer, anchor: OpaquePointer, time: Int
    ) -> Bool {
        guard let store = X509_STORE_new() else { return false }
        defer { X509_STORE_free(store) }
        guard let untrusted = OPENSSL_sk_new_null() else { return false }
        defer { OPENSSL_sk_free(untrusted) }  // borrows the issuer
        X509_STORE_add_cert(store, anchor)
        if issuer != anchor { X509_STORE_add_cert(store, issuer) }
        OPENSSL_sk_push(untrusted, UnsafeRawPointer(issuer))
        X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), time_t(time))
        X509_VERIFY_PARAM_set_flags(X509_STORE_get0_param(store), UInt(X509_V_FLAG_PARTIAL_CHAIN))
        return OCSP_basic_verify(basic, untrusted, store, 0) == 1
    }
}

/// CRLs (RFC 5280 §5).
enum CRLAnswers {
    /// Whether `crl` names `issuer` as its issuer and `issuer`'s key verifies its signature.
    static func isSigned(_ crl: OpaquePointer, by issuer: OpaquePointer) -> Bool {
        defer { ERR_clear_error() }
        guard let key = X509_get0_pubkey(issuer), X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(issuer)) == 0
        else { return false }
        return X509_CRL_verify(crl, key) == 1
    }

    /// What a CRL that `issuer` signed says of `certificate`: revoked when it lists it, good when it does not,
    /// unknown when the CRL is not the issuer's (by name or signature); with the CRL's lastUpdate and nextUpdate.
    static func check(_ crl: OpaquePointer, certificate: OpaquePointer, issuer: OpaquePointer) -> RevocationAnswer {
        var answer = validity(crl)
        guard isSigned(crl, by: issuer) else { return .unknown }
        var entry: OpaquePointer?
        answer.status = X509_CRL_get0_by_cert(crl, &entry, certificate) == 1 ? .revoked : .good
        return answer
    }

    /// The CRL's lastUpdate and nextUpdate, its status left unknown.
    static func validity(_ crl: OpaquePointer) -> RevocationAnswer {
        RevocationAnswer(
            status: .unknown, thisUpdate: RevocationAnswer.seconds(X509_CRL_get0_lastUpdate(crl)),
            nextUpdate: RevocationAnswer.seconds(X509_CRL_get0_nextUpdate(crl)))
    }
}
