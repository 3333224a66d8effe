internal import COpenSSL
package import Certificates
package import Foundation

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

/// A pkiMessage under construction: the requester's key, its transient self-signed certificate, the transaction.
struct SCEPRequester {
    let key: AsymmetricKey
    /// The transient certificate that signs the requester's messages and receives the CA's answer (RFC 8894 §2.3).
    let certificate: Certificate
    /// RFC 8894 §3.2.1.1 recommends a hash of the public key: SHA-256 of the SubjectPublicKeyInfo, in hex.
    let transactionID: String

    init(key: AsymmetricKey, commonName: String, algorithms: SCEPAlgorithms) throws {
        self.key = key
        guard let certificate = PKCS7Messages.selfSigned(key: key, commonName: commonName, digest: algorithms.digest, days: 7)
        else {
            throw CertificateManagerError(.invalidEnrollmentRequest, "the transient signing certificate cannot be made")
        }
        self.certificate = certificate
        transactionID = try SCEPRequester.hex(Self.sha256(certificate.subjectPublicKeyInfo))
    }

    /// A pkiMessage of `type` carrying `inner` (a CSR or IssuerAndSubject) encrypted for `recipient`, with a fresh
    /// `nonce`. `inner` holds the challenge password for a PKCSReq: the caller wipes it.
    func message(
        _ type: SCEPMessageType, inner: [UInt8], recipient: Certificate, nonce: [UInt8], algorithms: SCEPAlgorithms
    ) throws -> Data {
        guard let enveloped = PKCS7Messages.envelope(inner, for: recipient, cipher: algorithms.cipher) else {
            throw Self.failure("the request cannot be encrypted for the CA")
        }
        let attributes: [(SCEPAttribute, [UInt8])] = [
            (.messageType, Array(String(type.rawValue).utf8)), (.transactionID, Array(transactionID.utf8)), (.senderNonce, nonce),
        ]
        guard let signed = PKCS7Messages.signed(enveloped, by: certificate, key: key, digest: algorithms.digest, attributes: attributes)
        else { throw Self.failure("the request cannot be signed") }
        return Data(signed)
    }

    /// SCEP's IssuerAndSubject (RFC 8894 §3.3.3) for CertPoll: the CA's name and the requested subject.
    func issuerAndSubject(issuer: Certificate) -> [UInt8] {
        DERWriter.sequence(Array(issuer.subject.derEncoded) + Array(certificate.subject.derEncoded))
    }

    /// Decrypts a SUCCESS CertRep's content with the requester's key: the certificates of its certs-only SignedData.
    func certificates(inEnvelope content: [UInt8]) throws -> [Certificate] {
        // Some CAs encrypt the CertRep with single DES whatever the request used (scepserver 2.1.0 does): the
        // certificate inside is public, so it is read, which needs OpenSSL's legacy provider.
        _ = PKCS12.providers
        guard let plain = PKCS7Messages.decrypt(content, key: key, certificate: certificate),
            let certificates = plain.withUnsafeBytes({ PKCS7Messages.certificatesOnly(Array($0)) })
        else {
            throw CertificateManagerError(
                .enrollmentMalformedResponse, "the CertRep's content does not decrypt to certificates for our key")
        }
        return certificates
    }

    // MARK: OpenSSL plumbing

