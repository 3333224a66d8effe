public import Certificates
public import Foundation
import Trust

// Apple's Certificate Services (<Security/SecCertificate.h>) with the signatures Swift imports on Apple
// platforms, over the Certificates module.

/// Core Foundation's allocator. Linux has no CF allocators: every `allocator` parameter is accepted and ignored.
public typealias CFAllocator = AnyObject

/// The default allocator: nil, as `kCFAllocatorDefault` is NULL in Core Foundation.
nonisolated(unsafe) public let kCFAllocatorDefault: CFAllocator? = nil
// nonisolated(unsafe): an immutable nil constant, never written.

/// Core Foundation's error domain for `OSStatus` codes (the domain of the errors this module returns).
nonisolated(unsafe) public let kCFErrorDomainOSStatus: CFString! = "NSOSStatusErrorDomain"
// nonisolated(unsafe): an immutable NSString constant, never written.

/// Apple's private `errSecInternal` (SecBasePriv.h), which `SecCertificateCopyCommonName` answers when the
/// subject has no common name.
let errSecInternal: OSStatus = -26276

/// An X.509 certificate (Apple's `SecCertificateRef`), wrapping a ``Certificates/Certificate``.
public final class SecCertificate: Hashable, Sendable, CustomStringConvertible {
    /// The certificate in the idiomatic API.
    public let certificate: Certificate
    /// The DER at a fixed address for as long as this object lives, made when first asked (macOS's
    /// `SecCertificateGetData` hands out a pointer, not a copy).
    let fixedBytes = FixedBytes()

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
@discardableResult
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    (try? Certificate(derEncoded: data.copiedBytes)).map(SecCertificate.init)
}

/// The certificate's DER.
@discardableResult
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    certificate.certificate.derEncoded as NSData
}

/// A human-readable summary of the subject (Apple's rule: the common names, else organizational units, else
/// organizations, else any other attribute; else the first e-mail address, else the first DNS name).
/// - Returns: the summary, or nil when the certificate names nothing.
@discardableResult
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.certificate.subjectSummary.map { $0 as NSString }
}

/// The subject's most specific (last) common name.
/// - Parameters:
///   - commonName: on return, the common name, or nil when the subject has none.
/// - Returns: `errSecSuccess`, or Apple's `errSecInternal` (-26276) when the subject has no common name.
@discardableResult
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
@discardableResult
public func SecCertificateCopyEmailAddresses(
    _ certificate: SecCertificate, _ emailAddresses: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    emailAddresses.pointee = NSArray(array: certificate.certificate.emailAddresses.map { $0 as NSString })
    return errSecSuccess
}

/// The serial number's INTEGER content bytes.
/// - Parameters:
///   - error: unused on success (a parsed certificate always has a serial number); left untouched.
@discardableResult
public func SecCertificateCopySerialNumberData(
    _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    certificate.certificate.serialNumber as NSData
}

/// The issuer's normalized name sequence (DER), as stored in the keychain's `kSecAttrIssuer`.
@discardableResult
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    certificate.certificate.issuer.normalizedEncoded as NSData
}

/// The subject's normalized name sequence (DER), as stored in the keychain's `kSecAttrSubject`.
@discardableResult
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    certificate.certificate.subject.normalizedEncoded as NSData
}

// MARK: Dates, serial number, names

/// The start of the validity period.
@discardableResult
public func SecCertificateCopyNotValidBeforeDate(_ certificate: SecCertificate) -> CFDate? {
    certificate.certificate.notValidBefore as NSDate
}

/// The end of the validity period.
@discardableResult
public func SecCertificateCopyNotValidAfterDate(_ certificate: SecCertificate) -> CFDate? {
    certificate.certificate.notValidAfter as NSDate
}

/// The serial number's INTEGER content bytes (the iOS form, deprecated there for
/// ``SecCertificateCopySerialNumberData(_:_:)``).
@discardableResult
public func SecCertificateCopySerialNumber(_ certificate: SecCertificate) -> CFData? {
    certificate.certificate.serialNumber as NSData
}

/// The serial number's INTEGER content bytes (the macOS form, with an error out-parameter that a parsed
/// certificate never needs: it is left untouched).
@discardableResult
public func SecCertificateCopySerialNumber(_ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    certificate.certificate.serialNumber as NSData
}

/// The issuer's normalized name without its outer SEQUENCE header (macOS: the content
/// ``SecCertificateCopyNormalizedIssuerSequence(_:)`` wraps).
@discardableResult
public func SecCertificateCopyNormalizedIssuerContent(_ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    derContent(certificate.certificate.issuer.normalizedEncoded, error)
}

