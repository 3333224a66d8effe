public import Foundation
import Certificates
import Keychain
import KeychainItems

/// A certificate and its private key (Apple's SecIdentity).
public final class SecIdentity: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: both members are immutable references to immutable, thread-safe objects.
    public let certificate: SecCertificate
    public let privateKey: SecKey

    public init(certificate: SecCertificate, privateKey: SecKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    public var description: String { "<SecIdentity \(certificate.certificate.subjectSummary ?? "")>" }
}

/// The identity's certificate.
@discardableResult
public func SecIdentityCopyCertificate(_ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}

/// The identity's private key.
@discardableResult
public func SecIdentityCopyPrivateKey(_ identityRef: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>) -> OSStatus {
    privateKeyRef.pointee = identityRef.privateKey
    return errSecSuccess
}

/// The certificate's public key, or nil when its type is not supported (RSA, EC P-256/384/521 are).
@discardableResult
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    (try? certificate.certificate.publicKey()).map { SecKey($0) }
}

// MARK: PKCS#12

// nonisolated(unsafe): immutable NSString constants (Apple's values), never mutated.
/// The passphrase option of ``SecPKCS12Import(_:_:_:)``.
nonisolated(unsafe) public let kSecImportExportPassphrase: CFString = "passphrase"
/// macOS import options (Apple's values): the keychain to import into, its access, and import to memory only.
/// SecPKCS12Import here always imports to memory (nothing is added to a keychain), so they change nothing.
nonisolated(unsafe) public let kSecImportExportKeychain: CFString = "keychain"
nonisolated(unsafe) public let kSecImportExportAccess: CFString = "access"
nonisolated(unsafe) public let kSecImportToMemoryOnly: CFString = "memory"
/// macOS preferred-identity domains (Apple's values).
nonisolated(unsafe) public let kSecIdentityDomainDefault: CFString = "com.apple.systemdefault"
nonisolated(unsafe) public let kSecIdentityDomainKerberosKDC: CFString = "com.apple.kerberos.kdc"
/// The identity of an imported item (a ``SecIdentity``).
nonisolated(unsafe) public let kSecImportItemIdentity: CFString = "identity"
/// The certificates of an imported item, the identity's first.
nonisolated(unsafe) public let kSecImportItemCertChain: CFString = "chain"
/// The trust object of an imported item: a ``SecTrust`` over the identity's certificate and the file's other
/// certificates, with the basic X.509 policy (not evaluated yet).
nonisolated(unsafe) public let kSecImportItemTrust: CFString = "trust"
/// The friendly name of an imported item.
nonisolated(unsafe) public let kSecImportItemLabel: CFString = "label"
/// The local key ID of an imported item.
nonisolated(unsafe) public let kSecImportItemKeyID: CFString = "keyid"

/// Imports a PKCS#12 file into memory (nothing is added to the keychain; add the identity with `SecItemAdd`).
/// - Parameters:
///   - pkcs12_data: the file's bytes.
///   - options: `kSecImportExportPassphrase` (a string).
///   - items: on success, one dictionary per identity with `kSecImportItemIdentity`,
///     `kSecImportItemCertChain`, `kSecImportItemTrust` (a ``SecTrust`` over the chain with the basic X.509
///     policy), and `kSecImportItemLabel` and `kSecImportItemKeyID` when the file has them.
/// - Returns: `errSecSuccess`; `errSecAuthFailed` for a wrong passphrase; `errSecDecode` for a malformed file;
///   `errSecParam` for a passphrase that is not a string. Nothing is returned on failure.
@discardableResult
public func SecPKCS12Import(_ pkcs12_data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    items.pointee = nil
    var passphrase = ""
    if let value = options["passphrase"] {
        guard let text = value as? String else { return errSecParam }
        passphrase = text
    }
    let contents: PKCS12Contents?
    do {
        contents = try PKCS12.parse(pkcs12_data.copiedBytes, passphrase: passphrase)
    } catch let error as PKCS12Error {
        return error.code == .wrongPassphrase ? errSecAuthFailed : errSecDecode
    } catch {
        return errSecDecode
    }
    guard let contents else {
        items.pointee = NSArray()
        return errSecSuccess
    }
    let certificate = SecCertificate(contents.certificate)
    let chain = [certificate] + contents.chain.map { SecCertificate($0) }
    var item: [String: AnyObject] = [
        "identity": SecIdentity(certificate: certificate, privateKey: SecKey(contents.privateKey)),
        "chain": NSArray(array: chain),
        "trust": SecTrust(certificates: chain, policies: [SecPolicyCreateBasicX509()]),
    ]
    if let label = contents.label { item["label"] = NSString(string: label) }
    if let keyID = contents.keyID { item["keyid"] = NSData(data: keyID) }
    items.pointee = NSArray(array: [NSDictionary(dictionary: item)])
    return errSecSuccess
}

// MARK: Identities in the keychain

extension ItemReferences {
    /// A SecIdentity for an identity item: the certificate's DER and the private key's representation (typed by
    /// the key attributes the identity carries).
    static func makeIdentity(_ item: KeychainItem, from store: KeychainStore, authentication: ItemAuthentication? = nil) -> SecIdentity? {
        StoredIdentity(item, from: store, authentication: authentication).map { SecIdentity(certificate: SecCertificate($0.certificate), privateKey: SecKey($0.privateKey)) }
    }

    /// The two items a SecIdentity stands for, or nil for any other value.
    static func identityContents(_ value: Any) throws -> (certificate: Contents, key: Contents)? {
        guard let identity = value as? SecIdentity else { return nil }
        guard let certificate = try certificateContents(identity.certificate), let key = try keyContents(identity.privateKey)
        else { throw KeychainError(.parameter, "the identity's certificate or key cannot be stored") }
        return (certificate, key)
    }
}