    private static func failure(_ reason: String) -> CertificateManagerError {
        CertificateManagerError(.invalidEnrollmentRequest, reason)
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
package struct SCEPReply {
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
    package init(_ der: Data, signers: [Certificate], transactionID expected: String, nonce: [UInt8]) throws {
        let verified: PKCS7Messages.Verified
        switch PKCS7Messages.open([UInt8](der), signers: signers) {
        case .verified(let message): verified = message
        case .badSignature:
            throw CertificateManagerError(
                .enrollmentBadSignature, "the CertRep is not signed by the CA or RA certificate GetCACert returned")
        case .malformed:
            throw CertificateManagerError(.enrollmentMalformedResponse, "the answer is not a PKCS#7 signed CertRep")
        }
        let attributes = verified.attributes
        func text(_ attribute: SCEPAttribute) -> String? {
            attributes[attribute].map { String(decoding: $0, as: UTF8.self) }
        }
        messageType = Self.number(attributes[.messageType])
        transactionID = text(.transactionID) ?? ""
        recipientNonce = attributes[.recipientNonce] ?? []
        failInfoText = attributes[.failInfoText].flatMap { $0.isEmpty ? nil : String(decoding: $0.prefix(160), as: UTF8.self) }
        content = verified.content
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
        let pkiStatus = Self.number(attributes[.pkiStatus])
        guard let status = SCEPStatus(rawValue: pkiStatus) else {
            throw CertificateManagerError(
                .enrollmentMalformedResponse, "the CertRep's pkiStatus is missing or unknown (\(pkiStatus))")
        }
        self.status = status
        failInfo = SCEPFailInfo(rawValue: Self.number(attributes[.failInfo]))
    }

    /// A PrintableString attribute holding a small decimal number (messageType, pkiStatus, failInfo): -1 when
    /// absent, -2 when present but not one to four digits.
    static func number(_ bytes: [UInt8]?) -> Int {
        guard let bytes else { return -1 }
        guard (1...4).contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return -2 }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }
}

/// GetCACert's answer (RFC 8894 §4.2): one DER certificate (`application/x-x509-ca-cert`), or a certs-only
/// SignedData with the CA and its RA certificates (`application/x-x509-ca-ra-cert`).
package struct SCEPCertificateAuthority {
    /// The issuing CA (the one certificate, else the CA that issued the RA).
    let certificate: Certificate
    /// Where requests are encrypted to: the RA's encryption certificate, else the CA.
    let recipient: Certificate
    /// The certificates a CertRep may be signed with: the CA, and the RA certificates it issued for signing
    /// (never another certificate GetCACert carried: a man in the middle could append his own CA, or an end-entity
    /// certificate the CA once issued him).
    let signers: [Certificate]
    /// The CA certificates above the issued one, for the stored chain.
    let chain: [Certificate]

    /// Whether `certificate` carries the issuing CA's signature (the one check an issued certificate must pass: the
    /// CA is pinned or was accepted at GetCACert, and nothing else may stand in for it).
    func issued(_ certificate: Certificate) -> Bool {
        PKCS7Messages.isIssued(certificate, by: self.certificate)
    }

    /// id-kp-cmcRA (RFC 6402 2.10): the extended key usage of a registration authority.
    static let registrationAuthorityUsage = "1.3.6.1.5.5.7.3.28"

    /// Whether `certificate`, issued by the CA, may act as its RA for `usage` (keyEncipherment: receive requests;
    /// digitalSignature: sign answers): pinned by the configuration, else issued for the role — the RA extended key
    /// usage, or no extended key usage (any other names another role: a TLS client's certificate is no RA) with a key
    /// usage extension allowing `usage`.
    static func serves(_ certificate: Certificate, as usage: Certificate.KeyUsage, pinned: Data?) -> Bool {
        if let pinned, certificate.sha256Fingerprint == pinned { return true }
        if let usages = certificate.extendedKeyUsage {
            return usages.contains(registrationAuthorityUsage) && certificate.keyUsage?.contains(usage) != false
        }
        return certificate.keyUsage?.contains(usage) == true
    }

    /// - Throws: ``CertificateManagerError`` `.enrollmentMalformedResponse`, `.enrollmentUntrustedCA`.
    package init(_ der: Data, fingerprint: Data?, raFingerprint: Data? = nil) throws {
        let all: [Certificate]
        if let single = try? Certificate(derEncoded: der) {
            all = [single]  // the CA itself, whatever its extensions say
        } else {
            guard let certificates = PKCS7Messages.certificatesOnly([UInt8](der)) else {
                throw CertificateManagerError(
                    .enrollmentMalformedResponse,
                    "GetCACert answered neither a certificate nor a PKCS#7 of certificates")
            }
            all = certificates
        }
        let authorities = all.count == 1 ? all : all.filter(\.isCertificateAuthority)
        let others = all.count == 1 ? [] : all.filter { !$0.isCertificateAuthority }
        // The issuing CA: the pinned one; else the one that issued an RA certificate; else the one that issued none
        // of the other CAs (else the first).
        let pinned = fingerprint.flatMap { fingerprint in authorities.first { $0.sha256Fingerprint == fingerprint } }
        let issuingRA = others.lazy.compactMap { ra in authorities.first { $0.subject == ra.issuer } }.first
        let top = authorities.first { ca in !authorities.contains { $0 != ca && $0.issuer == ca.subject } }
        guard let ca = pinned ?? issuingRA ?? top ?? authorities.first else {
            throw CertificateManagerError(.enrollmentMalformedResponse, "GetCACert returned no CA certificate")
        }
        certificate = ca
        if let fingerprint, certificate.sha256Fingerprint != fingerprint {
            throw CertificateManagerError(
                .enrollmentUntrustedCA, "the CA certificate's SHA-256 fingerprint is not the configured one",
                certificateSubject: certificate.subjectSummary)
        }
        // An RA answers for the CA that issued it for the role; requests are encrypted to its key-encipherment
        // certificate, else to the CA.
        let registrationAuthorities = others.filter { PKCS7Messages.isIssued($0, by: ca) }
        recipient = registrationAuthorities.first { Self.serves($0, as: .keyEncipherment, pinned: raFingerprint) } ?? ca
        signers = [ca] + registrationAuthorities.filter { Self.serves($0, as: .digitalSignature, pinned: raFingerprint) }
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
