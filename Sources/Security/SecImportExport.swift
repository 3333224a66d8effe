public import Foundation
import Certificates

// Apple's SecImportExport.h (macOS): certificates, keys and identities read from and written to files — DER and PEM
// certificates, OpenSSL private keys, X.509 public keys, PEM sequences and PKCS#12 — with Apple's formats, flags and
// parameter blocks. Encrypted PEM private keys (kSecFormatWrapped…), SSH, BSAFE, PKCS#7 and Netscape sequences are
// not read or written here: errSecUnsupportedFormat (listed in docs/apple-compatibility.md).

/// The external format of imported or exported items (Apple's `SecExternalFormat`).
public enum SecExternalFormat: UInt32, Sendable {
    case formatUnknown = 0
    case formatOpenSSL, formatSSH, formatBSAFE, formatRawKey, formatWrappedPKCS8, formatWrappedOpenSSL, formatWrappedSSH
    case formatWrappedLSH, formatX509Cert, formatPEMSequence, formatPKCS7, formatPKCS12, formatNetscapeCertSequence
    case formatSSHv2
}

/// What an import found (Apple's `SecExternalItemType`).
public enum SecExternalItemType: UInt32, Sendable {
    case itemTypeUnknown = 0
    case itemTypePrivateKey, itemTypePublicKey, itemTypeSessionKey, itemTypeCertificate, itemTypeAggregate
}

/// Import and export flags (Apple's `SecItemImportExportFlags`).
public struct SecItemImportExportFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The exported bytes are PEM.
    public static let pemArmour = SecItemImportExportFlags(rawValue: 1)
}

/// Key import and export flags (Apple's `SecKeyImportExportFlags`).
public struct SecKeyImportExportFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Import at most one key.
    public static let importOnlyOne = SecKeyImportExportFlags(rawValue: 1)
    /// Ask the user for the passphrase: no prompt in a library, so an import that needs one without one fails.
    public static let securePassphrase = SecKeyImportExportFlags(rawValue: 2)
    /// Import private keys without an access list.
    public static let noAccessControl = SecKeyImportExportFlags(rawValue: 4)
}

/// The version field of the parameter blocks.
public let SEC_KEY_IMPORT_EXPORT_PARAMS_VERSION: UInt32 = 0

/// The parameters of ``SecItemImport(_:_:_:_:_:_:_:_:)`` and ``SecItemExport(_:_:_:_:_:)`` (Apple's struct, as Swift
/// imports it: object fields are `Unmanaged`). Only `passphrase` (a CFString, for PKCS#12) is used here; a
/// prompt cannot be shown by a library.
public struct SecItemImportExportKeyParameters {
    public var version: UInt32
    public var flags: SecKeyImportExportFlags
    public var passphrase: Unmanaged<CFTypeRef>?
    public var alertTitle: Unmanaged<CFString>?
    public var alertPrompt: Unmanaged<CFString>?
    public var accessRef: Unmanaged<SecAccess>?
    public var keyUsage: Unmanaged<CFArray>?
    public var keyAttributes: Unmanaged<CFArray>?

    public init() {
        self.init(version: 0, flags: [], passphrase: nil, alertTitle: nil, alertPrompt: nil, accessRef: nil, keyUsage: nil, keyAttributes: nil)
    }

    public init(
        version: UInt32, flags: SecKeyImportExportFlags, passphrase: Unmanaged<CFTypeRef>?, alertTitle: Unmanaged<CFString>?,
        alertPrompt: Unmanaged<CFString>?, accessRef: Unmanaged<SecAccess>?, keyUsage: Unmanaged<CFArray>?, keyAttributes: Unmanaged<CFArray>?
    ) {
        self.version = version
        self.flags = flags
        self.passphrase = passphrase
        self.alertTitle = alertTitle
        self.alertPrompt = alertPrompt
        self.accessRef = accessRef
        self.keyUsage = keyUsage
        self.keyAttributes = keyAttributes
    }
}