/// The subject's normalized name without its outer SEQUENCE header (macOS).
@discardableResult
public func SecCertificateCopyNormalizedSubjectContent(_ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    derContent(certificate.certificate.subject.normalizedEncoded, error)
}

/// The content octets of one DER element (its tag and length dropped); nil and `errSecDecode` when the bytes are
/// not exactly one element.
private func derContent(_ der: Data, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    var reader = DERReader([UInt8](der))
    guard let element = reader.next(), reader.isAtEnd else {
        KeyErrors.report(errSecDecode, "the name is not one DER element", error)
        return nil
    }
    return Data(element.contents) as NSData
}

/// The certificate's public key (the iOS form, deprecated there for ``SecCertificateCopyKey(_:)``).
@discardableResult
public func SecCertificateCopyPublicKey(_ certificate: SecCertificate) -> SecKey? {
    SecCertificateCopyKey(certificate)
}

/// The certificate's public key (the macOS form).
/// - Returns: `errSecSuccess`; `errSecUnsupportedKeyFormat` when the key's type is not supported here (nil is
///   returned then).
@discardableResult
public func SecCertificateCopyPublicKey(_ certificate: SecCertificate, _ key: UnsafeMutablePointer<SecKey?>) -> OSStatus {
    key.pointee = SecCertificateCopyKey(certificate)
    return key.pointee == nil ? errSecUnsupportedKeyFormat : errSecSuccess
}

