internal import COpenSSL
internal import COpenSSLShims
import Certificates
import Foundation

/// SCEP's message types (RFC 8894 §3.2.1.2), as the PrintableString the messageType attribute carries.
enum SCEPMessageType: Int {
    case certRep = 3
    case pkcsReq = 19
    case certPoll = 20
}

/// A CertRep's pkiStatus (RFC 8894 §3.2.1.3).
enum SCEPStatus: Int {
    case success = 0
    case failure = 2
    case pending = 3
}

/// A CertRep's failInfo (RFC 8894 §3.2.1.4).
enum SCEPFailInfo: Int, CustomStringConvertible {
    case badAlg = 0
    case badMessageCheck = 1
    case badRequest = 2
    case badTime = 3
    case badCertId = 4

    var description: String {
        switch self {
        case .badAlg: "badAlg (unrecognized or unsupported algorithm)"
        case .badMessageCheck: "badMessageCheck (integrity check, meaning signature verification, failed)"
        case .badRequest: "badRequest (transaction not permitted or supported)"
        case .badTime: "badTime (the signingTime attribute was not sufficiently close to the system time)"
        case .badCertId: "badCertId (no certificate could be identified matching the provided criteria)"
        }
    }
}

/// The algorithms a pkiMessage is made with, chosen from the CA's capabilities.
struct SCEPAlgorithms {
    /// The signature digest: the strongest of SHA-512, SHA-256 the CA offers, else SHA-1 (RFC 8894's floor).
    let digest: OpaquePointer
    let digestName: String
    /// The content encryption: AES-128-CBC when offered (RFC 8894's "AES"), else 3DES (single DES is refused).
    let cipher: OpaquePointer
    let cipherName: String

    init(_ capabilities: Set<String>) {
        let standard = capabilities.contains("SCEPSTANDARD")  // implies AES, SHA-256 and POSTPKIOperation
        if capabilities.contains("SHA-512") {
            (digest, digestName) = (EVP_sha512(), "SHA-512")
        } else if standard || capabilities.contains("SHA-256") {
            (digest, digestName) = (EVP_sha256(), "SHA-256")
        } else {
            (digest, digestName) = (EVP_sha1(), "SHA-1")
        }
        if standard || capabilities.contains("AES") {
            (cipher, cipherName) = (EVP_aes_128_cbc(), "AES-128-CBC")
        } else {
            (cipher, cipherName) = (EVP_des_ede3_cbc(), "DES-EDE3-CBC")
        }
    }
}

/// One PKCS#7 structure (an EnvelopedData or a SignedData being built), owned and freed here.
final class PKCS7Message {
    private let pointer: UnsafeMutablePointer<PKCS7>

    /// Adopts `pointer` (a `PKCS7_new`/`PKCS7_encrypt` result), which this object frees; nil for nil.
    init?(takingOwnership pointer: UnsafeMutablePointer<PKCS7>?) {
        guard let pointer else { return nil }
        self.pointer = pointer
    }

    deinit { PKCS7_free(pointer) }

    /// The structure's DER.
    func derEncoded() throws -> [UInt8] {
        var der: UnsafeMutablePointer<UInt8>?
        let length = copenssl_scep_encode(pointer, &der)
        guard length > 0, let der else {
            throw CertificateManagerError(.invalidEnrollmentRequest, "a PKCS#7 message does not encode")
        }
        defer { copenssl_x509_free_buffer(der) }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }
}

/// A pkiMessage under construction: the requester's key, its transient self-signed certificate, the transaction.
struct SCEPRequester {
    let key: AsymmetricKey
    /// The transient certificate that signs the requester's messages and receives the CA's answer (RFC 8894 §2.3).
    let certificate: Certificate
    /// RFC 8894 §3.2.1.1 recommends a hash of the public key: SHA-256 of the SubjectPublicKeyInfo, in hex.
    let transactionID: String

    init(key: AsymmetricKey, commonName: String, algorithms: SCEPAlgorithms) throws {
        self.key = key
        let x509: OpaquePointer? = key.withUnsafePKEY {
            copenssl_scep_self_signed($0, commonName, algorithms.digest, 7)
        }
        guard let x509 else {
            throw CertificateManagerError(.invalidEnrollmentRequest, "the transient signing certificate cannot be made")
        }
        defer { X509_free(x509) }
        certificate = try Self.certificate(x509)
        transactionID = try SCEPRequester.hex(Self.sha256(certificate.subjectPublicKeyInfo))
    }

