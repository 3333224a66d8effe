public import Certificates
public import Foundation
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
            guard let stored = StoredIdentity(item, from: keychain) else {
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
}
