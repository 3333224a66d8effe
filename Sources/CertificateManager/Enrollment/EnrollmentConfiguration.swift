public import Certificates
public import HardwareKeys
public import Foundation
public import NetworkFetch
public import SecurityBase

/// Where and how ``CertificateManager/enroll(configuration:credentials:)`` obtains a client identity by SCEP
/// (RFC 8894).
public struct EnrollmentConfiguration: Sendable {
    /// The SCEP endpoint, `http://ca.example.com/scep` (the operations go in its query). HTTPS is not offered: SCEP
    /// protects its messages itself (signed and encrypted PKCS#7); pin the CA with ``caFingerprint``.
    public var url: String
    /// The RSA modulus size of the generated key: 2048 (default), 3072 or 4096. SCEP returns the certificate
    /// encrypted to the requester by PKCS#7 key transport, which needs an RSA key.
    public var keySize: Int
    /// Where the key is made (default ``EnrollmentKeyLocation/keychain``).
    public var keyLocation: EnrollmentKeyLocation
    /// GetCACert's `message`: the CA's name where one server hosts several (nil: none sent).
    public var caIdentifier: String?
    /// The SHA-256 fingerprint of the CA certificate, obtained out of band (RFC 8894 §2.2): when set, a server
    /// whose CA certificate does not match is refused before anything is sent to it. Nil trusts the first answer.
    public var caFingerprint: Data?
    /// The SHA-256 fingerprint of an RA certificate to accept whatever its extensions say (nil: none). Without it an
    /// RA certificate GetCACert carries is used only when the CA issued it for the role: the RA extended key usage
    /// (id-kp-cmcRA), or no extended key usage and the key usage of the role (keyEncipherment to receive requests,
    /// digitalSignature to sign answers). Requests go to the CA otherwise.
    public var raFingerprint: Data?
    /// How long one HTTP exchange (connection and whole answer) may take.
    public var timeout: Duration
    /// How long to wait before each poll of a request the CA answered PENDING.
    public var pollingInterval: Duration
    /// How many times a PENDING request is polled (CertPoll) before giving up with `.enrollmentPending`.
    public var maximumPollAttempts: Int
    /// Waits between polls; tests inject one that returns at once. Throwing (a cancellation) ends the enrollment.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// Where the HTTP exchanges go (default ``SocketFetcher/shared``).
    public var network: any NetworkFetching = SocketFetcher.shared

    /// - Parameters:
    ///   - url: the SCEP endpoint (`http://…`).
    ///   - keySize: the RSA key size (2048, 3072 or 4096).
    ///   - keyLocation: where the key is made: in this process and kept in the keychain, in the TPM, or on a PKCS#11
    ///     token.
    ///   - caIdentifier: GetCACert's message, if the server wants one.
    ///   - caFingerprint: the CA certificate's SHA-256 fingerprint, to pin it.
    ///   - raFingerprint: an RA certificate's SHA-256 fingerprint, to accept it as the RA.
    ///   - timeout: per HTTP exchange (default 30 s).
    ///   - pollingInterval: between polls of a pending request (default 60 s).
    ///   - maximumPollAttempts: polls before giving up (default 10).
    ///   - sleep: the wait between polls (default `Task.sleep`).
    public init(
        url: String, keySize: Int = 2048, keyLocation: EnrollmentKeyLocation = .keychain, caIdentifier: String? = nil, caFingerprint: Data? = nil, raFingerprint: Data? = nil,
        timeout: Duration = .seconds(30), pollingInterval: Duration = .seconds(60), maximumPollAttempts: Int = 10,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.url = url
        self.keySize = keySize
        self.keyLocation = keyLocation
        self.caIdentifier = caIdentifier
        self.caFingerprint = caFingerprint
        self.raFingerprint = raFingerprint
        self.timeout = timeout
        self.pollingInterval = pollingInterval
        self.maximumPollAttempts = maximumPollAttempts
        self.sleep = sleep
    }
}

/// Where an enrollment makes its key pair.
public enum EnrollmentKeyLocation: Sendable {
    /// In this process; the private key is kept in the keychain with the identity.
    case keychain
    /// In the TPM (``TrustedPlatformModule/shared``, where the keychain's TPM keys are used): the private key never
    /// leaves it. The certificate request and SCEP's messages are signed there and the CA's answer decrypted there;
    /// the keychain keeps the TPM's wrapped blob with the identity. Most TPMs make RSA-2048 keys only.
    case tpm
    /// On a PKCS#11 token (a smart card, an HSM), logged in with `pin`: the private key never leaves it. The request
    /// and SCEP's messages are signed there and the CA's answer decrypted there; the issued certificate is written
    /// onto the token beside the key (the token then holds the identity, as a card enrolled by its issuer does), and
    /// the keychain keeps the certificate, its chain and which token and key hold the identity. Using the identity
    /// later needs the PIN again (``CertificateManager/init(keychain:configuration:expiryWarningWindow:clock:network:systemAnchors:tokenPIN:)``).
    case token(PKCS11Token, pin: SecretBytes)
}

/// What the application is asked for: the certificate's common name and the CA's challenge password.
public struct EnrollmentCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The requested certificate's subject common name.
    public var commonName: String
    /// The enrollment secret the CA gave out (PKCS#9 challengePassword), nil when the CA needs none. Never
    /// printed, logged or put in an error.
    public var challengePassword: String?

    public init(commonName: String, challengePassword: String?) {
        self.commonName = commonName
        self.challengePassword = challengePassword
    }

    public var description: String {
        let password = challengePassword == nil ? "none" : "<redacted>"
        return "EnrollmentCredentials(commonName: \(commonName), challengePassword: \(password))"
    }
    public var debugDescription: String { description }
    /// `dump` and the debugger show the redacted description, not the password.
    public var customMirror: Mirror { Mirror(reflecting: description) }
}

/// What the application is told when asked for credentials: which server and which CA it is enrolling with.
public struct EnrollmentContext: Sendable {
    /// The SCEP endpoint.
    public let url: String
    /// The CA certificate the server presented (pinned when ``EnrollmentConfiguration/caFingerprint`` is set).
    public let certificateAuthority: CertificateInfo
}

/// Supplies the credentials of an enrollment, for example by asking the user. Called once per enrollment, after
/// the server's CA is known and before any key is generated.
public protocol EnrollmentCredentialProvider: Sendable {
    /// - Parameter context: the server and its CA.
    /// - Returns: the common name and challenge password to request the certificate with.
    /// - Throws: anything, to cancel the enrollment (it fails with `.enrollmentCredentialsUnavailable`).
    func credentials(for context: EnrollmentContext) async throws -> EnrollmentCredentials
}

/// A credential provider made of a closure.
public struct ClosureCredentialProvider: EnrollmentCredentialProvider {
    private let body: @Sendable (EnrollmentContext) async throws -> EnrollmentCredentials
    public init(_ body: @escaping @Sendable (EnrollmentContext) async throws -> EnrollmentCredentials) {
        self.body = body
    }
    public func credentials(for context: EnrollmentContext) async throws -> EnrollmentCredentials {
        try await body(context)
    }
}

/// What a successful enrollment produced (it is also stored as the manager's client identity).
public struct EnrollmentResult: Sendable {
    /// The issued certificate and the generated private key.
    public let identity: ClientIdentity
    /// The issued certificate first, then its CA certificates as the server gave them.
    public let certificateChain: [Certificate]
    /// How many times the request was polled before it was granted (0: granted at once).
    public let polls: Int
}