    /// A pkiMessage of `type` carrying `inner` (a CSR or IssuerAndSubject) encrypted for `recipient`, with a fresh
    /// `nonce`. `inner` holds the challenge password for a PKCSReq: the caller wipes it.
    func message(
        _ type: SCEPMessageType, inner: [UInt8], recipient: Certificate, nonce: [UInt8], algorithms: SCEPAlgorithms
    ) throws -> Data {
        let envelope: UnsafeMutablePointer<PKCS7>? = recipient.withUnsafeX509 { x509 in
            inner.withUnsafeBufferPointer {
                copenssl_scep_envelope(x509, algorithms.cipher, $0.baseAddress, Int32($0.count))
            }
        }
        guard let envelope = PKCS7Message(takingOwnership: envelope) else {
            throw Self.failure("the request cannot be encrypted for the CA")
        }
        let enveloped = try envelope.derEncoded()
        let signed: UnsafeMutablePointer<PKCS7>? = certificate.withUnsafeX509 { x509 in
            key.withUnsafePKEY { pkey in
                enveloped.withUnsafeBufferPointer { content in
                    nonce.withUnsafeBufferPointer { nonce in
                        copenssl_scep_sign(
                            x509, pkey, algorithms.digest, String(type.rawValue), transactionID, nonce.baseAddress,
                            Int32(nonce.count), nil, nil, nil, 0, content.baseAddress, Int32(content.count))
                    }
                }
            }
        }
        guard let signed = PKCS7Message(takingOwnership: signed) else {
            throw Self.failure("the request cannot be signed")
        }
        return Data(try signed.derEncoded())
    }

    /// SCEP's IssuerAndSubject (RFC 8894 §3.3.3) for CertPoll: the CA's name and the requested subject.
    func issuerAndSubject(issuer: Certificate) throws -> [UInt8] {
        let bytes: [UInt8]? = issuer.withUnsafeX509 { ca in
            certificate.withUnsafeX509 { own in
                var der: UnsafeMutablePointer<UInt8>?
                let length = copenssl_scep_issuer_and_subject(
                    X509_get_subject_name(ca), X509_get_subject_name(own), &der)
                guard length > 0, let der else { return nil }
                defer { copenssl_x509_free_buffer(der) }
                return Array(UnsafeBufferPointer(start: der, count: Int(length)))
            }
        }
        guard let bytes else { throw Self.failure("the poll's IssuerAndSubject cannot be encoded") }
        return bytes
    }

    /// Decrypts a SUCCESS CertRep's content with the requester's key: the certificates of its certs-only SignedData.
    func certificates(inEnvelope content: [UInt8]) throws -> [Certificate] {
        // Some CAs encrypt the CertRep with single DES whatever the request used (scepserver 2.1.0 does): the
        // certificate inside is public, so it is read, which needs OpenSSL's legacy provider.
        _ = PKCS12.providers
        let stack: OpaquePointer? = certificate.withUnsafeX509 { x509 in
            key.withUnsafePKEY { pkey in
                content.withUnsafeBufferPointer {
                    copenssl_scep_open_envelope($0.baseAddress, $0.count, pkey, x509)
                }
            }
        }
        guard let stack else {
            throw CertificateManagerError(
                .enrollmentMalformedResponse, "the CertRep's content does not decrypt to certificates for our key")
        }
        return try Self.certificates(stack)
    }

    // MARK: OpenSSL plumbing

    private static func failure(_ reason: String) -> CertificateManagerError {
        CertificateManagerError(.invalidEnrollmentRequest, reason)
    }

    static func certificate(_ x509: OpaquePointer) throws -> Certificate {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(x509, &der)
        guard length > 0, let der else {
            throw CertificateManagerError(.enrollmentMalformedResponse, "a certificate does not encode")
        }
        defer { copenssl_x509_free_buffer(der) }
        return try Certificate(derEncoded: UnsafeBufferPointer(start: der, count: Int(length)))
    }

