public import SecurityBase
/// Why a certificate-manager call failed, naming the certificate (its subject summary) when one is at fault.
/// Equal by code; new codes never break callers. Never carries a password or key material.
public struct CertificateManagerError: CodedError {
    public typealias Code = ErrorCode<CertificateManagerError>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation
    /// The subject summary of the certificate at fault, when one is.
    public let certificateSubject: String?

    public init(_ code: Code, _ reason: String, certificateSubject: String? = nil, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
        self.certificateSubject = certificateSubject
    }

    public var description: String {
        certificateSubject.map { "CertificateManagerError.\(code): \"\($0)\": \(reason)" }
            ?? "CertificateManagerError.\(code): \(reason)"
    }
}

extension ErrorCode where Domain == CertificateManagerError {
    /// `setCertificates` was given no certificate.
    public static let emptyCertificateStore = Self(name: "emptyCertificateStore")
    /// A certificate given to the private trust store is not a CA.
    public static let notCertificateAuthority = Self(name: "notCertificateAuthority")
    /// The private trust store exists and cannot be changed until it is deleted.
    public static let certificateStoreImmutable = Self(name: "certificateStoreImmutable")
    /// A client identity is already provisioned; delete it first.
    public static let clientIdentityExists = Self(name: "clientIdentityExists")
    /// The private key is not the certificate's, or is not a private key.
    public static let keyMismatch = Self(name: "keyMismatch")
    /// The PKCS#12 password is wrong.
    public static let wrongPassword = Self(name: "wrongPassword")
    /// The PKCS#12 data is malformed or holds no identity.
    public static let malformedPKCS12 = Self(name: "malformedPKCS12")
    /// `validate` was given both an expected service domain and an expected hostname, or no certificate.
    public static let invalidValidationRequest = Self(name: "invalidValidationRequest")
    /// The chain does not lead to a trusted anchor, or a certificate of it fails (dates, usages, signature).
    public static let untrusted = Self(name: "untrusted")
    /// A certificate of the chain is revoked.
    public static let revoked = Self(name: "revoked")
    /// Revocation is mandatory and no answer could be had.
    public static let revocationUnavailable = Self(name: "revocationUnavailable")
    /// The leaf does not match the expected hostname.
    public static let hostnameMismatch = Self(name: "hostnameMismatch")
    /// The leaf does not speak for the expected SIP service domain.
    public static let serviceDomainMismatch = Self(name: "serviceDomainMismatch")
    /// The keychain failed (the underlying error's description is in the reason).
    public static let keychain = Self(name: "keychain")
    /// The client identity's key is on a PKCS#11 token that is not present (removed, or its module not installed).
    public static let identityTokenUnavailable = Self(name: "identityTokenUnavailable")
    // Enrollment (SCEP, RFC 8894). Whatever the failure, no key and no identity is left behind.
    /// The enrollment configuration or the credentials cannot be used (URL, key size, empty common name).
    public static let invalidEnrollmentRequest = Self(name: "invalidEnrollmentRequest")
    /// The key cannot be made where the configuration asks: no TPM, or the TPM refused (the key size, say); the
    /// token refused the PIN, the key or the issued certificate.
    public static let enrollmentKeyUnavailable = Self(name: "enrollmentKeyUnavailable")
    /// The application's credential provider threw instead of giving credentials.
    public static let enrollmentCredentialsUnavailable = Self(name: "enrollmentCredentialsUnavailable")
    /// The SCEP server cannot be reached: the name does not resolve, the connection is refused or reset, or no
    /// answer came within the timeout.
    public static let enrollmentServerUnreachable = Self(name: "enrollmentServerUnreachable")
    /// The SCEP server answered with an HTTP error status (the status is in the reason).
    public static let enrollmentServerError = Self(name: "enrollmentServerError")
    /// The CA refused the request with failInfo badRequest. With a challenge password this is what a wrong
    /// one gets; a CA whose policy refuses the request (scepserver's CSR verifier) answers the same way.
    public static let enrollmentBadRequest = Self(name: "enrollmentBadRequest")
    /// The CA refused the request (pkiStatus FAILURE) for another reason: badAlg, badMessageCheck, badTime,
    /// badCertId or none given (named in the reason).
    public static let enrollmentRejected = Self(name: "enrollmentRejected")
    /// The CA still answered PENDING after the configured number of polls.
    public static let enrollmentPending = Self(name: "enrollmentPending")
    /// An answer of the SCEP server is not what RFC 8894 says it must be (not a CA certificate, not a
    /// CertRep, a transactionID or recipientNonce that is not ours, no certificate for our key).
    public static let enrollmentMalformedResponse = Self(name: "enrollmentMalformedResponse")
    /// The CertRep is not signed by the CA (or RA) certificate that GetCACert returned.
    public static let enrollmentBadSignature = Self(name: "enrollmentBadSignature")
    /// GetCACert returned a CA certificate whose SHA-256 fingerprint is not the configured one.
    public static let enrollmentUntrustedCA = Self(name: "enrollmentUntrustedCA")
}
