public import Foundation
import Keychain
import Synchronization

// The desktop keychain's calls (Apple's SecKeychain.h) for password-locked keychains: create, open, lock, unlock,
// status, settings, password change, path and delete, and `kSecUseKeychain` to aim the SecItem calls at one. A
// keychain made here locks its secrets with its password; its attributes stay readable while it is locked.

/// A keychain file, as Apple's `SecKeychainRef`.
public final class SecKeychain: Sendable, CustomStringConvertible {
    let path: String
    /// The keychain's store, opened on first use when the reference was made from a path alone (an event's).
    private let opened: Mutex<KeychainStore?>

    init(store: KeychainStore, path: String) {
        self.path = path
        opened = Mutex(store)
    }

    init(path: String) {
        self.path = path
        opened = Mutex(nil)
    }

    func store() throws -> KeychainStore {
        try opened.withLock { opened in
            if let store = opened { return store }
            let store = try KeychainDefaults.serviceStore(for: path, create: false) ?? KeychainStore(path: path, accessGroups: KeychainDefaults.accessGroups)
            opened = store
            return store
        }
    }

    public var description: String { "<SecKeychain \(path)>" }
}

public typealias SecKeychainRef = SecKeychain
public typealias SecAccessRef = SecAccess
public typealias SecACLRef = SecACL

/// What ``SecKeychainGetStatus(_:_:)`` reports, as a bit set.
public typealias SecKeychainStatus = UInt32
public let kSecUnlockStateStatus: SecKeychainStatus = 1
public let kSecReadPermStatus: SecKeychainStatus = 2
public let kSecWritePermStatus: SecKeychainStatus = 4

/// Apple's `SecKeychainSettings`: lock on sleep, and lock after `lockInterval` seconds when `useLockInterval`.
public struct SecKeychainSettings: Sendable, Equatable {
    public var version: UInt32
    public var lockOnSleep: Bool
    public var useLockInterval: Bool
    public var lockInterval: UInt32

    public init() { self.init(version: SEC_KEYCHAIN_SETTINGS_VERS1, lockOnSleep: false, useLockInterval: false, lockInterval: 0) }

    public init(version: UInt32, lockOnSleep: Bool, useLockInterval: Bool, lockInterval: UInt32) {
        self.version = version
        self.lockOnSleep = lockOnSleep
        self.useLockInterval = useLockInterval
        self.lockInterval = lockInterval
    }
}
public let SEC_KEYCHAIN_SETTINGS_VERS1: UInt32 = 1

/// Bytes of a password given as Apple's calls give it (a length and a pointer).
private func passwordBytes(_ length: UInt32, _ password: UnsafeRawPointer?) throws -> Data {
    guard let password else {
        guard length == 0 else { throw KeychainError(.parameter, "a password length without a password") }
        return Data()
    }
    return Data(bytes: password, count: Int(length))
}

/// Runs a SecKeychain call: its status, or Apple's for the error it threw (as the SecItem calls answer).
func keychainCall(_ body: () throws -> Void) -> OSStatus {
    ItemTranslation.run(nil) {
        try body()
        return nil
    }
}

/// The keychain a call names, or the default keychain for nil.
private func keychain(_ keychain: SecKeychain?) throws -> KeychainStore {
    if let keychain { return try keychain.store() }
    return try KeychainDefaults.store()
}