/// The parameters of the older ``SecKeychainItemImport(_:_:_:_:_:_:_:_:)``: as
/// ``SecItemImportExportKeyParameters`` with CSSM key usage and attribute words (`CSSM_KEYUSE`,
/// `CSSM_KEYATTR_FLAGS`), which are ignored here.
public struct SecKeyImportExportParameters {
    public var version: UInt32
    public var flags: SecKeyImportExportFlags
    public var passphrase: Unmanaged<CFTypeRef>?
    public var alertTitle: Unmanaged<CFString>?
    public var alertPrompt: Unmanaged<CFString>?
    public var accessRef: Unmanaged<SecAccess>?
    public var keyUsage: UInt32
    public var keyAttributes: UInt32

    public init() {
        version = 0
        flags = []
        keyUsage = 0
        keyAttributes = 0
    }
}

// MARK: Import

/// Reads certificates, keys and identities and, when a keychain is given, adds them to it (macOS).
/// - Parameters:
///   - importedData: the bytes: a DER certificate (`.formatX509Cert`), a DER or PEM private key (`.formatOpenSSL`:
///     PKCS#1, SEC 1 or PKCS#8, unencrypted), a DER SubjectPublicKeyInfo (`.formatOpenSSL` for a public key), a PEM
///     sequence of those (`.formatPEMSequence`), or PKCS#12 (`.formatPKCS12`, with the passphrase in `keyParams`).
///   - fileNameOrExtension: a hint (`.p12`, `.pfx`, `.pem`, `.cer`, `.der`, `.crt`, `.key`); the bytes decide.
///   - inputFormat: in, the format or `.formatUnknown`; out, the format found.
///   - itemType: in, ignored; out, what was found (`.itemTypeAggregate` for several or an identity).
///   - keyParams: the PKCS#12 passphrase (a CFString).
///   - importKeychain: when given, every item is added to it; one that is there already
///     (`errSecDuplicateItem`) is not an error.
///   - outItems: the items, as ``SecCertificate``, ``SecKey`` and ``SecIdentity``.
/// - Returns: `errSecSuccess`; `errSecUnknownFormat` (nothing readable), `errSecUnsupportedFormat` (a format not
///   read here), `errSecPassphraseRequired` (PKCS#12 without a passphrase), `errSecAuthFailed` (a wrong one),
///   `errSecDecode`, or the keychain's status — and then nothing is added.
@discardableResult
public func SecItemImport(
    _ importedData: CFData, _ fileNameOrExtension: CFString?, _ inputFormat: UnsafeMutablePointer<SecExternalFormat>?,
    _ itemType: UnsafeMutablePointer<SecExternalItemType>?, _ flags: SecItemImportExportFlags,
    _ keyParams: UnsafePointer<SecItemImportExportKeyParameters>?, _ importKeychain: SecKeychain?, _ outItems: UnsafeMutablePointer<CFArray?>?
) -> OSStatus {
    importItems(importedData, inputFormat, itemType, keyParams?.pointee.passphrase?.takeUnretainedValue(), importKeychain, outItems)
}

/// The older form of ``SecItemImport(_:_:_:_:_:_:_:_:)`` (macOS before 10.7), with the same behaviour.
@discardableResult
public func SecKeychainItemImport(
    _ importedData: CFData, _ fileNameOrExtension: CFString?, _ inputFormat: UnsafeMutablePointer<SecExternalFormat>?,
    _ itemType: UnsafeMutablePointer<SecExternalItemType>?, _ flags: SecItemImportExportFlags,
    _ keyParams: UnsafePointer<SecKeyImportExportParameters>?, _ importKeychain: SecKeychain?, _ outItems: UnsafeMutablePointer<CFArray?>?
) -> OSStatus {
    importItems(importedData, inputFormat, itemType, keyParams?.pointee.passphrase?.takeUnretainedValue(), importKeychain, outItems)
}

