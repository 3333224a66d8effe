public import Certificates
public import Foundation

// Apple's Certificate Services (<Security/SecCertificate.h>) with the signatures Swift imports on Apple
// platforms, over the Certificates module.

/// Core Foundation's allocator. Linux has no CF allocators: every `allocator` parameter is accepted and ignored.
public typealias CFAllocator = AnyObject

/// The default allocator: nil, as `kCFAllocatorDefault` is NULL in Core Foundation.
nonisolated(unsafe) public let kCFAllocatorDefault: CFAllocator? = nil
// nonisolated(unsafe): an immutable nil constant, never written.

/// Core Foundation's error domain for `OSStatus` codes (the domain of the errors this module returns).
nonisolated(unsafe) public let kCFErrorDomainOSStatus: CFString = "NSOSStatusErrorDomain"
// nonisolated(unsafe): an immutable NSString constant, never written.

/// Apple's private `errSecInternal` (SecBasePriv.h), which `SecCertificateCopyCommonName` answers when the
/// subject has no common name.
let errSecInternal: OSStatus = -26276

/// An X.509 certificate (Apple's `SecCertificateRef`), wrapping a ``Certificates/Certificate``.
public final class SecCertificate: Hashable, Sendable, CustomStringConvertible {
    /// The certificate in the idiomatic API.
    public let certificate: Certificate

    /// Wraps a certificate of the Swift API.
    public init(_ certificate: Certificate) { self.certificate = certificate }

    public static func == (lhs: SecCertificate, rhs: SecCertificate) -> Bool { lhs.certificate == rhs.certificate }
    public func hash(into hasher: inout Hasher) { hasher.combine(certificate) }
    /// Apple's description: `<cert(0x…) s: subject summary i: issuer summary>`.
    public var description: String {
        "<cert(\(ObjectIdentifier(self))) s: \(certificate.subjectSummary ?? "") i: \(certificate.issuerSummary ?? "")>"
    }
}

/// Creates a certificate from the DER of exactly one X.509 certificate.
/// - Parameters:
///   - allocator: ignored (pass nil or `kCFAllocatorDefault`).
///   - data: the certificate's DER; PEM text, trailing bytes or anything else that is not one DER certificate
///     gives nil.
/// - Returns: the certificate, or nil.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    (try? Certificate(derEncoded: data.copiedBytes)).map(SecCertificate.init)
}

/// The certificate's DER.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    certificate.certificate.derEncoded as NSData
}

/// A human-readable summary of the subject (Apple's rule: the common names, else organizational units, else
/// organizations, else any other attribute; else the first e-mail address, else the first DNS name).
/// - Returns: the summary, or nil when the certificate names nothing.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.certificate.subjectSummary.map { $0 as NSString }
}

/// The subject's most specific (last) common name.
/// - Parameters:
///   - commonName: on return, the common name, or nil when the subject has none.
/// - Returns: `errSecSuccess`, or Apple's `errSecInternal` (-26276) when the subject has no common name.
public func SecCertificateCopyCommonName(_ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>)
    -> OSStatus
{
    guard let last = certificate.certificate.commonNames.last else {
        commonName.pointee = nil
        return errSecInternal
    }
    commonName.pointee = last as NSString
    return errSecSuccess
}

/// The e-mail addresses: the subject alternative name's rfc822Names, then the subject's emailAddress
/// attributes.
/// - Parameters:
///   - emailAddresses: on return, an array of strings (empty when there is none).
/// - Returns: `errSecSuccess`.
public func SecCertificateCopyEmailAddresses(
    _ certificate: SecCertificate, _ emailAddresses: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    emailAddresses.pointee = NSArray(array: certificate.certificate.emailAddresses.map { $0 as NSString })
    return errSecSuccess
}

/// The serial number's INTEGER content bytes.
/// - Parameters:
///   - error: unused on success (a parsed certificate always has a serial number); left untouched.
public func SecCertificateCopySerialNumberData(
    _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    certificate.certificate.serialNumber as NSData
}

/// The issuer's normalized name sequence (DER), as stored in the keychain's `kSecAttrIssuer`.
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    certificate.certificate.issuer.normalizedEncoded as NSData
}

/// The subject's normalized name sequence (DER), as stored in the keychain's `kSecAttrSubject`.
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    certificate.certificate.subject.normalizedEncoded as NSData
}
