public import Certificates
public import Foundation
public import Keychain
import KeychainItems
public import NetworkFetch
import Synchronization

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

    private let continuation: AsyncStream<CertificateManagerEvent>.Continuation
    let clock: @Sendable () -> Date
    /// Where validation's revocation fetches go (OCSP, CRLs).
    let network: any NetworkFetching
    private let state: Mutex<SecurityPolicyConfiguration>

    /// - Parameters:
    ///   - keychain: the keychain (its first access group is the application's).
    ///   - configuration: the validation policy (default strict).
    ///   - expiryWarningWindow: how long before expiry ``CertificateManagerEvent/expiringSoon(_:expires:)`` is
    ///     reported (default 30 days).
    ///   - clock: the current time (default the system clock); tests inject their own.
    ///   - network: where validation's revocation fetches go (default ``SocketFetcher/shared``).
    public init(
        keychain: KeychainStore, configuration: SecurityPolicyConfiguration = SecurityPolicyConfiguration(),
        expiryWarningWindow: TimeInterval = 30 * 86_400, clock: @escaping @Sendable () -> Date = { Date() },
        network: any NetworkFetching = SocketFetcher.shared
    ) {
        self.keychain = keychain
        self.network = network
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

    // MARK: Private trust store

    /// Creates the private trust store. It can be created once: it cannot change until ``deleteCertStore()``.
    /// - Parameter certificates: the root and intermediate CA certificates to trust (at least one).
    /// - Throws: ``CertificateManagerError`` `.certificateStoreImmutable` when the store exists,
    ///   `.notCertificateAuthority` naming the first non-CA (nothing is stored), `.emptyCertificateStore`,
    ///   `.keychain`.
    public func setCertificates(_ certificates: [Certificate]) throws {
        guard !certificates.isEmpty else {
            throw CertificateManagerError(.emptyCertificateStore, "a private trust store needs at least one CA")
        }
        if let nonCA = certificates.first(where: { !$0.isCertificateAuthority }) {
            throw CertificateManagerError(
                .notCertificateAuthority, "only CA certificates can be trusted anchors",
                certificateSubject: nonCA.subjectSummary)
        }
        guard try !isCertificateStoreInUse else { throw Self.storeExists() }
        var unique: [Certificate] = []
        for certificate in certificates where !unique.contains(certificate) { unique.append(certificate) }
        let items = unique.map { certificate in
            KeychainStore.NewItem(
                .certificate, attributes: Self.certificateAttributes(certificate, label: Self.trustStoreLabel, group: accessGroup),
                data: certificate.derEncoded)
        }
        // The check and the adds are one exclusive keychain transaction: of managers racing to create the store
        // (on this keychain file, in this process or others) exactly one creates it, whole; the others see it.
        let created: Bool
        do {
            created = try keychain.add(items, unlessAnyMatches: [storeQuery()])
        } catch {
            throw Self.keychainError(error, "storing the private trust store")
        }
        guard created else { throw Self.storeExists() }
    }

    /// Whether the private trust store exists.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var isCertificateStoreInUse: Bool {
        get throws { try !certificates.isEmpty }
    }

    /// The certificates of the private trust store (empty when there is none).
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var certificates: [Certificate] {
        get throws {
            var query = storeQuery()
            query.limit = .all
            query.returning = .data
            return try find(query).map { item in
                guard let data = item.data, let certificate = try? Certificate(derEncoded: data) else {
                    throw CertificateManagerError(.keychain, "a certificate of the private trust store cannot be read")
                }
                return certificate
            }
        }
    }

    /// A description of each certificate of the private trust store.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var appCertificatesInfo: [CertificateInfo] {
        get throws { try certificates.map(CertificateInfo.init) }
    }

    /// Deletes the private trust store (and nothing else).
    /// - Returns: whether there was one.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    @discardableResult
    public func deleteCertStore() throws -> Bool {
        do {
            return try keychain.delete(storeQuery()) > 0
        } catch let error as KeychainError where error.code == .itemNotFound {
            return false
        } catch {
            throw Self.keychainError(error, "deleting the private trust store")
        }
    }

    // MARK: Client identity

    /// Stores the client identity (certificate and private key) and its chain.
    /// - Parameters:
    ///   - identity: the certificate and its private key.
    ///   - certificateChain: the intermediates (and possibly root) above the certificate, issuer order.
    /// - Throws: ``CertificateManagerError`` `.keyMismatch` (the key is not the certificate's private key),
    ///   `.clientIdentityExists`, `.keychain`. Nothing is stored on failure.
    public func setClientIdentity(_ identity: ClientIdentity, certificateChain: [Certificate] = []) throws {
        let certificate = identity.certificate
        guard identity.privateKey.isPrivate,
            let keyHash = try? identity.privateKey.publicKeySHA1(), keyHash == certificate.publicKeyHash
        else {
            throw CertificateManagerError(
                .keyMismatch, "the private key is not the certificate's",
                certificateSubject: certificate.subjectSummary)
        }
        guard try clientIdentity == nil else { throw Self.identityExists(certificate) }
        // The key item as SecItemAdd stores one (class, type, sizes, application label, usages), labelled.
        let key: KeyItemAttributes
        do { key = try KeyItemAttributes(identity.privateKey, label: Self.clientIdentityLabel) } catch {
            throw CertificateManagerError(.keyMismatch, "the private key cannot be exported")
        }
        var keyAttributes = key.attributes
        keyAttributes[.accessGroup] = .string(accessGroup)
        let items = [
            KeychainStore.NewItem(
                .certificate,
                attributes: Self.certificateAttributes(certificate, label: Self.clientIdentityLabel, group: accessGroup),
                data: certificate.derEncoded),
            KeychainStore.NewItem(.key, attributes: keyAttributes, data: key.data),
            KeychainStore.NewItem(
                .genericPassword,
                attributes: [
                    .service: .string(Self.clientIdentityLabel), .account: .string("chain"),
                    .accessGroup: .string(accessGroup),
                ], data: Self.encode(certificateChain)),
        ]
        // One exclusive transaction, as for the trust store: of racing managers exactly one provisions its
        // identity (certificate, key and chain together); the others find it there.
        let added: Bool
        do {
            added = try keychain.add(items, unlessAnyMatches: identityItemQueries(limit: .one))
        } catch {
            throw Self.keychainError(error, "storing the client identity")
        }
        guard added else { throw Self.identityExists(certificate) }
        continuation.yield(.provisioned(CertificateInfo(certificate)))
    }

    /// Stores the client identity from a PKCS#12 file (its certificate, key and chain).
    /// - Parameters:
    ///   - pkcs12: the PKCS#12 (PFX) bytes.
    ///   - password: its password (never logged nor put in an error).
    /// - Throws: ``CertificateManagerError`` `.wrongPassword`, `.malformedPKCS12`, and the errors of
    ///   ``setClientIdentity(_:certificateChain:)``. Nothing is stored on failure.
    public func setClientIdentity(pkcs12: Data, password: String) throws {
        let contents: PKCS12Contents?
        do {
            contents = try PKCS12.parse(pkcs12, passphrase: password)
        } catch let error as PKCS12Error where error.code == .wrongPassphrase {
            throw CertificateManagerError(.wrongPassword, "the PKCS#12 password is wrong")
        } catch {
            throw CertificateManagerError(.malformedPKCS12, "the data is not a PKCS#12 file")
        }
        guard let contents else {
            throw CertificateManagerError(.malformedPKCS12, "the PKCS#12 file holds no certificate with its key")
        }
        try setClientIdentity(
            ClientIdentity(certificate: contents.certificate, privateKey: contents.privateKey),
            certificateChain: contents.chain)
    }

    /// The provisioned client identity, nil when there is none.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var clientIdentity: ClientIdentity? {
        get throws {
            let query = ItemQuery(
                .identity, matching: [.label: .string(Self.clientIdentityLabel), .accessGroup: .string(accessGroup)],
                returning: .reference)  // a reference brings the key's data with the certificate's
            guard let item = try find(query).first else { return nil }
            guard let stored = StoredIdentity(item) else {
                throw CertificateManagerError(.keychain, "the stored client identity cannot be read")
            }
            return ClientIdentity(certificate: stored.certificate, privateKey: stored.privateKey)
        }
    }

    /// The chain stored with the client identity, leaf first (empty when there is no identity).
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var clientIdentityCertificateChain: [Certificate] {
        get throws {
            guard let identity = try clientIdentity else { return [] }
            let query = ItemQuery(
                .genericPassword,
                matching: [
                    .service: .string(Self.clientIdentityLabel), .account: .string("chain"),
                    .accessGroup: .string(accessGroup),
                ], returning: .data)
            let data = try find(query).first?.data ?? Data()
            return [identity.certificate] + Self.decode(data)
        }
    }

    /// A description of the client identity's certificate, nil when there is none.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var clientIdentityCertificateInfo: CertificateInfo? {
        get throws { try clientIdentity.map { CertificateInfo($0.certificate) } }
    }

    /// Deletes the client identity: its certificate, its private key and its chain.
    /// - Returns: whether there was one.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    @discardableResult
    public func deleteClientIdentity() throws -> Bool {
        let removed: Bool
        do { removed = try removeIdentityItems() } catch {
            throw Self.keychainError(error, "deleting the client identity")
        }
        if removed { continuation.yield(.removed) }
        return removed
    }

    /// Checks the client identity's expiry now (by the injected clock) and reports `.expired` or `.expiringSoon`
    /// on ``events`` when it applies (each call reports the state again).
    /// - Returns: the event reported, nil when the identity is absent or not near expiry.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    @discardableResult
    public func checkClientIdentityExpiry() throws -> CertificateManagerEvent? {
        guard let certificate = try clientIdentity?.certificate else { return nil }
        let now = clock()
        let info = CertificateInfo(certificate)
        let event: CertificateManagerEvent
        if now > certificate.notValidAfter {
            event = .expired(info)
        } else if certificate.notValidAfter.timeIntervalSince(now) <= expiryWarningWindow {
            event = .expiringSoon(info, expires: certificate.notValidAfter)
        } else {
            return nil
        }
        continuation.yield(event)
        return event
    }

    // MARK: Helpers

    private func removeIdentityItems() throws -> Bool {
        var removed = false
        for (index, query) in identityItemQueries(limit: .all).enumerated() {
            do {
                let count = try keychain.delete(query)
                // The certificate and the key say whether there was an identity; the chain item goes with them.
                if index < 2 { removed = removed || count > 0 }
            } catch let error as KeychainError where error.code == .itemNotFound {}
        }
        return removed
    }

    /// The client identity's items: its certificate, its private key, its chain.
    private func identityItemQueries(limit: MatchLimit) -> [ItemQuery] {
        let group = AttributeValue.string(accessGroup)
        return [
            ItemQuery(.certificate, matching: [.label: .string(Self.clientIdentityLabel), .accessGroup: group], limit: limit),
            ItemQuery(.key, matching: [.label: .string(Self.clientIdentityLabel), .accessGroup: group], limit: limit),
            ItemQuery(
                .genericPassword, matching: [.service: .string(Self.clientIdentityLabel), .accessGroup: group],
                limit: limit),
        ]
    }

    private static func storeExists() -> CertificateManagerError {
        CertificateManagerError(
            .certificateStoreImmutable, "the private trust store exists; delete it before setting another")
    }

    private static func identityExists(_ certificate: Certificate) -> CertificateManagerError {
        CertificateManagerError(
            .clientIdentityExists, "a client identity is provisioned; delete it first",
            certificateSubject: certificate.subjectSummary)
    }

    private func storeQuery() -> ItemQuery {
        ItemQuery(
            .certificate, matching: [.label: .string(Self.trustStoreLabel), .accessGroup: .string(accessGroup)],
            limit: .all)
    }

    private func find(_ query: ItemQuery) throws -> [KeychainItem] {
        do {
            return try keychain.find(query)
        } catch let error as KeychainError where error.code == .itemNotFound {
            return []
        } catch {
            throw Self.keychainError(error, "reading the keychain")
        }
    }

    /// The certificate item as SecItemAdd stores one, with `label` and the access group.
    static func certificateAttributes(_ certificate: Certificate, label: String, group: String) -> ItemAttributes {
        var attributes = certificate.keychainAttributes
        attributes[.label] = .string(label)
        attributes[.accessGroup] = .string(group)
        return attributes
    }

    static func keychainError(_ error: any Error, _ doing: String) -> CertificateManagerError {
        if let error = error as? CertificateManagerError { return error }
        return CertificateManagerError(.keychain, "\(doing): \(error)")
    }

    /// Certificates as 4-byte big-endian length + DER each.
    static func encode(_ certificates: [Certificate]) -> Data {
        var data = Data()
        for certificate in certificates {
            let der = certificate.derEncoded
            withUnsafeBytes(of: UInt32(der.count).bigEndian) { data.append(contentsOf: $0) }
            data.append(der)
        }
        return data
    }

    static func decode(_ data: Data) -> [Certificate] {
        let bytes = [UInt8](data)
        var certificates: [Certificate] = []
        var index = 0
        while index + 4 <= bytes.count {
            let length = bytes[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
            index += 4
            guard index + length <= bytes.count,
                let certificate = try? Certificate(derEncoded: bytes[index..<index + length])
            else { break }
            certificates.append(certificate)
            index += length
        }
        return certificates
    }
}