/// Creates a password-locked keychain at `pathName` (unlocked) and returns it.
/// - Parameters:
///   - promptUser: true asks for the password interactively, which a library cannot: `errSecInteractionNotAllowed`.
///   - initialAccess: must be nil: a keychain's own access control list (who may unlock it without its password)
///     is not kept; items have theirs (``SecKeychainItemSetAccess(_:_:)``, `kSecAttrAccess`).
/// - Returns: `errSecSuccess`; `errSecDuplicateKeychain` when a keychain already exists there; `errSecParam` for an
///   empty password; `errSecInteractionNotAllowed`; `errSecUnimplemented` for an initial access; `errSecIO`.
@discardableResult
public func SecKeychainCreate(
    _ pathName: UnsafePointer<CChar>, _ passwordLength: UInt32, _ password: UnsafeRawPointer?, _ promptUser: Bool,
    _ initialAccess: SecAccess?, _ keychain: UnsafeMutablePointer<SecKeychain?>
) -> OSStatus {
    let path = String(cString: pathName)
    let status = keychainCall {
        guard initialAccess == nil else { throw KeychainError(.unimplemented, "a keychain's own access control list is not kept") }
        guard !promptUser else { throw KeychainError(.interactionNotAllowed, "a library cannot ask for a password") }
        let password = try passwordBytes(passwordLength, password)
        if let store = try KeychainDefaults.serviceStore(for: path, create: true) {
            // The service's keychain of that name: one that has a password already exists.
            guard !store.isPasswordLocked else { throw KeychainError(.duplicateItem, "a keychain of that name exists") }
            try store.setInitialPassword(password)
            OpenedKeychains.remember(store)
            keychain.pointee = SecKeychain(store: store, path: path)
            return
        }
        guard !FileManager.default.fileExists(atPath: path) else {
            throw KeychainError(.duplicateItem, "a keychain exists at that path")
        }
        let store = try KeychainStore.createPasswordLocked(path: path, password: password, accessGroups: KeychainDefaults.accessGroups)
        OpenedKeychains.remember(store)
        keychain.pointee = SecKeychain(store: store, path: path)
    }
    return status == errSecDuplicateItem ? errSecDuplicateKeychain : status
}

/// Opens the keychain at `pathName`.
/// - Returns: `errSecSuccess`; `errSecNoSuchKeychain` when no keychain is there (Apple's call defers that to the
///   first use; here it is said at once); `errSecIO`, `errSecDecode` for a damaged one.
@discardableResult
public func SecKeychainOpen(_ pathName: UnsafePointer<CChar>, _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    let path = String(cString: pathName)
    if KeychainDefaults.serviceMode != nil {
        let status = keychainCall {
            guard let store = try KeychainDefaults.serviceStore(for: path, create: false) else { return }
            OpenedKeychains.remember(store)
            keychain.pointee = SecKeychain(store: store, path: path)
        }
        return status == errSecItemNotFound ? errSecNoSuchKeychain : status
    }
    guard FileManager.default.fileExists(atPath: path) else { return errSecNoSuchKeychain }
    return keychainCall {
        let store = try KeychainStore(path: path, accessGroups: KeychainDefaults.accessGroups)
        OpenedKeychains.remember(store)
        keychain.pointee = SecKeychain(store: store, path: path)
    }
}

/// Locks `keychain` (nil: the default keychain) for this process: its secrets are unreadable until it is unlocked.
/// - Returns: `errSecSuccess`; `errSecParam` for a keychain that has no password.
@discardableResult
public func SecKeychainLock(_ keychain: SecKeychain?) -> OSStatus {
    keychainCall { try Security.keychain(keychain).lock() }
}

/// Locks every password-locked keychain this process has created, opened or unlocked through these calls.
@discardableResult
public func SecKeychainLockAll() -> OSStatus {
    keychainCall {
        for store in OpenedKeychains.all where store.isPasswordLocked { try store.lock() }
    }
}

/// Unlocks `keychain` (nil: the default keychain) with its password.
/// - Parameter usePassword: false asks for the password interactively, which a library cannot.
/// - Returns: `errSecSuccess`; `errSecAuthFailed` for a wrong password (each one in a row waits longer);
///   `errSecInteractionNotAllowed` without a password; `errSecParam` for a keychain that has none.
@discardableResult
public func SecKeychainUnlock(_ keychain: SecKeychain?, _ passwordLength: UInt32, _ password: UnsafeRawPointer?, _ usePassword: Bool) -> OSStatus {
    keychainCall {
        guard usePassword else { throw KeychainError(.interactionNotAllowed, "a library cannot ask for a password") }
        let store = try Security.keychain(keychain)
        try store.unlock(password: try passwordBytes(passwordLength, password))
        OpenedKeychains.remember(store)
    }
}

