internal import COpenSSL
public import Foundation

/// An X.509 certificate, read from exactly one DER certificate (or one PEM CERTIFICATE block) and owning the
/// OpenSSL `X509` parsed from it. Every field is read once, when the certificate is made.
public final class Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked: `x509` is only freed in deinit and every other property is an immutable value read at init.
    private let x509: OpaquePointer
    private let fields: Fields

    /// Reads exactly one DER certificate.
    /// - Parameter derEncoded: the certificate's DER and nothing else.
    /// - Throws: ``CertificateError`` `.malformedDER` (empty, truncated, PEM text, garbage, not a certificate)
    ///   or `.trailingData` (bytes after the certificate, such as a second certificate).
    public init(derEncoded: some DataProtocol) throws {
        let der = Data(derEncoded)
        ERR_clear_error()
        guard !der.isEmpty else { throw CertificateError(.malformedDER, "no bytes") }
        let parsed: (OpaquePointer?, Int) = der.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return (nil, 0) }
            var cursor: UnsafePointer<UInt8>? = UnsafePointer(base)
            // d2i_X509: "*ppin is incremented to the byte following the parsed data"; NULL on error.
            let x509 = d2i_X509(nil, &cursor, raw.count)
            return (x509, cursor.map { $0 - UnsafePointer(base) } ?? 0)
        }
        guard let x509 = parsed.0 else {
            throw CertificateError(
                .malformedDER, "the bytes are not a DER certificate", openSSLErrors: X509OpenSSLErrors.drain())
        }
        guard parsed.1 == der.count else {
            X509_free(x509)
            throw CertificateError(.trailingData, "\(der.count - parsed.1) bytes follow the certificate")
        }
        fields = try Self.fields(adopting: x509, der: der)
        self.x509 = x509
    }

    /// The fields of an `X509` this certificate is about to own; the `X509` is freed when they cannot be read.
    private static func fields(adopting x509: OpaquePointer, der: Data) throws -> Fields {
        do {
            return try Fields(x509, der: der)
        } catch {
            X509_free(x509)
            throw error
        }
    }

    /// Takes a reference to an `X509` OpenSSL has already parsed (a TLS peer's chain, from libssl), so that it is
    /// not encoded and parsed again: OpenSSL 3.0's `d2i_X509` costs ~77 µs for a P-256 certificate (its public key
    /// goes through the provider decoders), the most expensive step of a loopback handshake's chain handling.
    /// - Throws: ``CertificateError`` as ``init(derEncoded:)`` for a certificate whose fields cannot be read.
    package init(retaining x509: OpaquePointer) throws {
        guard X509_up_ref(x509) == 1 else { throw CertificateError(.malformedDER, "the certificate cannot be referenced") }
        guard let der = X509DER.encode({ i2d_X509(x509, $0) }) else {
            X509_free(x509)
            throw CertificateError(.malformedDER, "the certificate does not encode")
        }
        fields = try Self.fields(adopting: x509, der: der)
        self.x509 = x509
    }

    /// Reads the one CERTIFICATE block of a PEM text (text around it is ignored, as OpenSSL does).
    /// - Parameter pemEncoded: PEM text with exactly one `-----BEGIN CERTIFICATE-----` block.
    /// - Throws: ``CertificateError`` `.malformedPEM` (no block, several, headers, bad base64), or the errors of
    ///   ``init(derEncoded:)`` for the block's contents.
    public convenience init(pemEncoded: String) throws {
        let blocks = try X509PEM.certificateBlocks(pemEncoded)
        guard blocks.count == 1 else {
            throw CertificateError(.malformedPEM, "\(blocks.count) CERTIFICATE blocks, expected exactly one")
        }
        try self.init(derEncoded: blocks[0])
    }

    /// Reads every CERTIFICATE block of a PEM text (a chain or a bundle), in order; other blocks are skipped.
    /// - Throws: ``CertificateError`` when a block is malformed or a CERTIFICATE block is not one certificate.
    public static func certificates(pemEncoded: String) throws -> [Certificate] {
        try X509PEM.certificateBlocks(pemEncoded).map { try Certificate(derEncoded: $0) }
    }

    deinit { X509_free(x509) }

    /// Lends the certificate's OpenSSL `X509` to `body` (for the Trust module, which hands it to
    /// `X509_verify_cert`). The pointer is valid only inside `body`; the caller must not free it, change it, or
    /// keep it, and an OpenSSL call that keeps it (a store, a stack) must take its own reference or end before
    /// `body` returns.
    package func withUnsafeX509<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(x509) }
    }

    // MARK: Fields

    /// The certificate's DER, exactly as given.
    public var derEncoded: Data { fields.der }
    /// The X.509 version (1, 2 or 3).
    public var version: Int { fields.version }
    public var subject: DistinguishedName { fields.subject }
    public var issuer: DistinguishedName { fields.issuer }
    /// The serial number's INTEGER content bytes (two's complement, as `SecCertificateCopySerialNumberData`).
    public var serialNumber: Data { fields.serialNumber }
    /// The start of the validity period; `Date.distantFuture` when OpenSSL parses the time but cannot read it
    /// (fail-safe: such a certificate is never valid).
    public var notValidBefore: Date { fields.notValidBefore }
    /// The end of the validity period; `Date.distantPast` when OpenSSL parses the time but cannot read it.
    public var notValidAfter: Date { fields.notValidAfter }
    /// The subject key identifier extension's key identifier, nil when absent.
    public var subjectKeyIdentifier: Data? { fields.subjectKeyIdentifier }
    /// The authority key identifier extension's key identifier, nil when absent.
    public var authorityKeyIdentifier: Data? { fields.authorityKeyIdentifier }
    /// The SubjectPublicKeyInfo's DER (what `SecCertificateCopyKey` makes a key from).
    public var subjectPublicKeyInfo: Data { fields.subjectPublicKeyInfo }
    /// Apple's `kSecAttrPublicKeyHash`: SHA-1 of the subjectPublicKey BIT STRING's contents (the key itself).
    public var publicKeyHash: Data { fields.publicKeyHash }
    /// The public key algorithm as a dotted OID ("1.2.840.113549.1.1.1" for RSA, "1.2.840.10045.2.1" for EC).
    public var publicKeyAlgorithm: String { fields.publicKeyAlgorithm }
    /// The public key's size in bits (the modulus for RSA, the field for EC), nil when OpenSSL cannot load it.
    public var publicKeySizeInBits: Int? { fields.publicKeySizeInBits }
    /// An EC public key's named curve as OpenSSL names it (`prime256v1`, `secp384r1`, `secp521r1`…); nil for
    /// another kind of key, explicit parameters or a key OpenSSL cannot load.
    public var publicKeyCurveName: String? { fields.publicKeyCurveName }
    /// The subject alternative names of the four kinds read (DNS, IP, e-mail, URI), in order.
    public var subjectAlternativeNames: [GeneralName] { fields.subjectAlternativeNames }
    /// Whether basic constraints say cA = TRUE.
    public var isCertificateAuthority: Bool { fields.isCertificateAuthority }
    /// Whether the subject and issuer names are the same (a root: what Apple's trust settings and allow-expired-root
    /// option call one), compared in their normalized form.
    public var isSelfIssued: Bool { normalizedSubject == normalizedIssuer }
    /// The subject's normalized encoding (``DistinguishedName/normalizedEncoded``), read without copying the name:
    /// path building compares it for every candidate issuer.
    public var normalizedSubject: Data { fields.subject.normalizedEncoded }
    /// The issuer's normalized encoding, read without copying the name.
    public var normalizedIssuer: Data { fields.issuer.normalizedEncoded }
    /// The basic constraints path length constraint, nil when absent.
    public var pathLengthConstraint: Int? { fields.pathLengthConstraint }
    /// The key usage extension, nil when absent.
    public var keyUsage: KeyUsage? { fields.keyUsage }
    /// The extended key usage purposes as dotted OIDs, nil when the extension is absent.
    public var extendedKeyUsage: [String]? { fields.extendedKeyUsage }
    /// SHA-1 of the DER (Apple's certificate digest, used by trust exceptions).
    public var sha1Fingerprint: Data { fields.sha1Fingerprint }
    public var sha256Fingerprint: Data { fields.sha256Fingerprint }

    /// Every common name of the subject, in order.
    public var commonNames: [String] { subject.commonNames }

    /// The e-mail addresses, as `SecCertificateCopyEmailAddresses`: the subject alternative name's rfc822Names,
    /// then the subject's emailAddress attributes.
    public var emailAddresses: [String] {
        subjectAlternativeNames.filter { $0.kind == .email }.map(\.value)
            + subject.values(of: X509ObjectIdentifiers.emailAddress)
    }

    /// Apple's `SecCertificateCopySubjectSummary`: the values of the most desired attribute type of the subject
    /// (common name, then organizational unit, then organization, then any other string), all of that type in
    /// reverse order joined by ", "; a common name with a description attribute becomes "CN (description)".
    /// Without any such attribute, the first e-mail address, else the first DNS name; nil when there is none.
    public var subjectSummary: String? {
        if let summary = subject.summary { return summary }
        if let email = emailAddresses.first { return email }
        return subjectAlternativeNames.first { $0.kind == .dns }?.value
    }

    /// Apple's `SecCertificateCopyIssuerSummary`: the issuer name's summary by the same rule (without the e-mail
    /// and DNS fallbacks, which belong to the subject).
    public var issuerSummary: String? { issuer.summary }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.derEncoded == rhs.derEncoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(derEncoded) }
    public var description: String { "<Certificate s: \(subjectSummary ?? "") i: \(issuerSummary ?? "")>" }
}

