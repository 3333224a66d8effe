package import Certificates
package import Keychain

/// The certificate item Apple stores for a certificate.
package enum CertificateItem {
    /// Apple's CSSM_CERT_X_509v3 (`kSecAttrCertificateType`), stored for every certificate.
    package static let typeX509v3: Int64 = 3
    /// Apple's CSSM_CERT_ENCODING_DER (`kSecAttrCertificateEncoding`), stored for every certificate.
    package static let encodingDER: Int64 = 3
}

extension Certificate {
    /// The attributes Apple derives from a certificate for its keychain item: type, encoding, normalized subject
    /// and issuer, serial, subject key ID, public key hash, and label = the subject summary. Shared by SecItemAdd
    /// and the certificate manager, so both store the same item.
    package var keychainAttributes: ItemAttributes {
        var attributes: ItemAttributes = [
            .certificateType: .number(CertificateItem.typeX509v3),
            .certificateEncoding: .number(CertificateItem.encodingDER),
            .subject: .data(subject.normalizedEncoded),
            .issuer: .data(issuer.normalizedEncoded),
            .serialNumber: .data(serialNumber),
            .publicKeyHash: .data(publicKeyHash),
        ]
        if let keyID = subjectKeyIdentifier { attributes[.subjectKeyID] = .data(keyID) }
        if let summary = subjectSummary { attributes[.label] = .string(summary) }
        return attributes
    }

    /// The attributes that make a certificate item unique, as Apple has it: type, issuer, serial number.
    package var keychainIdentifyingAttributes: ItemAttributes {
        [
            .certificateType: .number(CertificateItem.typeX509v3),
            .issuer: .data(issuer.normalizedEncoded),
            .serialNumber: .data(serialNumber),
        ]
    }
}