private func importItems(
    _ data: CFData, _ inputFormat: UnsafeMutablePointer<SecExternalFormat>?, _ itemType: UnsafeMutablePointer<SecExternalItemType>?,
    _ passphrase: CFTypeRef?, _ keychain: SecKeychain?, _ outItems: UnsafeMutablePointer<CFArray?>?
) -> OSStatus {
    outItems?.pointee = nil
    let bytes = data.copiedBytes
    let asked = inputFormat?.pointee ?? .formatUnknown
    var password: String?
    if let passphrase {
        guard let text = stringValue(passphrase) else { return errSecParam }
        password = text
    }
    let items: [AnyObject]
    let format: SecExternalFormat
    do {
        (items, format) = try readItems(bytes, asked, password)
    } catch let error as StatusError {
        return error.status
    } catch {
        return errSecDecode
    }
    if let keychain {
        var added: [AnyObject] = []
        for item in items {
            let status = SecItemAdd([kSecValueRef as String: item, kSecUseKeychain as String: keychain] as CFDictionary, nil)
            if status == errSecDuplicateItem { continue }
            guard status == errSecSuccess else {
                for done in added { _ = SecItemDelete([kSecValueRef as String: done, kSecUseKeychain as String: keychain] as CFDictionary) }
                return status
            }
            added.append(item)
        }
    }
    inputFormat?.pointee = format
    itemType?.pointee = items.count != 1 || items[0] is SecIdentity ? .itemTypeAggregate
        : items[0] is SecCertificate ? .itemTypeCertificate
        : (items[0] as? SecKey)?.key.isPrivate == true ? .itemTypePrivateKey : .itemTypePublicKey
    outItems?.pointee = NSArray(array: items)
    return errSecSuccess
}

/// The items of `bytes` in `format` (found from the bytes when unknown), and the format.
private func readItems(_ bytes: Data, _ format: SecExternalFormat, _ password: String?) throws -> ([AnyObject], SecExternalFormat) {
    // PEM: an armour line in the first 4 KiB (text may come before it, as openssl writes "Bag Attributes").
    let isPEM = String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN ")
    switch format {
    case .formatUnknown:
        if isPEM { return (try readPEM(bytes), .formatPEMSequence) }
        if let certificate = SecCertificateCreateWithData(nil, bytes as NSData) { return ([certificate], .formatX509Cert) }
        if let key = readKey(bytes) { return ([key], .formatOpenSSL) }
        if password != nil { return (try readPKCS12(bytes, password), .formatPKCS12) }
        // PKCS#12 begins with a SEQUENCE holding INTEGER 3: it needs a passphrase to go further.
        if bytes.starts(with: [0x30]) && bytes.range(of: Data([0x02, 0x01, 0x03])).map({ $0.lowerBound < 8 }) == true {
            throw StatusError(errSecPassphraseRequired, "a PKCS#12 file needs its passphrase")
        }
        throw StatusError(errSecUnknownFormat, "no certificate, key or PKCS#12 file could be read")
    case .formatX509Cert:
        if isPEM { return (try readPEM(bytes), .formatPEMSequence) }
        guard let certificate = SecCertificateCreateWithData(nil, bytes as NSData) else { throw StatusError(errSecUnknownFormat, "no certificate, key or PKCS#12 file could be read") }
        return ([certificate], .formatX509Cert)
    case .formatOpenSSL:
        if isPEM { return (try readPEM(bytes), .formatPEMSequence) }
        guard let key = readKey(bytes) else { throw StatusError(errSecUnknownFormat, "no certificate, key or PKCS#12 file could be read") }
        return ([key], .formatOpenSSL)
    case .formatPEMSequence:
        return (try readPEM(bytes), .formatPEMSequence)
    case .formatPKCS12:
        return (try readPKCS12(bytes, password), .formatPKCS12)
    default:
        throw StatusError(errSecUnsupportedFormat, "a format not read or written here")
    }
}

/// A private key (PKCS#1, SEC 1 or PKCS#8, DER or PEM) or a public key (SubjectPublicKeyInfo DER).
private func readKey(_ bytes: Data) -> SecKey? {
    if let key = try? AsymmetricKey(privateKeyFile: bytes) { return SecKey(key) }
    if let key = try? AsymmetricKey(subjectPublicKeyInfo: bytes) { return SecKey(key) }
    return nil
}