extension DistinguishedName {
    /// Apple's summary of a name (SecCertificate.c `obtainSummaryFromX501Name`): the values of the most desired
    /// attribute type present (common name, then organizational unit, then organization, then any other), all of
    /// that type in reverse order joined by ", "; with a description attribute, common names become
    /// "CN (description)". Nil for an empty name.
    public var summary: String? {
        // Apple's enum SummaryType, least to most desired.
        func rank(_ oid: String) -> Int {
            switch oid {
            case X509ObjectIdentifiers.commonName: 4
            case X509ObjectIdentifiers.organizationalUnitName: 3
            case X509ObjectIdentifiers.organizationName: 2
            default: 1
            }
        }
        var best = 0
        var summary: String?
        var description: String?
        for attribute in attributes {
            let type = rank(attribute.oid)
            if attribute.oid == X509ObjectIdentifiers.description {
                description = description.map { "\(attribute.value), \($0)" } ?? attribute.value
            }
            guard type >= best else { continue }
            summary = type == best ? "\(attribute.value), \(summary ?? "")" : attribute.value
            best = type
        }
        if let description, best == 4, let name = summary { return "\(name) (\(description))" }
        return summary
    }
}

extension Certificate {
    /// A subject (or issuer) alternative name.
    public struct GeneralName: Hashable, Sendable, CustomStringConvertible {
        /// The GeneralName choice; new kinds may be added.
        public struct Kind: Hashable, Sendable, CustomStringConvertible {
            fileprivate let name: String
            public static let dns = Kind(name: "DNS")
            public static let ipAddress = Kind(name: "IP")
            public static let email = Kind(name: "email")
            public static let uri = Kind(name: "URI")
            public var description: String { name }
        }