/// The keychain's status: unlocked, readable and writable bits. A locked keychain is readable (its attributes)
/// and not writable.
@discardableResult
public func SecKeychainGetStatus(_ keychain: SecKeychain?, _ keychainStatus: UnsafeMutablePointer<SecKeychainStatus>) -> OSStatus {
    keychainCall {
        let locked = try Security.keychain(keychain).isLocked
        keychainStatus.pointee = kSecReadPermStatus | (locked ? 0 : kSecUnlockStateStatus | kSecWritePermStatus)
    }
}

/// Changes the keychain's password: one key is wrapped again, no item rewritten.
/// - Returns: `errSecSuccess`; `errSecAuthFailed` for a wrong old password (nothing changes); `errSecParam`.
@discardableResult
public func SecKeychainChangePassword(
    _ keychainRef: SecKeychain, _ oldPasswordLength: UInt32, _ oldPassword: UnsafeRawPointer, _ newPasswordLength: UInt32,
    _ newPassword: UnsafeRawPointer
) -> OSStatus {
    keychainCall {
        try keychainRef.store().changePassword(
            old: try passwordBytes(oldPasswordLength, oldPassword), new: try passwordBytes(newPasswordLength, newPassword))
    }
}

/// When the keychain locks itself.
@discardableResult
public func SecKeychainCopySettings(_ keychain: SecKeychain?, _ outSettings: UnsafeMutablePointer<SecKeychainSettings>) -> OSStatus {
    keychainCall {
        guard outSettings.pointee.version == SEC_KEYCHAIN_SETTINGS_VERS1 else { throw KeychainError(.parameter, "unknown settings version") }
        let settings = try Security.keychain(keychain).lockSettings()
        outSettings.pointee = SecKeychainSettings(
            version: SEC_KEYCHAIN_SETTINGS_VERS1, lockOnSleep: settings.lockOnSleep, useLockInterval: settings.interval != nil,
            lockInterval: UInt32(clamping: settings.interval?.components.seconds ?? 0))
    }
}

/// Sets when the keychain locks itself (it must be unlocked).
/// - Returns: `errSecSuccess`; `errSecInteractionNotAllowed` while locked; `errSecParam` for another version, a
///   zero interval, or a keychain without a password.
@discardableResult
public func SecKeychainSetSettings(_ keychain: SecKeychain?, _ newSettings: UnsafePointer<SecKeychainSettings>) -> OSStatus {
    keychainCall {
        let new = newSettings.pointee
        guard new.version == SEC_KEYCHAIN_SETTINGS_VERS1, !new.useLockInterval || new.lockInterval > 0 else {
            throw KeychainError(.parameter, "unknown settings version, or a zero lock interval")
        }
        try Security.keychain(keychain).setLockSettings(
            KeychainLockSettings(interval: new.useLockInterval ? .seconds(Int64(new.lockInterval)) : nil, lockOnSleep: new.lockOnSleep))
    }
}

/// The keychain's path: at most `ioPathLength` bytes with the terminating NUL; `ioPathLength` becomes the path's
/// length.
/// - Returns: `errSecSuccess`; `errSecBufferTooSmall` when it does not fit (nothing written).
@discardableResult
public func SecKeychainGetPath(_ keychain: SecKeychain?, _ ioPathLength: UnsafeMutablePointer<UInt32>, _ pathName: UnsafeMutablePointer<CChar>) -> OSStatus {
    let path = keychain?.path ?? KeychainDefaults.path
    let bytes = Array(path.utf8CString)
    guard bytes.count <= Int(ioPathLength.pointee) else { return errSecBufferTooSmall }
    bytes.withUnsafeBufferPointer { pathName.update(from: $0.baseAddress!, count: bytes.count) }  // !: never empty (the NUL)
    ioPathLength.pointee = UInt32(bytes.count - 1)
    return errSecSuccess
}