/// Every block of a PEM file: certificates, private keys and public keys; other blocks are passed over.
private func readPEM(_ bytes: Data) throws -> [AnyObject] {
    let text = String(decoding: bytes, as: UTF8.self)
    var items: [AnyObject] = []
    var remainder = Substring(text)
    while let begin = remainder.range(of: "-----BEGIN ") {
        guard let labelEnd = remainder[begin.upperBound...].range(of: "-----") else { break }
        let label = String(remainder[begin.upperBound..<labelEnd.lowerBound])
        guard let end = remainder[labelEnd.upperBound...].range(of: "-----END \(label)-----") else {
            throw StatusError(errSecDecode, "a malformed PEM block")
        }
        let block = remainder[begin.lowerBound..<end.upperBound]
        let body = remainder[labelEnd.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        remainder = remainder[end.upperBound...]
        switch label {
        case "CERTIFICATE", "X509 CERTIFICATE", "TRUSTED CERTIFICATE":
            guard let der = Data(base64Encoded: String(body)), let certificate = SecCertificateCreateWithData(nil, der as NSData) else {
                throw StatusError(errSecDecode, "a malformed PEM block")
            }
            items.append(certificate)
        case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
            guard let key = try? AsymmetricKey(privateKeyFile: Data(block.utf8)) else { throw StatusError(errSecDecode, "a malformed PEM block") }
            items.append(SecKey(key))
        case "PUBLIC KEY":
            guard let der = Data(base64Encoded: String(body)), let key = try? AsymmetricKey(subjectPublicKeyInfo: der) else {
                throw StatusError(errSecDecode, "a malformed PEM block")
            }
            items.append(SecKey(key))
        case "ENCRYPTED PRIVATE KEY":
            throw StatusError(errSecUnsupportedFormat, "a format not read or written here")
        default:
            continue
        }
    }
    guard !items.isEmpty else { throw StatusError(errSecUnknownFormat, "no certificate, key or PKCS#12 file could be read") }
    return items
}

/// The identities and the other certificates of a PKCS#12 file.
private func readPKCS12(_ bytes: Data, _ password: String?) throws -> [AnyObject] {
    guard let password else { throw StatusError(errSecPassphraseRequired, "a PKCS#12 file needs its passphrase") }
    var found: CFArray?
    let status = SecPKCS12Import(bytes as NSData, [kSecImportExportPassphrase as String: password] as CFDictionary, &found)
    guard status == errSecSuccess else { throw StatusError(status, "the PKCS#12 import failed") }
    var items: [AnyObject] = []
    for case let entry as NSDictionary in found ?? NSArray() {
        guard let identity = entry[kSecImportItemIdentity] as? SecIdentity else { continue }
        items.append(identity)
        for case let certificate as SecCertificate in (entry[kSecImportItemCertChain] as? NSArray) ?? NSArray()
        where certificate != identity.certificate {
            items.append(certificate)
        }
    }
    guard !items.isEmpty else { throw StatusError(errSecUnknownFormat, "no certificate, key or PKCS#12 file could be read") }
    return items
}

// MARK: Export

/// Writes certificates, keys and identities out (macOS).
/// - Parameters:
///   - secItemOrArray: a ``SecCertificate``, ``SecKey`` or ``SecIdentity``, or an array of them.
///   - outputFormat: `.formatX509Cert` (one certificate, DER), `.formatOpenSSL` (one key: a private key in OpenSSL's
///     traditional DER, a public key as SubjectPublicKeyInfo), `.formatPEMSequence` (everything, PEM), `.formatPKCS12`
///     (identities and certificates, with the passphrase of `keyParams`), or `.formatUnknown` for the item's
///     default (as Apple's: X509Cert for a certificate, OpenSSL for a key, PKCS12 for an identity).
///   - flags: `.pemArmour` for PEM output of a single certificate or key.
///   - keyParams: the PKCS#12 passphrase (a CFString).
///   - exportedData: on return, the bytes.
/// - Returns: `errSecSuccess`; `errSecParam` (no item, or an item of another type), `errSecUnsupportedFormat` (a
///   format not written here, or one that does not fit the items), `errSecPassphraseRequired` (PKCS#12 without a
///   passphrase), `errSecDataNotAvailable` (a private key held by the keychain service, which never leaves it).
@discardableResult
public func SecItemExport(
    _ secItemOrArray: CFTypeRef, _ outputFormat: SecExternalFormat, _ flags: SecItemImportExportFlags,
    _ keyParams: UnsafePointer<SecItemImportExportKeyParameters>?, _ exportedData: UnsafeMutablePointer<CFData?>
) -> OSStatus {
    exportItems(secItemOrArray, outputFormat, flags, keyParams?.pointee.passphrase?.takeUnretainedValue(), exportedData)
}

/// The older form of ``SecItemExport(_:_:_:_:_:)`` (macOS before 10.7), with the same behaviour.
@discardableResult
public func SecKeychainItemExport(
    _ keychainItemOrArray: CFTypeRef, _ outputFormat: SecExternalFormat, _ flags: SecItemImportExportFlags,
    _ keyParams: UnsafePointer<SecKeyImportExportParameters>?, _ exportedData: UnsafeMutablePointer<CFData?>
) -> OSStatus {
    exportItems(keychainItemOrArray, outputFormat, flags, keyParams?.pointee.passphrase?.takeUnretainedValue(), exportedData)
}

private func exportItems(
    _ itemOrArray: CFTypeRef, _ format: SecExternalFormat, _ flags: SecItemImportExportFlags, _ passphrase: CFTypeRef?,
    _ exportedData: UnsafeMutablePointer<CFData?>
) -> OSStatus {
    exportedData.pointee = nil
    let items: [AnyObject] = (itemOrArray as? NSArray).map { $0.map { $0 as AnyObject } } ?? [itemOrArray]
    guard !items.isEmpty, items.allSatisfy({ $0 is SecCertificate || $0 is SecKey || $0 is SecIdentity }) else { return errSecParam }
    var format = format
    if format == .formatUnknown {
        format = items.count > 1 ? .formatPEMSequence
            : items[0] is SecCertificate ? .formatX509Cert : items[0] is SecKey ? .formatOpenSSL : .formatPKCS12
    }
    do {
        let pem = flags.contains(.pemArmour)
        switch format {
        case .formatX509Cert:
            guard items.count == 1, let certificate = items[0] as? SecCertificate else { return errSecUnsupportedFormat }
            let der = certificate.certificate.derEncoded
            exportedData.pointee = (pem ? Data(PEM.encode(der, label: "CERTIFICATE").utf8) : der) as NSData
        case .formatOpenSSL:
            guard items.count == 1, let key = items[0] as? SecKey else { return errSecUnsupportedFormat }
            let (der, label) = try keyDER(key)
            exportedData.pointee = (pem ? Data(PEM.encode(der, label: label).utf8) : der) as NSData
        case .formatPEMSequence:
            var text = ""
            for item in items {
                switch item {
                case let certificate as SecCertificate: text += PEM.encode(certificate.certificate.derEncoded, label: "CERTIFICATE")
                case let key as SecKey:
                    let (der, label) = try keyDER(key)
                    text += PEM.encode(der, label: label)
                case let identity as SecIdentity:
                    text += PEM.encode(identity.certificate.certificate.derEncoded, label: "CERTIFICATE")
                    let (der, label) = try keyDER(identity.privateKey)
                    text += PEM.encode(der, label: label)
                default: return errSecParam
                }
            }
            exportedData.pointee = Data(text.utf8) as NSData
        case .formatPKCS12:
            guard let passphrase else { return errSecPassphraseRequired }
            guard let password = stringValue(passphrase) else { return errSecParam }
            let identities = items.compactMap { $0 as? SecIdentity }
            guard identities.count == 1, let identity = identities.first else { return errSecUnsupportedFormat }
            guard !identity.privateKey.key.isHeldElsewhere else { return errSecDataNotAvailable }
            let chain = items.compactMap { ($0 as? SecCertificate)?.certificate }
            let der = try PKCS12.export(
                certificate: identity.certificate.certificate, privateKey: identity.privateKey.key, chain: chain, passphrase: password)
            exportedData.pointee = der as NSData
        default:
            return errSecUnsupportedFormat
        }
        return errSecSuccess
    } catch let error as StatusError {
        return error.status
    } catch {
        return errSecInternalComponent
    }
}

/// A key's DER and PEM label: a private key in OpenSSL's traditional form, a public key as SubjectPublicKeyInfo.
private func keyDER(_ key: SecKey) throws -> (Data, String) {
    if key.key.isPrivate {
        guard !key.key.isHeldElsewhere else { throw StatusError(errSecDataNotAvailable, "a private key held elsewhere (the keychain service, a TPM) never leaves it") }
        return (try key.key.traditionalPrivateKey(), key.key.type == .rsa ? "RSA PRIVATE KEY" : "EC PRIVATE KEY")
    }
    return (try key.key.subjectPublicKeyInfo(), "PUBLIC KEY")
}
