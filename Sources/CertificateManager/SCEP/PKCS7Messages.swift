internal import COpenSSL
package import SecurityBase
package import Certificates
import Foundation

/// SCEP's authenticated attributes (RFC 8894 §3.2.1) and the ASN.1 string type each one carries. The OIDs are used
/// as `ASN1_OBJECT`s made for each call, never registered with `OBJ_create` (not thread-safe in OpenSSL 3.0 while
/// other threads look objects up).
package enum SCEPAttribute: String, CaseIterable, Sendable {
    case messageType = "2.16.840.1.113733.1.9.2"
    case pkiStatus = "2.16.840.1.113733.1.9.3"
    case failInfo = "2.16.840.1.113733.1.9.4"
    case senderNonce = "2.16.840.1.113733.1.9.5"
    case recipientNonce = "2.16.840.1.113733.1.9.6"
    case transactionID = "2.16.840.1.113733.1.9.7"
    /// RFC 8894 §3.2.1.4.1 (id-scep-failInfoText).
    case failInfoText = "1.3.6.1.5.5.7.24.1"

    var valueType: Int32 {
        switch self {
        case .senderNonce, .recipientNonce: V_ASN1_OCTET_STRING
        case .failInfoText: V_ASN1_UTF8STRING
        default: V_ASN1_PRINTABLESTRING
        }
    }
}

