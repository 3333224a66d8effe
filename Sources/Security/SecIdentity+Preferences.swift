public import Foundation

// macOS's identity and certificate preferences and system identities (SecIdentity.h, SecCertificate.h): which
// identity or certificate an application should use for a name (a host, an e-mail address, a URL). Stored as
// macOS stores them: a generic-password item per name in the keychain, its type 'iprf' (identity) or 'cprf'
// (certificate), its data the certificate's DER; an identity is found again from its certificate with
// SecIdentityCreateWithCertificate. The key-usage arguments do not narrow a preference here (macOS keeps one per
// usage; docs/apple-compatibility.md says so).

/// Creates an identity from a certificate and its private key (Apple does not check that they belong together;
/// neither does this, and a mismatched pair fails where it is used, as on Apple platforms).
/// - Returns: the identity; nil when `privateKey` is a public key.
@discardableResult
public func SecIdentityCreate(_ allocator: CFAllocator?, _ certificate: SecCertificate, _ privateKey: SecKey) -> SecIdentity? {
    guard privateKey.key.isPrivate else { return nil }
    return SecIdentity(certificate: certificate, privateKey: privateKey)
}

/// The identity of a certificate whose private key is in the keychains searched (macOS).
/// - Parameters:
///   - keychainOrArray: a ``SecKeychain``, an array of them, or nil for the default search list.
///   - identityRef: on return, the identity.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when no keychain searched holds the private key;
///   `errSecParam` for a `keychainOrArray` of another type.
@discardableResult
public func SecIdentityCreateWithCertificate(
    _ keychainOrArray: CFTypeRef?, _ certificateRef: SecCertificate, _ identityRef: UnsafeMutablePointer<SecIdentity?>
) -> OSStatus {
    identityRef.pointee = nil
    var query: [String: Any] = [
        kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
    ]
    switch KeychainArgument(keychainOrArray) {
    case .defaultList: break
    case .keychains(let keychains) where !keychains.isEmpty: query[kSecMatchSearchList as String] = NSArray(array: keychains)
    case .keychains, .invalid: return errSecParam
    }
    var found: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &found)
    guard status == errSecSuccess else { return status }
    guard let identity = (found as? NSArray)?.compactMap({ $0 as? SecIdentity }).first(where: { $0.certificate == certificateRef })
    else { return errSecItemNotFound }
    identityRef.pointee = identity
    return errSecSuccess
}

/// The four-character item types of macOS's preference items.
private enum PreferenceKind: UInt32 {
    case identity = 0x6970_7266  // 'iprf'
    case certificate = 0x6370_7266  // 'cprf'
}

/// The preference item of `kind` for `name`, as a query (in `keychain`, else the default).
private func preferenceItem(_ kind: PreferenceKind, _ name: String, in keychain: SecKeychain?) -> [String: Any] {
    var item: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: name, kSecAttrAccount as String: "",
        kSecAttrType as String: NSNumber(value: kind.rawValue),
    ]
    if let keychain { item[kSecUseKeychain as String] = keychain }
    return item
}

/// The certificate a preference item of `kind` names for `name`, in `keychain` (nil: the default).
private func preferredCertificate(_ kind: PreferenceKind, _ name: String, in keychain: SecKeychain? = nil) -> (SecCertificate?, OSStatus) {
    var query = preferenceItem(kind, name, in: keychain)
    query[kSecReturnData as String] = true
    var found: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &found)
    guard status == errSecSuccess else { return (nil, status) }
    guard let data = found as? NSData, let certificate = SecCertificateCreateWithData(nil, data) else { return (nil, errSecDecode) }
    return (certificate, errSecSuccess)
}

/// Sets (or, with nil, removes) the preference item of `kind` for `name` in `keychain` (nil: the default).
private func setPreference(_ kind: PreferenceKind, _ name: String, _ certificate: SecCertificate?, in keychain: SecKeychain? = nil) -> OSStatus {
    guard !name.isEmpty else { return errSecParam }
    let item = preferenceItem(kind, name, in: keychain)
    let deleted = SecItemDelete(item as CFDictionary)
    guard deleted == errSecSuccess || deleted == errSecItemNotFound else { return deleted }
    guard let certificate else { return errSecSuccess }
    var added = item
    added[kSecAttrLabel as String] = name
    added[kSecValueData as String] = SecCertificateCopyData(certificate)
    return SecItemAdd(added as CFDictionary, nil)
}

/// The system domain's default keychain, or the status why there is none.
private func systemKeychain() -> (SecKeychain?, OSStatus) {
    var system: SecKeychain?
    let opened = SecKeychainCopyDomainDefault(.system, &system)
    guard opened == errSecSuccess else { return (nil, opened) }
    return system.map { ($0, errSecSuccess) } ?? (nil, errSecNoSuchKeychain)
}

