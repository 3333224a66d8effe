import Certificates
import Foundation
import Keychain
import KeychainItems

// The keychain items behind the store and the identity, and their encodings.
extension CertificateManager {
    func removeIdentityItems() throws -> Bool {
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
    func identityItemQueries(limit: MatchLimit) -> [ItemQuery] {
        let group = AttributeValue.string(accessGroup)
        return [
            ItemQuery(.certificate, matching: [.label: .string(Self.clientIdentityLabel), .accessGroup: group], limit: limit),
            ItemQuery(.key, matching: [.label: .string(Self.clientIdentityLabel), .accessGroup: group], limit: limit),
            ItemQuery(
                .genericPassword, matching: [.service: .string(Self.clientIdentityLabel), .accessGroup: group],
                limit: limit),
        ]
    }

    static func storeExists() -> CertificateManagerError {
        CertificateManagerError(
            .certificateStoreImmutable, "the private trust store exists; delete it before setting another")
    }

    static func identityExists(_ certificate: Certificate) -> CertificateManagerError {
        CertificateManagerError(
            .clientIdentityExists, "a client identity is provisioned; delete it first",
            certificateSubject: certificate.subjectSummary)
    }

    func storeQuery() -> ItemQuery {
        ItemQuery(
            .certificate, matching: [.label: .string(Self.trustStoreLabel), .accessGroup: .string(accessGroup)],
            limit: .all)
    }

    func find(_ query: ItemQuery) throws -> [KeychainItem] {
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
