internal import COpenSSL
internal import COpenSSLShims
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension Certificate {
    /// Every field, read from the `X509` once (so the object is never touched again but to free it).
    struct Fields: Sendable {
        let der: Data
        let version: Int
        let subject: DistinguishedName
        let issuer: DistinguishedName
        let serialNumber: Data
        let notValidBefore: Date
        let notValidAfter: Date
        let subjectKeyIdentifier: Data?
        let authorityKeyIdentifier: Data?
        let subjectPublicKeyInfo: Data
        let publicKeyHash: Data
        let publicKeyAlgorithm: String
        let publicKeySizeInBits: Int?
        let publicKeyCurveName: String?
        let subjectAlternativeNames: [GeneralName]
        let isCertificateAuthority: Bool
        let pathLengthConstraint: Int?
        let keyUsage: KeyUsage?
        let extendedKeyUsage: [String]?
        let sha1Fingerprint: Data
        let sha256Fingerprint: Data

        init(_ x509: OpaquePointer, der: Data) throws {
            self.der = der
            version = Int(X509_get_version(x509)) + 1
            guard let subjectName = X509_get_subject_name(x509), let issuerName = X509_get_issuer_name(x509) else {
                throw CertificateError(.malformedDER, "the certificate has no subject or issuer")
            }
            subject = try DistinguishedName(borrowing: subjectName)
            issuer = try DistinguishedName(borrowing: issuerName)

            guard let serial = X509_get0_serialNumber(x509),
                let serialDER = X509DER.encode({ i2d_ASN1_INTEGER(serial, $0) }),
                let serialContent = X509DER.contents(serialDER)
            else { throw CertificateError(.malformedDER, "the serial number cannot be encoded") }
            serialNumber = serialContent

            // A time OpenSSL parses but cannot interpret (a UTCTime of 14 digits, an impossible date) reads
            // fail-safe: a notBefore that never arrives, a notAfter long past; the certificate is never valid.
            notValidBefore = Self.date(X509_get0_notBefore(x509)) ?? .distantFuture
            notValidAfter = Self.date(X509_get0_notAfter(x509)) ?? .distantPast

            // X509_get_extension_flags caches the extensions (OpenSSL guards the cache with a lock) and sets
            // EXFLAG_INVALID for malformed known extensions; the values below are then read from that cache.
            let flags = X509_get_extension_flags(x509)
            subjectKeyIdentifier = X509_get0_subject_key_id(x509).map { Self.bytes($0) }
            authorityKeyIdentifier = X509_get0_authority_key_id(x509).map { Self.bytes($0) }
            isCertificateAuthority = flags & UInt32(EXFLAG_CA) != 0
            let pathLength = X509_get_pathlen(x509)
            pathLengthConstraint = isCertificateAuthority && pathLength >= 0 ? Int(pathLength) : nil
            keyUsage = flags & UInt32(EXFLAG_KUSAGE) != 0 ? Self.keyUsage(X509_get_key_usage(x509)) : nil
            extendedKeyUsage = Self.extendedKeyUsage(x509)
            subjectAlternativeNames = Self.alternativeNames(x509)

            guard let publicKey = X509_get_X509_PUBKEY(x509),
                let spki = X509DER.encode({ i2d_X509_PUBKEY(publicKey, $0) })
            else { throw CertificateError(.malformedDER, "the public key cannot be encoded") }
            subjectPublicKeyInfo = spki
            var algorithm: OpaquePointer?
            X509_PUBKEY_get0_param(&algorithm, nil, nil, nil, publicKey)
            publicKeyAlgorithm = algorithm.map { X509ObjectIdentifiers.dotted($0) } ?? ""
            // X509_get0_pubkey: the cached EVP_PKEY, NULL when OpenSSL cannot decode the key (not owned).
            publicKeySizeInBits = X509_get0_pubkey(x509).flatMap { key in
                let bits = EVP_PKEY_get_bits(key)
                return bits > 0 ? Int(bits) : nil
            }
            publicKeyCurveName = Self.curveName(x509)
            // The BIT STRING's data is its contents without the unused-bits octet: the key Apple hashes.
            let keyBits = X509_get0_pubkey_bitstr(x509).map { Self.bytes($0) } ?? Data()
            publicKeyHash = X509Digest.sha1(keyBits)
            sha1Fingerprint = X509Digest.sha1(der)
            sha256Fingerprint = X509Digest.sha256(der)
            ERR_clear_error()
        }

        /// The named curve of an EC public key as OpenSSL names it (`prime256v1`, `secp384r1`…), nil for another
        /// kind of key or an unreadable one. Read once here: the trust evaluator checks it for every certificate
        /// of every path, and `EVP_PKEY_get_group_name` goes through the provider's parameters each time.
        private static func curveName(_ x509: OpaquePointer) -> String? {
            // X509_get0_pubkey: the cached key, not owned; EVP_PKEY_get_group_name: 1 and the NUL-terminated name
            // written when the key has one.
            guard let key = X509_get0_pubkey(x509), EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
            var buffer = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else {
                ERR_clear_error()
                return nil
            }
            return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        private static func bytes(_ string: UnsafePointer<ASN1_STRING>) -> Data {
            let count = Int(ASN1_STRING_length(string))
            guard count > 0, let data = ASN1_STRING_get0_data(string) else { return Data() }
            return Data(bytes: data, count: count)
        }

        private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
            var parts = tm()
            // ASN1_TIME_to_tm: "returns 1 on success and 0 on error" (the tm is in UTC).
            guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
                ERR_clear_error()
                return nil
            }
            return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
        }

        private static func keyUsage(_ bits: UInt32) -> KeyUsage {
            let table: [(UInt32, KeyUsage)] = [
                (UInt32(KU_DIGITAL_SIGNATURE), .digitalSignature), (UInt32(KU_NON_REPUDIATION), .nonRepudiation),
                (UInt32(KU_KEY_ENCIPHERMENT), .keyEncipherment), (UInt32(KU_DATA_ENCIPHERMENT), .dataEncipherment),
                (UInt32(KU_KEY_AGREEMENT), .keyAgreement), (UInt32(KU_KEY_CERT_SIGN), .keyCertSign),
                (UInt32(KU_CRL_SIGN), .crlSign), (UInt32(KU_ENCIPHER_ONLY), .encipherOnly),
                (UInt32(KU_DECIPHER_ONLY), .decipherOnly),
            ]
            return table.reduce(into: KeyUsage()) { usage, entry in if bits & entry.0 != 0 { usage.insert(entry.1) } }
        }

        private static func extendedKeyUsage(_ x509: OpaquePointer) -> [String]? {
            var critical: Int32 = 0
            // X509_get_ext_d2i: a new decoded value the caller frees, NULL when absent, repeated or malformed.
            guard let raw = X509_get_ext_d2i(x509, NID_ext_key_usage, &critical, nil) else {
                ERR_clear_error()
                return nil
            }
            let objects = OpaquePointer(raw)
            defer { copenssl_x509_object_stack_free(objects) }
            return (0..<max(copenssl_x509_object_stack_count(objects), 0)).compactMap { index in
                copenssl_x509_object_stack_at(objects, index).map { X509ObjectIdentifiers.dotted($0) }
            }
        }

        private static func alternativeNames(_ x509: OpaquePointer) -> [GeneralName] {
            var critical: Int32 = 0
            guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, &critical, nil) else {
                ERR_clear_error()
                return []
            }
            let names = OpaquePointer(raw)
            defer { copenssl_x509_general_names_free(names) }
            var result: [GeneralName] = []
            for index in 0..<max(copenssl_x509_general_names_count(names), 0) {
                var data: UnsafePointer<UInt8>?
                var length: Int32 = 0
                let type = copenssl_x509_general_name_at(names, index, &data, &length)
                guard let data, length >= 0 else { continue }
                let bytes = Data(bytes: data, count: Int(length))
                let text = String(decoding: bytes, as: UTF8.self)
                switch type {
                case GEN_DNS: result.append(GeneralName(kind: .dns, value: text, encoded: bytes))
                case GEN_EMAIL: result.append(GeneralName(kind: .email, value: text, encoded: bytes))
                case GEN_URI: result.append(GeneralName(kind: .uri, value: text, encoded: bytes))
                case GEN_IPADD: result.append(GeneralName(kind: .ipAddress, value: ipText(bytes), encoded: bytes))
                default: continue
                }
            }
            return result
        }

        /// Dotted IPv4, IPv6 as eight lower-case hex groups, or the hex of any other length.
        static func ipText(_ bytes: Data) -> String {
            let octets = [UInt8](bytes)
            switch octets.count {
            case 4: return octets.map(String.init).joined(separator: ".")
            case 16:
                return stride(from: 0, to: 16, by: 2).map {
                    String(UInt16(octets[$0]) << 8 | UInt16(octets[$0 + 1]), radix: 16)
                }
                .joined(separator: ":")
            default: return octets.map { String(format: "%02x", $0) }.joined()
            }
        }
    }
}