    /// The certificates of an owned stack, which is freed.
    static func certificates(_ stack: OpaquePointer) throws -> [Certificate] {
        defer { copenssl_scep_certificates_free(stack) }
        return try (0..<copenssl_scep_certificates_count(stack)).map { index in
            guard let x509 = copenssl_scep_certificates_at(stack, index) else {
                throw CertificateManagerError(.enrollmentMalformedResponse, "a certificate is missing")
            }
            return try certificate(x509)
        }
    }

    static func sha256(_ data: Data) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let done = data.withUnsafeBytes { bytes in
            // EVP_Digest: one-shot digest; returns 1 on success.
            EVP_Digest(bytes.baseAddress, bytes.count, &digest, nil, EVP_sha256(), nil) == 1
        }
        guard done else { throw failure("SHA-256 failed") }
        return digest
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}

/// A CertRep (RFC 8894 §3.3.2) whose signature verified under the CA's certificates.
struct SCEPReply {
    let messageType: Int
    let status: SCEPStatus
    let failInfo: SCEPFailInfo?
    /// RFC 8894's failInfoText, when the CA gave one (at most 160 bytes of it).
    let failInfoText: String?
    let transactionID: String
    let recipientNonce: [UInt8]
    /// The signed content: the EnvelopedData of a SUCCESS.
    let content: [UInt8]

    /// Verifies and reads `der`, then checks it answers the message sent (type, transaction, nonce).
    /// - Throws: ``CertificateManagerError`` `.enrollmentBadSignature`, `.enrollmentMalformedResponse`.
    init(_ der: Data, signers: [Certificate], transactionID expected: String, nonce: [UInt8]) throws {
        var reply = copenssl_scep_reply()
        var content: UnsafeMutablePointer<UInt8>?
        var contentLength: Int32 = 0
        let bytes = [UInt8](der)
        let status = Self.withBorrowedStack(signers) { stack in
            bytes.withUnsafeBufferPointer {
                copenssl_scep_open_reply($0.baseAddress, $0.count, stack, &reply, &content, &contentLength)
            }
        }
        defer { if let content { copenssl_x509_free_buffer(content) } }
        switch Int(status) {
        case COPENSSL_SCEP_OK: break
        case COPENSSL_SCEP_BAD_SIGNATURE:
            throw CertificateManagerError(
                .enrollmentBadSignature, "the CertRep is not signed by the CA or RA certificate GetCACert returned")
        default:
            throw CertificateManagerError(.enrollmentMalformedResponse, "the answer is not a PKCS#7 signed CertRep")
        }
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        messageType = Int(reply.message_type)
        transactionID = text(reply.transaction_id)
        recipientNonce = withUnsafeBytes(of: reply.recipient_nonce) {
            Array($0.prefix(Int(reply.recipient_nonce_length)))
        }
        let infoText = text(reply.fail_info_text)
        failInfoText = infoText.isEmpty ? nil : infoText
        self.content = content.map { Array(UnsafeBufferPointer(start: $0, count: Int(contentLength))) } ?? []
        guard messageType == SCEPMessageType.certRep.rawValue else {
            throw CertificateManagerError(
                .enrollmentMalformedResponse, "the answer's messageType is \(messageType), not CertRep (3)")
        }
        guard transactionID == expected else {
            throw CertificateManagerError(.enrollmentMalformedResponse, "the CertRep's transactionID is not ours")
        }
        guard recipientNonce == nonce else {
            throw CertificateManagerError(
                .enrollmentMalformedResponse, "the CertRep's recipientNonce is not our senderNonce (a replay?)")
        }
        guard let status = SCEPStatus(rawValue: Int(reply.pki_status)) else {
            throw CertificateManagerError(
                .enrollmentMalformedResponse, "the CertRep's pkiStatus is missing or unknown (\(reply.pki_status))")
        }
        self.status = status
        failInfo = SCEPFailInfo(rawValue: Int(reply.fail_info))
    }

    static func withBorrowedStack<R>(_ certificates: [Certificate], _ body: (OpaquePointer?) -> R) -> R {
        // The stack borrows the certificates' X509s; they stay alive (the array holds them) until it is freed.
        let stack = copenssl_scep_borrowed_new()
        defer { copenssl_scep_borrowed_free(stack) }
        for certificate in certificates {
            certificate.withUnsafeX509 { _ = copenssl_scep_borrowed_push(stack, $0) }
        }
        return body(stack)
    }
}

