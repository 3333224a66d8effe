internal import COpenSSL
internal import COpenSSLShims
public import Foundation

/// A PKCS#10 certificate signing request (RFC 2986): a subject, its public key, optional subject alternative
/// names and challenge password, signed with the matching private key, which never leaves the caller.
public struct CertificateSigningRequest: Sendable, Hashable {
    /// One attribute of the subject: its type as OpenSSL names it (`CN`, `O`, `OU`, `C`, `emailAddress`, ...) or a
    /// dotted OID, and its value (UTF-8).
    public struct NameAttribute: Hashable, Sendable {
        public let type: String
        public let value: String
        public init(_ type: String, _ value: String) {
            self.type = type
            self.value = value
        }
    }

    /// A subject alternative name to request.
    public struct AlternativeName: Hashable, Sendable, CustomStringConvertible {
        let kind: Certificate.GeneralName.Kind
        let value: String
        /// A DNS name (an IA5 string: ASCII; IDNs as A-labels).
        public static func dns(_ name: String) -> AlternativeName { AlternativeName(kind: .dns, value: name) }
        /// An IPv4 or IPv6 address in text form.
        public static func ipAddress(_ address: String) -> AlternativeName {
            AlternativeName(kind: .ipAddress, value: address)
        }
        /// An RFC 822 e-mail address.
        public static func email(_ address: String) -> AlternativeName { AlternativeName(kind: .email, value: address) }
        /// A URI (`sip:example.com`, `https://...`).
        public static func uri(_ uri: String) -> AlternativeName { AlternativeName(kind: .uri, value: uri) }
        public var description: String { "\(kind):\(value)" }
    }

    /// The request's DER.
    public let derEncoded: Data

    /// The request as one PEM `CERTIFICATE REQUEST` block.
    public var pemEncoded: String { PEM.encode(derEncoded, label: "CERTIFICATE REQUEST") }

    /// Builds and signs a request.
    /// - Parameters:
    ///   - subject: the subject's attributes, most significant first (`[("C","DE"), ("O","Example"),
    ///     ("CN","host.example.com")]`); may be empty when `alternativeNames` is not.
    ///   - alternativeNames: a subjectAltName extension request, when not empty.
    ///   - challengePassword: the PKCS#9 challengePassword attribute (SCEP's enrollment secret), when given.
    ///   - privateKey: the key whose public half the request carries and which signs it (RSA: PKCS#1 v1.5;
    ///     EC: ECDSA), with `digest`.
    ///   - digest: the signature's digest (SHA-256 unless said otherwise; SHA-1 is refused as too weak).
    /// - Throws: ``CertificateError`` `.invalidName` (an attribute or alternative name that does not encode, or
    ///   neither a subject nor an alternative name), `.signingFailed` (a public key, or a refused signature).
    public init(
        subject: [NameAttribute], alternativeNames: [AlternativeName] = [], challengePassword: String? = nil,
        privateKey: AsymmetricKey, digest: KeyDigest = .sha256
    ) throws {
        guard privateKey.isPrivate else { throw CertificateError(.signingFailed, "a public key cannot sign a request") }
        guard digest != .sha1 else { throw CertificateError(.signingFailed, "SHA-1 request signatures are refused") }
        guard !subject.isEmpty || !alternativeNames.isEmpty else {
            throw CertificateError(.invalidName, "a request needs a subject or a subject alternative name")
        }
        ERR_clear_error()
        guard let request = X509_REQ_new() else {
            throw CertificateError(.signingFailed, "X509_REQ_new", openSSLErrors: X509OpenSSLErrors.drain())
        }
        defer { X509_REQ_free(request) }
        // RFC 2986: version 0 (v1).
        X509_REQ_set_version(request, 0)
        // X509_REQ_get_subject_name returns the request's own name, changed in place.
        let name = X509_REQ_get_subject_name(request)
        for attribute in subject {
            guard !attribute.value.isEmpty,
                X509_NAME_add_entry_by_txt(name, attribute.type, MBSTRING_UTF8, attribute.value, -1, -1, 0) == 1
            else {
                throw CertificateError(
                    .invalidName, "the subject attribute \(attribute.type) does not encode",
                    openSSLErrors: X509OpenSSLErrors.drain())
            }
        }
        if !alternativeNames.isEmpty { try Self.add(alternativeNames, to: request) }
        if let challengePassword {
            guard !challengePassword.isEmpty,
                X509_REQ_add1_attr_by_NID(
                    request, NID_pkcs9_challengePassword, MBSTRING_UTF8, challengePassword, -1) == 1
            else {
                // The password itself is never part of an error.
                throw CertificateError(
                    .invalidName, "the challenge password does not encode", openSSLErrors: X509OpenSSLErrors.drain())
            }
        }
        let signed = privateKey.withUnsafePKEY { pkey in
            // X509_REQ_set_pubkey copies the public part; X509_REQ_sign signs with the key's own scheme.
            X509_REQ_set_pubkey(request, pkey) == 1 && X509_REQ_sign(request, pkey, digest.md) > 0
        }
        guard signed else {
            throw CertificateError(.signingFailed, "the key did not sign the request", openSSLErrors: X509OpenSSLErrors.drain())
        }
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_X509_REQ(request, &der)
        guard count > 0, let der else {
            throw CertificateError(.signingFailed, "the request does not encode", openSSLErrors: X509OpenSSLErrors.drain())
        }
        defer { copenssl_x509_free_buffer(der) }
        derEncoded = Data(bytes: der, count: Int(count))
    }

