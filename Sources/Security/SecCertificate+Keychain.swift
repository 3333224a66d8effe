package import Certificates
import Foundation
package import Keychain

// The certificate side of ItemReferences.
extension ItemReferences {
    /// Apple's CSSM_CERT_X_509v3 (`kSecAttrCertificateType`) and CSSM_CERT_ENCODING_DER
    /// (`kSecAttrCertificateEncoding`), the values Apple stores for every certificate it adds.
    static let certificateTypeX509v3: Int64 = 3
    static let certificateEncodingDER: Int64 = 3

    /// A SecCertificate for a certificate item (its data is the DER), or nil when it does not parse.
    static func certificateReference(_ item: KeychainItem) -> CFTypeRef? {
        guard item.itemClass == .certificate, let data = item.data else { return nil }
        return (try? Certificate(derEncoded: data)).map(SecCertificate.init)
    }

    /// A SecIdentity for an identity item (the certificate's DER and the private key's data).
    static func identityReference(_ item: KeychainItem) -> CFTypeRef? { makeIdentity(item) }

    /// What a SecCertificate stands for, or nil for any other value: class certificate, data the DER, and the
    /// attributes Apple derives (type, encoding, normalized subject and issuer, serial, subject key ID, public
    /// key hash, label = subject summary); identified by type + issuer + serial, Apple's uniqueness.
    static func certificateContents(_ value: Any) throws -> Contents? {
        guard let reference = value as? SecCertificate else { return nil }
        let certificate = reference.certificate
        let attributes = certificate.keychainAttributes
        let identifying: ItemAttributes = [
            .certificateType: .number(certificateTypeX509v3),
            .issuer: .data(certificate.issuer.normalizedEncoded),
            .serialNumber: .data(certificate.serialNumber),
        ]
        return Contents(
            itemClass: .certificate, data: certificate.derEncoded, attributes: attributes, identifying: identifying)
    }
}

extension Certificate {
    /// The attributes Apple derives from a certificate for its keychain item: type, encoding, normalized subject
    /// and issuer, serial, subject key ID, public key hash, and label = the subject summary. Shared by SecItemAdd
    /// and the certificate manager, so both store the same item.
    package var keychainAttributes: ItemAttributes {
        var attributes: ItemAttributes = [
            .certificateType: .number(ItemReferences.certificateTypeX509v3),
            .certificateEncoding: .number(ItemReferences.certificateEncodingDER),
            .subject: .data(subject.normalizedEncoded),
            .issuer: .data(issuer.normalizedEncoded),
            .serialNumber: .data(serialNumber),
            .publicKeyHash: .data(publicKeyHash),
        ]
        if let keyID = subjectKeyIdentifier { attributes[.subjectKeyID] = .data(keyID) }
        if let summary = subjectSummary { attributes[.label] = .string(summary) }
        return attributes
    }
}