/// The identity preferred for `name` (macOS), or nil when none is set or its private key is not in the keychains.
/// - Parameters:
///   - name: what it is preferred for (a host, an e-mail address, a URL).
///   - keyUsage: ignored here (see the file's note).
///   - validIssuers: when given, the identity's issuer must be one of these DER names (normalized or not).
@discardableResult
public func SecIdentityCopyPreferred(_ name: CFString, _ keyUsage: CFArray?, _ validIssuers: CFArray?) -> SecIdentity? {
    guard case (let certificate?, _) = preferredCertificate(.identity, String(name)) else { return nil }
    if let validIssuers {
        let issuer = certificate.certificate.issuer
        let accepted = validIssuers.compactMap { dataValue($0) }
        guard accepted.contains(where: { $0 == issuer.derEncoded || $0 == issuer.normalizedEncoded }) else { return nil }
    }
    var identity: SecIdentity?
    return SecIdentityCreateWithCertificate(nil, certificate, &identity) == errSecSuccess ? identity : nil
}

/// Sets the identity preferred for `name` (macOS); nil removes the preference.
/// - Returns: `errSecSuccess`, `errSecParam` for an empty name, or the keychain's status.
@discardableResult
public func SecIdentitySetPreferred(_ identity: SecIdentity?, _ name: CFString, _ keyUsage: CFArray?) -> OSStatus {
    setPreference(.identity, String(name), identity?.certificate)
}

/// The certificate preferred for `name` (macOS), or nil.
@discardableResult
public func SecCertificateCopyPreferred(_ name: CFString, _ keyUsage: CFArray?) -> SecCertificate? {
    preferredCertificate(.certificate, String(name)).0
}

/// Sets the certificate preferred for `name` (macOS); nil removes the preference.
@discardableResult
public func SecCertificateSetPreferred(_ certificate: SecCertificate?, _ name: CFString, _ keyUsage: CFArray?) -> OSStatus {
    setPreference(.certificate, String(name), certificate)
}

/// The certificate preferred for `name` (macOS's older form of ``SecCertificateCopyPreferred(_:_:)``).
/// - Returns: `errSecSuccess`, or `errSecItemNotFound` when none is set.
@discardableResult
public func SecCertificateCopyPreference(_ name: CFString, _ keyUsage: UInt32, _ certificate: UnsafeMutablePointer<SecCertificate?>) -> OSStatus {
    let (found, status) = preferredCertificate(.certificate, String(name))
    certificate.pointee = found
    return status
}

/// Sets the certificate preferred for `name` (macOS's older form); `date` is ignored, as on macOS since 10.5.
@discardableResult
public func SecCertificateSetPreference(_ certificate: SecCertificate, _ name: CFString, _ keyUsage: UInt32, _ date: CFDate?) -> OSStatus {
    setPreference(.certificate, String(name), certificate)
}

/// The system-wide identity for a domain (macOS: `kSecIdentityDomainDefault`, `kSecIdentityDomainKerberosKDC`,
/// or a reverse-DNS name), kept in the system domain's default keychain; a domain without one falls back to
/// `kSecIdentityDomainDefault`, as Apple's.
/// - Parameters:
///   - actualDomain: on return, the domain whose identity was returned.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when neither the domain nor the default has one;
///   `errSecNoSuchKeychain` when no system keychain is set up.
@discardableResult
public func SecIdentityCopySystemIdentity(
    _ domain: CFString, _ idRef: UnsafeMutablePointer<SecIdentity?>, _ actualDomain: UnsafeMutablePointer<CFString?>?
) -> OSStatus {
    idRef.pointee = nil
    let (found, opened) = systemKeychain()
    guard let system = found else { return opened }
    for candidate in [String(domain), String(kSecIdentityDomainDefault)] {
        let (certificate, status) = preferredCertificate(.identity, "system identity: " + candidate, in: system)
        guard let certificate else {
            if status == errSecItemNotFound { continue }
            return status
        }
        var identity: SecIdentity?
        let created = SecIdentityCreateWithCertificate(system, certificate, &identity)
        guard created == errSecSuccess else { return created }
        idRef.pointee = identity
        actualDomain?.pointee = candidate as NSString
        return errSecSuccess
    }
    return errSecItemNotFound
}

/// Sets (nil: removes) the system-wide identity for a domain (macOS), in the system domain's default keychain,
/// which its private key must already be in. Apple requires root; here the system keychain's file permissions
/// decide.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when the identity's key is not in the system keychain;
///   `errSecNoSuchKeychain` when no system keychain is set up.
@discardableResult
public func SecIdentitySetSystemIdentity(_ domain: CFString, _ idRef: SecIdentity?) -> OSStatus {
    let (found, opened) = systemKeychain()
    guard let system = found else { return opened }
    if let idRef {
        var stored: SecIdentity?
        let status = SecIdentityCreateWithCertificate(system, idRef.certificate, &stored)
        guard status == errSecSuccess else { return status }
    }
    return setPreference(.identity, "system identity: " + String(domain), idRef?.certificate, in: system)
}

/// Adds a certificate to a keychain (macOS's older form of `SecItemAdd` with `kSecValueRef`).
/// - Parameters:
///   - keychain: the keychain, or nil for the default.
/// - Returns: `errSecSuccess`, `errSecDuplicateItem` when it is there already, or the keychain's status.
@discardableResult
public func SecCertificateAddToKeychain(_ certificate: SecCertificate, _ keychain: SecKeychain?) -> OSStatus {
    var attributes: [String: Any] = [kSecClass as String: kSecClassCertificate, kSecValueRef as String: certificate]
    if let keychain { attributes[kSecUseKeychain as String] = keychain }
    return SecItemAdd(attributes as CFDictionary, nil)
}
