public import Foundation

// The Core Foundation calls code written for Apple platforms makes on what the Security calls return: a CFError's
// code, domain, user info and description, and CFGetTypeID against the Security types' type identifiers, with
// MacTypes' `noErr`. (`CFRetain`/`CFRelease` are not here: Swift on Apple platforms manages CF objects itself and
// marks `CFRelease` unavailable, so Apple-platform Swift code does not call it.)

/// MacTypes' `noErr`, as the Darwin overlay declares it for Swift: an `OSStatus`, so that a property or variable of
/// type `OSStatus` can start from it.
public var noErr: OSStatus { 0 }

/// A Core Foundation type's identifier, as ``CFGetTypeID(_:)`` answers it.
public typealias CFTypeID = UInt
public typealias CFErrorDomain = CFString

/// The error's code (for a Security error, its `OSStatus`).
@discardableResult
public func CFErrorGetCode(_ err: CFError!) -> CFIndex { err.code }

/// The error's domain (`kCFErrorDomainOSStatus` for a Security error).
@discardableResult
public func CFErrorGetDomain(_ err: CFError!) -> CFErrorDomain! { err.domain as NSString }

/// The error's user info, a copy.
@discardableResult
public func CFErrorCopyUserInfo(_ err: CFError!) -> CFDictionary! { NSDictionary(dictionary: err.userInfo) }

/// A description of the error for a person (its localized description).
@discardableResult
public func CFErrorCopyDescription(_ err: CFError!) -> CFString! { err.localizedDescription as NSString }

/// Why the error happened, when the error says (nil otherwise).
@discardableResult
public func CFErrorCopyFailureReason(_ err: CFError!) -> CFString! { err.localizedFailureReason.map { $0 as NSString } }

/// What might be done about it, when the error says (nil otherwise).
@discardableResult
public func CFErrorCopyRecoverySuggestion(_ err: CFError!) -> CFString! { err.localizedRecoverySuggestion.map { $0 as NSString } }

/// The kinds CFGetTypeID tells apart, each with a fixed identifier (the order of this list; stable within a
/// release, not across releases, as Core Foundation's are not promised to be either).
private enum TypeKind: CFTypeID {
    case string = 7, array, dictionary, data, number, boolean, date, error
    case certificate = 100, identity, key, policy, trust, keychain, keychainItem, access, acl, trustedApplication, accessControl, sslContext
    case other = 999
}

/// Which of the Core Foundation and Security types `cf` is.
private func kind(_ cf: CFTypeRef) -> TypeKind {
    switch cf {
    case is SecCertificate: .certificate
    case is SecIdentity: .identity
    case is SecKey: .key
    case is SecPolicy: .policy
    case is SecTrust: .trust
    case is SecKeychain: .keychain
    case is SecKeychainItem: .keychainItem
    case is SecAccess: .access
    case is SecACL: .acl
    case is SecTrustedApplication: .trustedApplication
    case is SecAccessControl: .accessControl
    case is SSLContext: .sslContext
    // NSNumber's booleans are a boolean's, as CFBooleanRef's are kCFBooleanTrue/False (not numbers).
    case let number as NSNumber where number === kCFBooleanTrue || number === kCFBooleanFalse: .boolean
    case is NSString: .string
    case is NSArray: .array
    case is NSDictionary: .dictionary
    case is NSData: .data
    case is NSNumber: .number
    case is NSDate: .date
    case is NSError: .error
    default: .other
    }
}

/// The type identifier of `cf`, to compare with a type's `…GetTypeID()`.
@discardableResult
public func CFGetTypeID(_ cf: CFTypeRef!) -> CFTypeID { kind(cf).rawValue }

@discardableResult
public func CFStringGetTypeID() -> CFTypeID { TypeKind.string.rawValue }
@discardableResult
public func CFArrayGetTypeID() -> CFTypeID { TypeKind.array.rawValue }
@discardableResult
public func CFDictionaryGetTypeID() -> CFTypeID { TypeKind.dictionary.rawValue }
@discardableResult
public func CFDataGetTypeID() -> CFTypeID { TypeKind.data.rawValue }
@discardableResult
public func CFNumberGetTypeID() -> CFTypeID { TypeKind.number.rawValue }
@discardableResult
public func CFBooleanGetTypeID() -> CFTypeID { TypeKind.boolean.rawValue }
@discardableResult
public func CFDateGetTypeID() -> CFTypeID { TypeKind.date.rawValue }
@discardableResult
public func CFErrorGetTypeID() -> CFTypeID { TypeKind.error.rawValue }
@discardableResult
public func SecCertificateGetTypeID() -> CFTypeID { TypeKind.certificate.rawValue }
@discardableResult
public func SecIdentityGetTypeID() -> CFTypeID { TypeKind.identity.rawValue }
@discardableResult
public func SecKeyGetTypeID() -> CFTypeID { TypeKind.key.rawValue }
@discardableResult
public func SecPolicyGetTypeID() -> CFTypeID { TypeKind.policy.rawValue }
@discardableResult
public func SecTrustGetTypeID() -> CFTypeID { TypeKind.trust.rawValue }
@discardableResult
public func SecKeychainGetTypeID() -> CFTypeID { TypeKind.keychain.rawValue }
@discardableResult
public func SecKeychainItemGetTypeID() -> CFTypeID { TypeKind.keychainItem.rawValue }
@discardableResult
public func SecAccessGetTypeID() -> CFTypeID { TypeKind.access.rawValue }
@discardableResult
public func SecACLGetTypeID() -> CFTypeID { TypeKind.acl.rawValue }
@discardableResult
public func SecTrustedApplicationGetTypeID() -> CFTypeID { TypeKind.trustedApplication.rawValue }
@discardableResult
public func SecAccessControlGetTypeID() -> CFTypeID { TypeKind.accessControl.rawValue }
/// The type identifier of a Secure Transport context (``SSLContext``).
@discardableResult
public func SSLContextGetTypeID() -> CFTypeID { TypeKind.sslContext.rawValue }
