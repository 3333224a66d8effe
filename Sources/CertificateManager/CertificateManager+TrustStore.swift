public import Certificates
import Foundation
import Keychain
import KeychainItems

// The private trust store: the anchors the manager validates against, in the keychain.
extension CertificateManager {
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
}
