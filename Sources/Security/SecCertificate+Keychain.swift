import Certificates
import Foundation
import Keychain
import KeychainItems

// The certificate side of ItemReferences: the item itself is KeychainItems' (shared with the certificate manager).
extension ItemReferences {
    /// A SecCertificate for a certificate item (its data is the DER), or nil when it does not parse.
    static func certificateReference(_ item: KeychainItem) -> CFTypeRef? {
        guard item.itemClass == .certificate, let data = item.data else { return nil }
        return (try? Certificate(derEncoded: data)).map(SecCertificate.init)
    }

    /// A SecIdentity for an identity item (the certificate's DER and the private key's data).

    /// What a SecCertificate stands for, or nil for any other value: class certificate, data the DER, and the
    /// attributes Apple derives (``Certificate/keychainAttributes``); identified by type + issuer + serial,
    /// Apple's uniqueness.
    static func certificateContents(_ value: Any) throws -> Contents? {
        guard let reference = value as? SecCertificate else { return nil }
        let certificate = reference.certificate
        return Contents(
            itemClass: .certificate, data: certificate.derEncoded, attributes: certificate.keychainAttributes,
            identifying: certificate.keychainIdentifyingAttributes)
    }
}