        public let kind: Kind
        /// The name as text: the IA5String for DNS, e-mail and URI; dotted IPv4, or IPv6 as eight hex groups.
        public let value: String
        /// The content bytes as encoded (the IA5String's bytes, or the 4 or 16 address octets).
        public let encoded: Data

        public var description: String { "\(kind):\(value)" }
    }

    /// The key usage extension's bits, with Apple's `SecKeyUsage` values.
    public struct KeyUsage: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
        public static let nonRepudiation = KeyUsage(rawValue: 1 << 1)
        public static let keyEncipherment = KeyUsage(rawValue: 1 << 2)
        public static let dataEncipherment = KeyUsage(rawValue: 1 << 3)
        public static let keyAgreement = KeyUsage(rawValue: 1 << 4)
        public static let keyCertSign = KeyUsage(rawValue: 1 << 5)
        public static let crlSign = KeyUsage(rawValue: 1 << 6)
        public static let encipherOnly = KeyUsage(rawValue: 1 << 7)
        public static let decipherOnly = KeyUsage(rawValue: 1 << 8)
    }

    /// Well-known extended key usage purposes (dotted OIDs).
    public enum ExtendedKeyUsage {
        public static let serverAuth = "1.3.6.1.5.5.7.3.1"
        public static let clientAuth = "1.3.6.1.5.5.7.3.2"
        public static let codeSigning = "1.3.6.1.5.5.7.3.3"
        public static let emailProtection = "1.3.6.1.5.5.7.3.4"
        public static let timeStamping = "1.3.6.1.5.5.7.3.8"
        public static let ocspSigning = "1.3.6.1.5.5.7.3.9"
        public static let any = "2.5.29.37.0"
    }
}