/// Deletes the keychain's files (the database, its WAL and shared memory, the key file).
/// - Returns: `errSecSuccess`; `errSecNoSuchKeychain` when there is none; `errSecInvalidKeychain` for nil.
@discardableResult
public func SecKeychainDelete(_ keychainOrArray: SecKeychain?) -> OSStatus {
    guard let keychain = keychainOrArray else { return errSecInvalidKeychain }
    if let socket = KeychainDefaults.serviceMode {
        let status = keychainCall {
            try KeychainStore.deleteServiceKeychain(named: KeychainDefaults.serviceKeychainName(for: keychain.path), service: socket)
        }
        return status == errSecItemNotFound ? errSecNoSuchKeychain : status
    }
    guard FileManager.default.fileExists(atPath: keychain.path) else { return errSecNoSuchKeychain }
    for suffix in ["", "-wal", "-shm", ".key"] { unlink(keychain.path + suffix) }
    return errSecSuccess
}

/// The keychains created, opened or unlocked through these calls, for ``SecKeychainLockAll()``.
private enum OpenedKeychains {
    private static let stores = Mutex<[ObjectIdentifier: KeychainStore]>([:])

    static func remember(_ store: KeychainStore) {
        stores.withLock { $0[ObjectIdentifier(store)] = store }
    }

    static var all: [KeychainStore] { stores.withLock { Array($0.values) } }
}

// MARK: Default keychain and search list

/// A preference domain, as Apple's `SecPreferencesDomain`: the user's and the system's keychains are kept here;
/// the common and dynamic domains have none.
public enum SecPreferencesDomain: Int32, Sendable {
    case user = 0, system = 1, common = 2, dynamic = 3

    var domain: KeychainSearchList.Domain? {
        switch self {
        case .user: .user
        case .system: .system
        case .common, .dynamic: nil
        }
    }
}

/// The keychain at `path`, as a reference (opened when first used).
private func reference(_ path: String) -> SecKeychain { SecKeychain(path: path) }

/// The user's default keychain: where new items go. In service mode without a default set, the caller's default
/// keychain in the keychain service.
@discardableResult
public func SecKeychainCopyDefault(_ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    let status = SecKeychainCopyDomainDefault(.user, keychain)
    guard status == errSecNoDefaultKeychain, KeychainDefaults.serviceMode != nil else { return status }
    return keychainCall {
        let store = try KeychainDefaults.store()
        keychain.pointee = SecKeychain(store: store, path: store.location)
    }
}

/// Makes `keychain` the user's default keychain (in the user's keychain preferences, for every process after, and
/// for this process's SecItem calls from now on).
@discardableResult
public func SecKeychainSetDefault(_ keychain: SecKeychain?) -> OSStatus {
    SecKeychainSetDomainDefault(.user, keychain)
}

/// A domain's default keychain.
/// - Returns: `errSecSuccess`; `errSecNoDefaultKeychain` when the domain has none.
@discardableResult
public func SecKeychainCopyDomainDefault(_ domain: SecPreferencesDomain, _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    var status = errSecNoDefaultKeychain
    let failure = keychainCall {
        guard let domain = domain.domain, let path = try KeychainSearchList.defaultKeychain(domain) else { return }
        keychain.pointee = reference(path)
        status = errSecSuccess
    }
    return failure == errSecSuccess ? status : failure
}