/// GetCACert's answer (RFC 8894 §4.2): one DER certificate (`application/x-x509-ca-cert`), or a certs-only
/// SignedData with the CA and its RA certificates (`application/x-x509-ca-ra-cert`).
struct SCEPCertificateAuthority {
    /// The issuing CA (the one certificate, else the CA that issued the RA).
    let certificate: Certificate
    /// Where requests are encrypted to: the RA's encryption certificate, else the CA.
    let recipient: Certificate
    /// The certificates a CertRep may be signed with: the CA, and the RA certificates the CA verifiably issued
    /// (never another certificate GetCACert carried: a man in the middle could append his own CA).
    let signers: [Certificate]
    /// The CA certificates above the issued one, for the stored chain.
    let chain: [Certificate]

    /// - Throws: ``CertificateManagerError`` `.enrollmentMalformedResponse`, `.enrollmentUntrustedCA`.
    /// Whether `certificate` carries the issuing CA's signature (the one check an issued certificate must pass: the
    /// CA is pinned or was accepted at GetCACert, and nothing else may stand in for it).
    func issued(_ certificate: Certificate) -> Bool {
        certificate.withUnsafeX509 { issued in self.certificate.withUnsafeX509 { copenssl_scep_issued_by(issued, $0) } } == 1
    }

    init(_ der: Data, fingerprint: Data?) throws {
        let all: [Certificate]
        if let single = try? Certificate(derEncoded: der) {
            all = [single]  // the CA itself, whatever its extensions say
        } else {
            let stack: OpaquePointer? = der.withUnsafeBytes {
                copenssl_scep_certificates_only($0.bindMemory(to: UInt8.self).baseAddress, $0.count)
            }
            guard let stack else {
                throw CertificateManagerError(
                    .enrollmentMalformedResponse,
                    "GetCACert answered neither a certificate nor a PKCS#7 of certificates")
            }
            all = try SCEPRequester.certificates(stack)
        }
        let authorities = all.count == 1 ? all : all.filter(\.isCertificateAuthority)
        let others = all.count == 1 ? [] : all.filter { !$0.isCertificateAuthority }
        if others.isEmpty {
            // No RA: the issuing CA, the one that issued none of the others (else the first).
            let issuing = authorities.first { ca in !authorities.contains { $0 != ca && $0.issuer == ca.subject } }
            guard let ca = issuing ?? authorities.first
            else {
                throw CertificateManagerError(.enrollmentMalformedResponse, "GetCACert returned no CA certificate")
            }
            certificate = ca
            recipient = ca
        } else {
            // An RA answers for the CA that issued it; requests are encrypted to its key-encipherment certificate.
            let encrypting = others.first { $0.keyUsage?.contains(.keyEncipherment) ?? true } ?? others[0]
            guard let ca = authorities.first(where: { $0.subject == encrypting.issuer }) else {
                throw CertificateManagerError(
                    .enrollmentMalformedResponse, "GetCACert returned an RA certificate without the CA that issued it")
            }
            let issued = encrypting.withUnsafeX509 { ra in ca.withUnsafeX509 { copenssl_scep_issued_by(ra, $0) } }
            guard issued == 1 else {
                throw CertificateManagerError(
                    .enrollmentMalformedResponse, "GetCACert's RA certificate is not signed by its CA",
                    certificateSubject: encrypting.subjectSummary)
            }
            certificate = ca
            recipient = encrypting
        }
        if let fingerprint, certificate.sha256Fingerprint != fingerprint {
            throw CertificateManagerError(
                .enrollmentUntrustedCA, "the CA certificate's SHA-256 fingerprint is not the configured one",
                certificateSubject: certificate.subjectSummary)
        }
        let ca = certificate
        signers = [ca] + others.filter { ra in ra.withUnsafeX509 { ra in ca.withUnsafeX509 { copenssl_scep_issued_by(ra, $0) } } == 1 }
        // The issuing CA and the CAs above it, in issuer order.
        var chain = [certificate]
        while let last = chain.last, last.issuer != last.subject,
            let next = authorities.first(where: { $0.subject == last.issuer && !chain.contains($0) })
        {
            chain.append(next)
        }
        self.chain = chain
    }
}
