public import Certificates
public import Foundation
public import Keychain
import KeychainItems
public import NetworkFetch
public import SecurityBase
import Synchronization
public import Trust

/// What happened to the client identity.
public struct CertificateManagerEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened. New kinds never break callers (a struct, not an enum they switch over exhaustively).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        fileprivate let name: String
        /// An identity was stored.
        public static let provisioned = Kind(name: "provisioned")
        /// The identity was deleted.
        public static let removed = Kind(name: "removed")
        /// The identity's certificate expires within the warning window.
        public static let expiringSoon = Kind(name: "expiringSoon")
        /// The identity's certificate has expired.
        public static let expired = Kind(name: "expired")
        public var description: String { name }
    }

    public let kind: Kind
    /// The identity's certificate (nil for ``Kind/removed``).
    public let certificate: CertificateInfo?
    /// When the certificate expires (for ``Kind/expiringSoon``).
    public let expires: Date?

    /// An identity was stored; its certificate's information.
    public static func provisioned(_ certificate: CertificateInfo) -> Self {
        Self(kind: .provisioned, certificate: certificate, expires: nil)
    }
    /// The identity was deleted.
    public static let removed = Self(kind: .removed, certificate: nil, expires: nil)
    /// The identity's certificate expires within the warning window (at the date given).
    public static func expiringSoon(_ certificate: CertificateInfo, expires: Date) -> Self {
        Self(kind: .expiringSoon, certificate: certificate, expires: expires)
    }
    /// The identity's certificate has expired.
    public static func expired(_ certificate: CertificateInfo) -> Self {
        Self(kind: .expired, certificate: certificate, expires: nil)
    }

    public var description: String { "\(kind)\(certificate.map { " \($0.subjectSummary ?? "")" } ?? "")" }
}

/// A client identity: a certificate and its private key.
public struct ClientIdentity: Sendable {
    public let certificate: Certificate
    public let privateKey: AsymmetricKey

    /// - Parameters:
    ///   - certificate: the identity's certificate.
    ///   - privateKey: the private key of the certificate's public key.
    public init(certificate: Certificate, privateKey: AsymmetricKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }
}

/// One object an application configures once: which CAs it trusts (a private trust store in the keychain),
/// which client identity it presents, and how strictly peers are validated.
///
/// Everything is kept in the keychain under the manager's access group: the store's certificates are
/// certificate items labelled ``trustStoreLabel``; the identity is a certificate and private key labelled
/// ``clientIdentityLabel``, its chain a generic-password item of that service.
public final class CertificateManager: Sendable {
    /// The label that marks a certificate item as part of the private trust store.
    public static let trustStoreLabel = "SecurityServices.CertificateManager.trust-store"
    /// The label of the client identity's certificate and key, and the service of its chain item.
    public static let clientIdentityLabel = "SecurityServices.CertificateManager.client-identity"

    /// The keychain the manager keeps its items in.
    public let keychain: KeychainStore
    /// The access group the items go to (the keychain's first group).
    public let accessGroup: String
    /// The identity counts as expiring soon this long before its notAfter.
    public let expiryWarningWindow: TimeInterval
    /// The events about the client identity.
    public let events: AsyncStream<CertificateManagerEvent>

    let continuation: AsyncStream<CertificateManagerEvent>.Continuation
    let clock: @Sendable () -> Date
    /// Where validation's revocation fetches go (OCSP, CRLs).
    let network: any NetworkFetching
    /// The anchors validation uses when the private trust store is off or empty.
    let systemAnchors: [Certificate]
    /// The PIN a client identity held on a PKCS#11 token signs with (nil: its signatures fail, saying so).
    let tokenPIN: SecretBytes?
    private let state: Mutex<SecurityPolicyConfiguration>

    /// - Parameters:
    ///   - keychain: the keychain (its first access group is the application's).
    ///   - configuration: the validation policy (default strict).
    ///   - expiryWarningWindow: how long before expiry ``CertificateManagerEvent/expiringSoon(_:expires:)`` is
    ///     reported (default 30 days).
    ///   - clock: the current time (default the system clock); tests inject their own.
    ///   - network: where validation's revocation fetches go (default ``SocketFetcher/shared``).
    ///   - systemAnchors: the anchors validation uses when the private trust store is off or empty (default
    ///     ``SystemAnchors/all``, the distribution's bundle and the administrator's anchors).
    ///   - tokenPIN: the PIN of the token that holds the client identity's key, when an enrollment made it there
    ///     (``EnrollmentKeyLocation/token(_:pin:)``); without it the identity is found but cannot sign.
    public init(
        keychain: KeychainStore, configuration: SecurityPolicyConfiguration = SecurityPolicyConfiguration(),
        expiryWarningWindow: TimeInterval = 30 * 86_400, clock: @escaping @Sendable () -> Date = { Date() },
        network: any NetworkFetching = SocketFetcher.shared, systemAnchors: [Certificate] = SystemAnchors.all,
        tokenPIN: SecretBytes? = nil
    ) {
        self.keychain = keychain
        self.tokenPIN = tokenPIN
        self.network = network
        self.systemAnchors = systemAnchors
        // KeychainStore guarantees at least one non-empty access group.
        accessGroup = keychain.accessGroups[0]
        self.expiryWarningWindow = expiryWarningWindow
        self.clock = clock
        state = Mutex(configuration)
        (events, continuation) = AsyncStream.makeStream(of: CertificateManagerEvent.self)
    }

    deinit { continuation.finish() }

    /// The validation policy; changing it affects later validations.
    public var configuration: SecurityPolicyConfiguration {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