/// Sets (nil: unsets) a domain's default keychain.
/// - Returns: `errSecSuccess`; `errSecUnimplemented` for the common and dynamic domains; `errSecIO`.
@discardableResult
public func SecKeychainSetDomainDefault(_ domain: SecPreferencesDomain, _ keychain: SecKeychain?) -> OSStatus {
    keychainCall {
        guard let domain = domain.domain else { throw KeychainError(.unimplemented, "the \(domain) domain has no keychains here") }
        try KeychainSearchList.setDefaultKeychain(keychain?.path, domain)
        if domain == .user { KeychainDefaults.close() }
    }
}

/// The search list in effect: the user's (or the user's default keychain), then the system's.
@discardableResult
public func SecKeychainCopySearchList(_ searchList: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    keychainCall { searchList.pointee = NSArray(array: try KeychainSearchList.effective().map(reference)) }
}

/// Sets the user's search list.
@discardableResult
public func SecKeychainSetSearchList(_ searchList: CFArray) -> OSStatus {
    SecKeychainSetDomainSearchList(.user, searchList)
}

/// A domain's search list as set (empty when none is).
@discardableResult
public func SecKeychainCopyDomainSearchList(_ domain: SecPreferencesDomain, _ searchList: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    keychainCall {
        let paths = try domain.domain.flatMap { try KeychainSearchList.searchList($0) } ?? []
        searchList.pointee = NSArray(array: paths.map(reference))
    }
}

/// Sets a domain's search list (every member a `SecKeychain`).
/// - Returns: `errSecSuccess`; `errSecParam` for a member that is not a keychain; `errSecUnimplemented` for the
///   common and dynamic domains.
@discardableResult
public func SecKeychainSetDomainSearchList(_ domain: SecPreferencesDomain, _ searchList: CFArray) -> OSStatus {
    keychainCall {
        guard let domain = domain.domain else { throw KeychainError(.unimplemented, "the \(domain) domain has no keychains here") }
        let keychains = try searchList.map { member -> String in
            guard let keychain = member as? SecKeychain else { throw KeychainError(.parameter, "a search list member is not a SecKeychain") }
            return keychain.path
        }
        try KeychainSearchList.setSearchList(keychains, domain)
    }
}

/// The user's login keychain (the default keychain unless set otherwise).
@discardableResult
public func SecKeychainCopyLogin(_ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    var status = errSecNoDefaultKeychain
    let failure = keychainCall {
        guard let path = try KeychainSearchList.loginKeychain(.user) else { return }
        keychain.pointee = reference(path)
        status = errSecSuccess
    }
    return failure == errSecSuccess ? status : failure
}

/// Sets (nil: unsets) the user's login keychain.
@discardableResult
public func SecKeychainSetLogin(_ keychain: SecKeychain?) -> OSStatus {
    keychainCall { try KeychainSearchList.setLoginKeychain(keychain?.path, .user) }
}

/// The search object of macOS's SecKeychainSearch.h (`SecKeychainSearchRef`, deprecated since 10.7 for
/// `SecItemCopyMatching`). SecBase.h declares the type; the calls that make one are in SecKeychainSearch.h, which
/// is not provided, so no value of it is ever made here.
public final class SecKeychainSearch: Sendable {
    private init() {}
}

/// macOS's password object (`SecPasswordRef`, SecBase.h), made only by Apple's private SecPassword.h: declared so
/// that code naming the type compiles; no value of it is ever made here.
public final class SecPassword: Sendable {
    private init() {}
}

/// The keychains a macOS `keychainOrArray` argument names: one `SecKeychain` or an array of them (possibly empty);
/// nil for the argument's nil (the default search list); `.invalid` for anything else.
enum KeychainArgument {
    case defaultList
    case keychains([SecKeychain])
    case invalid

    init(_ keychainOrArray: CFTypeRef?) {
        switch keychainOrArray {
        case nil: self = .defaultList
        case let keychain as SecKeychain: self = .keychains([keychain])
        case let array as NSArray:
            let members = array.compactMap { $0 as? SecKeychain }
            self = members.count == array.count ? .keychains(members) : .invalid
        default: self = .invalid
        }
    }
}