    private static func add(_ names: [AlternativeName], to request: OpaquePointer) throws {
        guard let stack = copenssl_x509_general_names_new() else {
            throw CertificateError(.signingFailed, "GENERAL_NAMES", openSSLErrors: X509OpenSSLErrors.drain())
        }
        defer { copenssl_x509_general_names_free(stack) }
        for name in names {
            let type: Int32 =
                switch name.kind {
                case .dns: GEN_DNS
                case .email: GEN_EMAIL
                case .uri: GEN_URI
                default: GEN_IPADD
                }
            // IA5String is ASCII; an empty name means nothing.
            guard !name.value.isEmpty, name.kind == .ipAddress || name.value.utf8.allSatisfy({ $0 < 0x80 }),
                copenssl_x509_general_names_append(stack, type, name.value, Int32(name.value.utf8.count)) == 1
            else {
                throw CertificateError(.invalidName, "the alternative name \(name) does not encode")
            }
        }
        guard copenssl_x509_req_add_subject_alt_names(request, stack) == 1 else {
            throw CertificateError(
                .signingFailed, "the subjectAltName extension", openSSLErrors: X509OpenSSLErrors.drain())
        }
    }
}

extension CertificateSigningRequest.NameAttribute {
    /// Reads OpenSSL's one-line form, `/C=DE/O=Example/CN=host.example.com` (a `\` escapes the next character),
    /// as `openssl req -subj` does.
    /// - Throws: ``CertificateError`` `.invalidName` for text that is not that form.
    public static func parse(openSSLSubject text: String) throws -> [CertificateSigningRequest.NameAttribute] {
        guard text.first == "/" else { throw CertificateError(.invalidName, "a subject starts with /") }
        var parts: [String] = []
        var current = ""
        var escaped = false
        for character in text.dropFirst() {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "/" {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        guard !escaped else { throw CertificateError(.invalidName, "the subject ends with a lone \\") }
        parts.append(current)
        return try parts.map { part in
            guard let equals = part.firstIndex(of: "="), equals != part.startIndex else {
                throw CertificateError(.invalidName, "\"\(part)\" is not TYPE=value")
            }
            return .init(String(part[..<equals]), String(part[part.index(after: equals)...]))
        }
    }
}
