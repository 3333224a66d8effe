public import Certificates
public import Foundation
import HardwareKeys
import Keychain
import KeychainItems

// The client identity: certificate, private key and chain, stored together in one transaction.
extension CertificateManager {
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
        guard try !storedIdentityExists() else { throw Self.identityExists(certificate) }
        let items = [
            KeychainStore.NewItem(
                .certificate,
                attributes: Self.certificateAttributes(certificate, label: Self.clientIdentityLabel, group: accessGroup),
                data: certificate.derEncoded),
            try keyItem(identity.privateKey),
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

    /// The identity's key item: the key as SecItemAdd stores one (class, type, sizes, application label, usages),
    /// labelled; for a key on a PKCS#11 token, which keeps it, the token's ID and the key's CKA_ID.
    private func keyItem(_ key: AsymmetricKey) throws -> KeychainStore.NewItem {
        if let tokenKey = key.heldBy as? PKCS11Key {
            return KeychainStore.NewItem(
                .genericPassword,
                attributes: [
                    .service: .string(Self.clientIdentityLabel), .account: .string(TokenKeyReference.account),
                    .accessGroup: .string(accessGroup),
                ], data: try JSONEncoder().encode(TokenKeyReference(token: tokenKey.token.tokenID, id: Data(tokenKey.id))))
        }
        let item: KeyItemAttributes
        do { item = try KeyItemAttributes(key, label: Self.clientIdentityLabel) } catch {
            throw CertificateManagerError(.keyMismatch, "the private key cannot be exported")
        }
        var attributes = item.attributes
        attributes[.accessGroup] = .string(accessGroup)
        return KeychainStore.NewItem(.key, attributes: attributes, data: item.data)
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

    /// The provisioned client identity, nil when there is none. A key on a PKCS#11 token signs with the `tokenPIN`
    /// the manager was made with.
    /// - Throws: ``CertificateManagerError`` `.keychain`; `.identityTokenUnavailable` when the identity's key is on a
    ///   token that is not present.
    public var clientIdentity: ClientIdentity? {
        get throws {
            let query = ItemQuery(
                .identity, matching: [.label: .string(Self.clientIdentityLabel), .accessGroup: .string(accessGroup)],
                returning: .reference)  // a reference brings the key's data with the certificate's
            guard let item = try find(query).first else { return try tokenIdentity() }
            guard let stored = StoredIdentity(item, from: keychain) else {
                throw CertificateManagerError(.keychain, "the stored client identity cannot be read")
            }
            return ClientIdentity(certificate: stored.certificate, privateKey: stored.privateKey)
        }
    }

    /// The client identity whose key is on a PKCS#11 token (nil when none is stored): the stored certificate, and
    /// the token's key, which signs with the manager's `tokenPIN`.
    private func tokenIdentity() throws -> ClientIdentity? {
        guard let reference = try tokenKeyReference() else { return nil }
        guard let certificate = try storedCertificate() else {
            throw CertificateManagerError(.keychain, "the stored client identity cannot be read")
        }
        let key: PKCS11Key?
        do {
            key = try PKCS11Modules.shared().tokens().first { $0.tokenID == reference.token }?.key(id: [UInt8](reference.id), pin: tokenPIN)
        } catch let error as HardwareKeyError {
            throw CertificateManagerError(
                .identityTokenUnavailable, "the client identity's key is on \(reference.token), which cannot be read: \(error.reason)",
                certificateSubject: certificate.subjectSummary)
        }
        guard let key else {
            throw CertificateManagerError(
                .identityTokenUnavailable, "the client identity's key is on \(reference.token), which is not present or no longer holds it",
                certificateSubject: certificate.subjectSummary)
        }
        return ClientIdentity(certificate: certificate, privateKey: try key.privateKey())
    }

    /// Which token holds the client identity's key, nil when no identity of a token is stored.
    private func tokenKeyReference() throws -> TokenKeyReference? {
        let query = ItemQuery(
            .genericPassword,
            matching: [
                .service: .string(Self.clientIdentityLabel), .account: .string(TokenKeyReference.account),
                .accessGroup: .string(accessGroup),
            ], returning: .data)
        guard let data = try find(query).first?.data else { return nil }
        guard let reference = try? JSONDecoder().decode(TokenKeyReference.self, from: data) else {
            throw CertificateManagerError(.keychain, "the stored client identity cannot be read")
        }
        return reference
    }

    /// Whether a client identity is stored (on a token or not), without reading its key.
    func storedIdentityExists() throws -> Bool {
        try storedCertificate() != nil
    }

    /// The client identity's certificate, without its key (which may be on a token that is not present).
    private func storedCertificate() throws -> Certificate? {
        let query = ItemQuery(
            .certificate, matching: [.label: .string(Self.clientIdentityLabel), .accessGroup: .string(accessGroup)],
            returning: .data)
        guard let data = try find(query).first?.data else { return nil }
        guard let certificate = try? Certificate(derEncoded: data) else {
            throw CertificateManagerError(.keychain, "the stored client identity cannot be read")
        }
        return certificate
    }

    /// The chain stored with the client identity, leaf first (empty when there is no identity).
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var clientIdentityCertificateChain: [Certificate] {
        get throws {
            guard let certificate = try storedCertificate() else { return [] }
            let query = ItemQuery(
                .genericPassword,
                matching: [
                    .service: .string(Self.clientIdentityLabel), .account: .string("chain"),
                    .accessGroup: .string(accessGroup),
                ], returning: .data)
            let data = try find(query).first?.data ?? Data()
            return [certificate] + Self.decode(data)
        }
    }

    /// A description of the client identity's certificate, nil when there is none.
    /// - Throws: ``CertificateManagerError`` `.keychain`.
    public var clientIdentityCertificateInfo: CertificateInfo? {
        get throws { try storedCertificate().map { CertificateInfo($0) } }
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
        guard let certificate = try storedCertificate() else { return nil }
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
}

/// The keychain's record of a client identity whose key a PKCS#11 token holds: the token's ID (its PKCS#11 URI) and
/// the key's CKA_ID.
struct TokenKeyReference: Codable {
    /// The account of its generic-password item (the service is the client identity's label).
    static let account = "token-key"
    let token: String
    let id: Data
}