/// SHA-1 and SHA-256 over OpenSSL's EVP one-shot.
enum X509Digest {
    static func sha1(_ data: Data) -> Data { digest(data, EVP_sha1(), 20) }
    static func sha256(_ data: Data) -> Data { digest(data, EVP_sha256(), 32) }

    private static func digest(_ data: Data, _ type: OpaquePointer?, _ size: Int) -> Data {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { raw in EVP_Digest(raw.baseAddress, raw.count, &out, &length, type, nil) }
        // EVP_Digest of a built-in digest fails only when memory runs out: a broken internal invariant.
        precondition(ok == 1 && Int(length) == size, "EVP_Digest failed")
        return Data(out.prefix(size))
    }
}

/// PEM blocks, read by OpenSSL's own reader (PEM_read_bio), so the tolerance is exactly OpenSSL's.
enum X509PEM {
    /// The decoded contents of every CERTIFICATE (or pre-RFC 7468 "X509 CERTIFICATE") block, in order.
    static func certificateBlocks(_ text: String) throws -> [Data] {
        var bytes = Array(text.utf8)
        if bytes.isEmpty { return [] }
        guard bytes.count <= Int(Int32.max) else { throw CertificateError(.malformedPEM, "the text is too long") }
        ERR_clear_error()
        return try bytes.withUnsafeMutableBytes { raw -> [Data] in
            // BIO_new_mem_buf: a read-only BIO over the buffer, which must outlive it (it does: this closure).
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                throw CertificateError(.malformedPEM, "cannot read the text", openSSLErrors: X509OpenSSLErrors.drain())
            }
            defer { BIO_free(bio) }
            var blocks: [Data] = []
            while true {
                var name: UnsafeMutablePointer<CChar>?
                var header: UnsafeMutablePointer<CChar>?
                var data: UnsafeMutablePointer<UInt8>?
                var length = 0
                // PEM_read_bio: allocates name, header and data (freed with OPENSSL_free); 0 at the end of the
                // text (PEM_R_NO_START_LINE) or on a malformed block.
                let found = PEM_read_bio(bio, &name, &header, &data, &length)
                defer {
                    if let name { copenssl_x509_free_buffer(name) }
                    if let header { copenssl_x509_free_buffer(header) }
                    if let data { copenssl_x509_free_buffer(data) }
                }
                guard found == 1, let name else {
                    let code = ERR_peek_last_error()
                    if copenssl_x509_error_reason(code) == PEM_R_NO_START_LINE {
                        ERR_clear_error()
                        return blocks
                    }
                    throw CertificateError(
                        .malformedPEM, "a PEM block is malformed", openSSLErrors: X509OpenSSLErrors.drain())
                }
                let label = String(cString: name)
                guard label == "CERTIFICATE" || label == "X509 CERTIFICATE" else { continue }
                if let header, header.pointee != 0 {
                    throw CertificateError(.malformedPEM, "a CERTIFICATE block has headers")
                }
                blocks.append(data.map { Data(bytes: $0, count: length) } ?? Data())
            }
        }
    }
}