/// PKCS#7 (RFC 2315) as SCEP uses it, over OpenSSL's PKCS7 API: EnvelopedData for a recipient certificate,
/// SignedData with authenticated attributes, certs-only SignedData, and the checks of what comes back. Every
/// OpenSSL object is made and freed inside one call; what crosses the boundary is DER and ``Certificate``s.
/// `package`: the test target's SCEP responder (the CA side, which the product does not ship) builds on it.
package enum PKCS7Messages {
    /// A SignedData whose signature verified, with its authenticated attributes (each present once with one value
    /// of its type; others are left out) and its signed content (empty for a detached or empty one).
    package struct Verified {
        package let attributes: [SCEPAttribute: [UInt8]]
        package let content: [UInt8]
    }

    package enum Opened {
        case verified(Verified)
        /// A SignedData, but not signed by one of the expected signers (or not verifying).
        case badSignature
        /// Not one DER SignedData with one signer and authenticated attributes.
        case malformed
    }

    /// The DER of an EnvelopedData holding `data`, encrypted with `cipher` (an `EVP_CIPHER`) for `recipient`'s key
    /// (key transport); `nil` when OpenSSL refuses (a recipient key that cannot transport keys).
    package static func envelope(_ data: [UInt8], for recipient: Certificate, cipher: OpaquePointer) -> [UInt8]? {
        recipient.withUnsafeX509 { x509 in
            data.withUnsafeBytes { bytes -> [UInt8]? in
                guard let recipients = OPENSSL_sk_new_null() else { return nil }
                defer { OPENSSL_sk_free(recipients) }  // the stack only borrows: PKCS7_encrypt takes its own references
                guard OPENSSL_sk_push(recipients, UnsafeRawPointer(x509)) > 0,
                    let input = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count))
                else { return nil }
                defer { BIO_free(input) }
                return encoded(PKCS7_encrypt(recipients, input, cipher, PKCS7_BINARY))
            }
        }
    }

    /// The DER of a SignedData over `content` (nothing when empty), signed by `key` with `digest` (an `EVP_MD`)
    /// under `signer` (included), with the authenticated attributes contentType and `attributes` in that order;
    /// messageDigest and signingTime are added by OpenSSL when it signs. `nil` when signing fails.
    package static func signed(
        _ content: [UInt8], by signer: Certificate, key: AsymmetricKey, digest: OpaquePointer,
        attributes: [(SCEPAttribute, [UInt8])]
    ) -> [UInt8]? {
        signer.withUnsafeX509 { x509 in
            key.withUnsafePKEY { pkey -> [UInt8]? in
                guard let message = PKCS7_new() else { return nil }
                defer { PKCS7_free(message) }
                guard PKCS7_set_type(message, NID_pkcs7_signed) == 1,
                    let info = PKCS7_add_signature(message, x509, pkey, digest),
                    PKCS7_add_certificate(message, x509) == 1, PKCS7_content_new(message, NID_pkcs7_data) == 1,
                    PKCS7_add_signed_attribute(
                        info, NID_pkcs9_contentType, V_ASN1_OBJECT, UnsafeMutableRawPointer(OBJ_nid2obj(NID_pkcs7_data))) == 1,
                    attributes.allSatisfy({ add($0.0, $0.1, to: info) }),
                    let stream = PKCS7_dataInit(message, nil)
                else { return nil }
                defer { BIO_free_all(stream) }
                let written = content.isEmpty || content.withUnsafeBytes { BIO_write(stream, $0.baseAddress, Int32($0.count)) } == content.count
                // BIO_flush is a macro over BIO_ctrl(BIO_CTRL_FLUSH).
                guard written, BIO_ctrl(stream, BIO_CTRL_FLUSH, 0, nil) == 1, PKCS7_dataFinal(message, stream) == 1 else { return nil }
                return derEncoded(message)
            }
        }
    }

    /// Reads one DER SignedData with one signer whose signature must verify under one of `signers` (certificates
    /// inside the message are not trusted, nor chained: they are the CA's own, from GetCACert), and returns its
    /// authenticated attributes and content.
    package static func open(_ der: [UInt8], signers: [Certificate]) -> Opened {
        defer { ERR_clear_error() }
        guard let message = decoded(der) else { return .malformed }
        defer { PKCS7_free(message) }
        // A signedData may arrive with no content at all (d.sign NULL): checked before anything reads it.
        guard OBJ_obj2nid(message.pointee.type) == NID_pkcs7_signed, message.pointee.d.sign != nil,
            let infos = PKCS7_get_signer_info(message), OPENSSL_sk_num(infos) == 1,
            let info = OPENSSL_sk_value(infos, 0)?.assumingMemoryBound(to: PKCS7_SIGNER_INFO.self),
            info.pointee.auth_attr != nil
        else { return .malformed }
        guard let out = BIO_new(BIO_s_mem()) else { return .malformed }
        defer { BIO_free(out) }
        // A FAILURE or PENDING reply may carry no content: it is verified as detached over nothing.
        // PKCS7_get_detached is a macro over PKCS7_ctrl(PKCS7_OP_GET_DETACHED_SIGNATURE).
        let detached = PKCS7_ctrl(message, PKCS7_OP_GET_DETACHED_SIGNATURE, 0, nil) != 0 ? BIO_new_mem_buf("", 0) : nil
        defer { if let detached { BIO_free(detached) } }
        let verified = withBorrowedStack(signers) { stack in
            // NOINTERN: the signer must be one of `signers`; NOVERIFY/NOCHAIN: they are taken as they are.
            PKCS7_verify(message, stack, nil, detached, out, PKCS7_NOINTERN | PKCS7_NOVERIFY | PKCS7_NOCHAIN | PKCS7_BINARY)
        }
        guard verified == 1 else { return .badSignature }
        var attributes: [SCEPAttribute: [UInt8]] = [:]
        for attribute in SCEPAttribute.allCases {
            attributes[attribute] = value(of: attribute, in: info)
        }
        return .verified(Verified(attributes: attributes, content: memoryContents(out)))
    }

    /// The certificates of a certs-only (degenerate) SignedData; `nil` when `der` is not one or holds none.
    package static func certificatesOnly(_ der: [UInt8]) -> [Certificate]? {
        defer { ERR_clear_error() }
        guard let message = decoded(der) else { return nil }
        defer { PKCS7_free(message) }
        // `30 0b 06 09 2a 86 48 86 f7 0d 01 07 02` is a signedData without content: d.sign is NULL there.
        guard OBJ_obj2nid(message.pointee.type) == NID_pkcs7_signed, let signed = message.pointee.d.sign,
            let stack = signed.pointee.cert, OPENSSL_sk_num(stack) > 0
        else { return nil }
        var certificates: [Certificate] = []
        for index in 0..<OPENSSL_sk_num(stack) {
            guard let x509 = OPENSSL_sk_value(stack, index), let certificate = try? Certificate(retaining: OpaquePointer(x509)) else { return nil }
            certificates.append(certificate)
        }
        return certificates
    }

    /// Decrypts the EnvelopedData `der` with `key`, the private key of the recipient `certificate`. `nil` when it
    /// is not one or does not decrypt. The plaintext may be a request holding a challenge password: a secret.
    package static func decrypt(_ der: [UInt8], key: AsymmetricKey, certificate: Certificate) -> SecretBytes? {
        defer { ERR_clear_error() }
        guard let envelope = decoded(der) else { return nil }
        defer { PKCS7_free(envelope) }
        guard OBJ_obj2nid(envelope.pointee.type) == NID_pkcs7_enveloped, envelope.pointee.d.enveloped != nil,
            let out = BIO_new(BIO_s_mem())
        else { return nil }
        defer { BIO_free(out) }
        let decrypted = certificate.withUnsafeX509 { x509 in
            key.withUnsafePKEY { PKCS7_decrypt(envelope, $0, x509, out, PKCS7_BINARY) }
        }
        // The memory BIO's buffer is cleansed whether it decrypted or not.
        var pointer: UnsafeMutablePointer<CChar>?
        let count = BIO_ctrl(out, BIO_CTRL_INFO, 0, &pointer)
        defer { if let pointer, count > 0 { OPENSSL_cleanse(pointer, Int(count)) } }
        guard decrypted == 1, count >= 0 else { return nil }
        return SecretBytes(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }

    /// Whether `issuer`'s key verifies `certificate`'s signature (an RA certificate and its CA; an issued
    /// certificate and its CA).
    package static func isIssued(_ certificate: Certificate, by issuer: Certificate) -> Bool {
        defer { ERR_clear_error() }
        return certificate.withUnsafeX509 { x509 in
            issuer.withUnsafeX509 { issuerX509 in
                guard let key = X509_get0_pubkey(issuerX509) else { return false }
                return X509_verify(x509, key) == 1
            }
        }
    }

    /// A transient self-signed certificate for `key` (RFC 8894 §2.3): subject CN=`commonName`, a random positive
    /// 63-bit serial, valid from an hour ago for `days` days, signed with `digest` (an `EVP_MD`).
    package static func selfSigned(key: AsymmetricKey, commonName: String, digest: OpaquePointer, days: Int) -> Certificate? {
        key.withUnsafePKEY { pkey -> Certificate? in
            guard let x509 = X509_new() else { return nil }
            defer { X509_free(x509) }
            guard let name = X509_NAME_new() else { return nil }
            defer { X509_NAME_free(name) }
            guard let serial = BN_new() else { return nil }
            defer { BN_free(serial) }
            guard X509_set_version(x509, 2) == 1,
                BN_rand(serial, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1,
                BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x509)) != nil,
                X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1,
                X509_set_subject_name(x509, name) == 1, X509_set_issuer_name(x509, name) == 1,
                X509_gmtime_adj(X509_getm_notBefore(x509), -3600) != nil,
                X509_time_adj_ex(X509_getm_notAfter(x509), Int32(days), 0, nil) != nil,
                X509_set_pubkey(x509, pkey) == 1, X509_sign(x509, pkey, digest) > 0
            else { return nil }
            return try? Certificate(retaining: x509)
        }
    }

    // MARK: OpenSSL plumbing

    /// Adds one authenticated attribute of `attribute`'s type holding `bytes`.
    private static func add(_ attribute: SCEPAttribute, _ bytes: [UInt8], to info: UnsafeMutablePointer<PKCS7_SIGNER_INFO>) -> Bool {
        guard let object = OBJ_txt2obj(attribute.rawValue, 1) else { return false }
        defer { ASN1_OBJECT_free(object) }
        return bytes.withUnsafeBufferPointer { bytes in
            X509at_add1_attr_by_OBJ(&info.pointee.auth_attr, object, attribute.valueType, bytes.baseAddress, Int32(bytes.count)) != nil
        }
    }

    /// The attribute's bytes when it is present once, with one value of its type; else `nil`.
    private static func value(of attribute: SCEPAttribute, in info: UnsafeMutablePointer<PKCS7_SIGNER_INFO>) -> [UInt8]? {
        guard let object = OBJ_txt2obj(attribute.rawValue, 1) else { return nil }
        defer { ASN1_OBJECT_free(object) }
        let attributes = info.pointee.auth_attr
        let index = X509at_get_attr_by_OBJ(attributes, object, -1)
        guard index >= 0, X509at_get_attr_by_OBJ(attributes, object, index) < 0,
            let found = X509at_get_attr(attributes, index), X509_ATTRIBUTE_count(found) == 1,
            let any = X509_ATTRIBUTE_get0_type(found, 0), any.pointee.type == attribute.valueType,
            let string = any.pointee.value.asn1_string
        else { return nil }
        return Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(string), count: Int(ASN1_STRING_length(string))))
    }

    private static func decoded(_ der: [UInt8]) -> UnsafeMutablePointer<PKCS7>? {
        der.withUnsafeBufferPointer { buffer -> UnsafeMutablePointer<PKCS7>? in
            var cursor = buffer.baseAddress
            guard let message = d2i_PKCS7(nil, &cursor, buffer.count) else { return nil }
            // One structure and nothing after it.
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                PKCS7_free(message)
                return nil
            }
            return message
        }
    }

    /// The DER of an owned structure, which is freed.
    private static func encoded(_ message: UnsafeMutablePointer<PKCS7>?) -> [UInt8]? {
        guard let message else { return nil }
        defer { PKCS7_free(message) }
        return derEncoded(message)
    }

    private static func derEncoded(_ message: UnsafeMutablePointer<PKCS7>) -> [UInt8]? {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PKCS7(message, &der)
        guard length > 0, let der else { return nil }
        defer { CRYPTO_free(der, #file, #line) }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }

    /// What a memory BIO holds (BIO_get_mem_data is a macro over BIO_ctrl(BIO_CTRL_INFO)).
    private static func memoryContents(_ bio: OpaquePointer) -> [UInt8] {
        var pointer: UnsafeMutablePointer<CChar>?
        let count = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard count > 0, let pointer else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }

    /// A stack borrowing the certificates' X509s (they stay alive: the array holds them) for the length of `body`.
    private static func withBorrowedStack<R>(_ certificates: [Certificate], _ body: (OpaquePointer?) -> R) -> R {
        let stack = OPENSSL_sk_new_null()
        defer { OPENSSL_sk_free(stack) }  // frees the stack only, not the certificates
        for certificate in certificates {
            certificate.withUnsafeX509 { _ = OPENSSL_sk_push(stack, UnsafeRawPointer($0)) }
        }
        return body(stack)
    }
}

/// The little DER SCEP needs written by hand (X.690 §8.1): a SEQUENCE around already-encoded members.
package enum DERWriter {
    /// `SEQUENCE { body }`: tag 0x30, the definite length (short form below 128, else the long form's fewest
    /// bytes), the body.
    package static func sequence(_ body: [UInt8]) -> [UInt8] {
        [0x30] + length(body.count) + body
    }

    package static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var remaining = count
        while remaining > 0 {
            bytes.insert(UInt8(remaining & 0xff), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