/// A short description (macOS): the subject summary, as Keychain Access titles a certificate.
@discardableResult
public func SecCertificateCopyShortDescription(
    _ alloc: CFAllocator?, _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFString? {
    (certificate.certificate.subjectSummary ?? "") as NSString
}

/// A long description (macOS): subject, issuer, serial number, validity and SHA-256 fingerprint, one per line.
@discardableResult
public func SecCertificateCopyLongDescription(
    _ alloc: CFAllocator?, _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFString? {
    let certificate = certificate.certificate
    let hex = { (data: Data) in data.map { String(format: "%02X", $0) }.joined(separator: ":") }
    let formatter = ISO8601DateFormatter()
    return """
        Subject: \(certificate.subjectSummary ?? "")
        Issuer: \(certificate.issuerSummary ?? "")
        Serial Number: \(hex(certificate.serialNumber))
        Not Valid Before: \(formatter.string(from: certificate.notValidBefore))
        Not Valid After: \(formatter.string(from: certificate.notValidAfter))
        SHA-256 Fingerprint: \(hex(certificate.sha256Fingerprint))
        """ as NSString
}

// Apple's OIDs for SecCertificateCopyValues' keys (SecCertificateOIDs.h values).
private let subjectNameOID = "2.16.840.1.113741.2.1.1.1.8"
private let issuerNameOID = "2.16.840.1.113741.2.1.1.1.5"
private let serialNumberOID = "2.16.840.1.113741.2.1.1.1.3"
private let notBeforeOID = "2.16.840.1.113741.2.1.1.1.6"
private let notAfterOID = "2.16.840.1.113741.2.1.1.1.7"
private let publicKeyOID = "2.16.840.1.113741.2.1.1.1.10"
private let subjectAltNameOID = "2.5.29.17"
private let extendedKeyUsageOID = "2.5.29.37"

/// The certificate's fields as macOS's property dictionaries (macOS): a dictionary keyed by the field's OID
/// string, each value a dictionary of `kSecPropertyKeyType`, `kSecPropertyKeyLabel`,
/// `kSecPropertyKeyLocalizedLabel` and `kSecPropertyKeyValue`. The fields given here: subject and issuer name
/// (arrays of attribute dictionaries labelled by OID), serial number, validity dates (as seconds since 2001, as
/// Apple's), public key (its SubjectPublicKeyInfo), subject alternative name (strings) and extended key usage
/// (OID strings).
/// - Parameters:
///   - keys: the OIDs wanted (strings), nil for all.
/// - Returns: the dictionary; nil and `errSecParam` when `keys` holds something that is not a string.
@discardableResult
public func SecCertificateCopyValues(
    _ certificate: SecCertificate, _ keys: CFArray?, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFDictionary? {
    var wanted: Set<String>?
    if let keys {
        let strings = keys.compactMap { stringValue($0) }
        guard strings.count == keys.count else {
            KeyErrors.report(errSecParam, "the keys are not OID strings", error)
            return nil
        }
        wanted = Set(strings)
    }
    let certificate = certificate.certificate
    let result = NSMutableDictionary()
    func add(_ oid: String, _ label: String, _ type: CFString, _ value: Any) {
        guard wanted?.contains(oid) ?? true else { return }
        result[oid as NSString] = NSDictionary(dictionary: [
            kSecPropertyKeyType: type, kSecPropertyKeyLabel: label as NSString,
            kSecPropertyKeyLocalizedLabel: label as NSString, kSecPropertyKeyValue: value,
        ])
    }
    func name(_ name: DistinguishedName) -> NSArray {
        NSArray(array: name.attributes.map { attribute in
            NSDictionary(dictionary: [
                kSecPropertyKeyType: kSecPropertyTypeString, kSecPropertyKeyLabel: attribute.oid as NSString,
                kSecPropertyKeyLocalizedLabel: (attribute.shortName ?? attribute.oid) as NSString,
                kSecPropertyKeyValue: attribute.value as NSString,
            ])
        })
    }
    add(subjectNameOID, "Subject Name", kSecPropertyTypeSection, name(certificate.subject))
    add(issuerNameOID, "Issuer Name", kSecPropertyTypeSection, name(certificate.issuer))
    add(serialNumberOID, "Serial Number", kSecPropertyTypeData, certificate.serialNumber as NSData)
    add(notBeforeOID, "Not Valid Before", kSecPropertyTypeDate, NSNumber(value: certificate.notValidBefore.timeIntervalSinceReferenceDate))
    add(notAfterOID, "Not Valid After", kSecPropertyTypeDate, NSNumber(value: certificate.notValidAfter.timeIntervalSinceReferenceDate))
    add(publicKeyOID, "Public Key Info", kSecPropertyTypeData, certificate.subjectPublicKeyInfo as NSData)
    if !certificate.subjectAlternativeNames.isEmpty {
        add(subjectAltNameOID, "Subject Alternative Name", kSecPropertyTypeArray,
            NSArray(array: certificate.subjectAlternativeNames.map { $0.value as NSString }))
    }
    if let usages = certificate.extendedKeyUsage {
        add(extendedKeyUsageOID, "Extended Key Usage", kSecPropertyTypeArray, NSArray(array: usages.map { $0 as NSString }))
    }
    return result
}

/// A certificate's key usage bits as Apple numbers them (`SecKeyUsage`, SecCertificate.h): bit 0 digital
/// signature … bit 8 decipher only, bit 31 critical.
public struct SecKeyUsage: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let digitalSignature = SecKeyUsage(rawValue: 1 << 0)
    public static let nonRepudiation = SecKeyUsage(rawValue: 1 << 1)
    public static let contentCommitment = SecKeyUsage(rawValue: 1 << 1)
    public static let keyEncipherment = SecKeyUsage(rawValue: 1 << 2)
    public static let dataEncipherment = SecKeyUsage(rawValue: 1 << 3)
    public static let keyAgreement = SecKeyUsage(rawValue: 1 << 4)
    public static let keyCertSign = SecKeyUsage(rawValue: 1 << 5)
    public static let crlSign = SecKeyUsage(rawValue: 1 << 6)
    public static let encipherOnly = SecKeyUsage(rawValue: 1 << 7)
    public static let decipherOnly = SecKeyUsage(rawValue: 1 << 8)
    public static let critical = SecKeyUsage(rawValue: 1 << 31)
    public static let all = SecKeyUsage(rawValue: 0x7FFF_FFFF)
}

/// Bytes copied once to memory of their own and kept at that address until the owner goes (freed, wiped first, then).
final class FixedBytes: @unchecked Sendable {
    // @unchecked: `storage` is written once, under `lock`, and never changed after; read only through `bytes(of:)`.
    private let lock = NSLock()
    private var storage: UnsafeMutableRawBufferPointer?

    /// The copy of `data` (made on the first call; later calls return the same memory).
    func bytes(of data: @autoclosure () -> Data) -> UnsafeMutableRawBufferPointer {
        lock.lock()
        defer { lock.unlock() }
        if let storage { return storage }
        let source = data()
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(source.count, 1), alignment: 1)
        source.withUnsafeBytes { copy.copyMemory(from: $0) }
        let kept = UnsafeMutableRawBufferPointer(rebasing: copy[..<source.count])
        storage = kept
        return kept
    }

    deinit {
        if let storage, let base = storage.baseAddress {
            storage.initializeMemory(as: UInt8.self, repeating: 0)
            base.deallocate()
        }
    }
}
