public import Foundation
import Keychain
import Synchronization

// The desktop keychain's access control lists (Apple's SecAccess.h, SecACL.h, SecTrustedApplication.h): an item's
// SecAccess holds ACL entries, each authorizing operations for a list of trusted applications, identified by the
// SHA-256 of their executables. Where macOS would show a dialog to an application the list does not trust, the
// call fails with errSecInteractionNotAllowed. Enforced by the keychain service (securityd), which knows its
// caller from the kernel; advisory in an embedded keychain, whose process holds the key file itself.

/// An application an access control list trusts: a path and the SHA-256 its executable had when the object was
/// made (Apple's `SecTrustedApplicationRef`).
public final class SecTrustedApplication: Sendable, CustomStringConvertible {
    let application: Mutex<ItemAccess.Application>

    init(_ application: ItemAccess.Application) { self.application = Mutex(application) }

    var value: ItemAccess.Application { application.withLock { $0 } }
    public var description: String { "<SecTrustedApplication \(value)>" }
}
public typealias SecTrustedApplicationRef = SecTrustedApplication

/// An item's access control list (Apple's `SecAccessRef`): its entries, in order.
public final class SecAccess: Sendable, CustomStringConvertible {
    let entries: Mutex<[SecACL]>

    init(_ access: ItemAccess) {
        entries = Mutex([])
        let acls = access.entries.map { SecACL($0, in: self) }
        entries.withLock { $0 = acls }
    }

    var value: ItemAccess { ItemAccess(entries: entries.withLock { $0 }.map(\.value)) }
    public var description: String { "<SecAccess \(entries.withLock { $0.count }) entries>" }
}

/// One entry of a SecAccess (Apple's `SecACLRef`): changes to it change its access.
public final class SecACL: Sendable, CustomStringConvertible {
    let entry: Mutex<ItemAccess.Entry>
    weak let access: SecAccess?

    init(_ entry: ItemAccess.Entry, in access: SecAccess) {
        self.entry = Mutex(entry)
        self.access = access
    }

    var value: ItemAccess.Entry { entry.withLock { $0 } }
    public var description: String { "<SecACL \(value.authorizations.map(\.rawValue).joined(separator: ","))>" }
}

/// Apple's prompt selector bits (kept with an entry; there is no prompt).
public typealias SecKeychainPromptSelector = UInt16
public let kSecKeychainPromptRequirePassphase: SecKeychainPromptSelector = 0x0001
public let kSecKeychainPromptUnsigned: SecKeychainPromptSelector = 0x0010
public let kSecKeychainPromptUnsignedAct: SecKeychainPromptSelector = 0x0020
public let kSecKeychainPromptInvalid: SecKeychainPromptSelector = 0x0040
public let kSecKeychainPromptInvalidAct: SecKeychainPromptSelector = 0x0080

nonisolated(unsafe) public let kSecACLAuthorizationAny: CFString = "ACLAuthorizationAny"
nonisolated(unsafe) public let kSecACLAuthorizationLogin: CFString = "ACLAuthorizationLogin"
nonisolated(unsafe) public let kSecACLAuthorizationGenKey: CFString = "ACLAuthorizationGenKey"
nonisolated(unsafe) public let kSecACLAuthorizationDelete: CFString = "ACLAuthorizationDelete"
nonisolated(unsafe) public let kSecACLAuthorizationDerive: CFString = "ACLAuthorizationDerive"
nonisolated(unsafe) public let kSecACLAuthorizationEncrypt: CFString = "ACLAuthorizationEncrypt"
nonisolated(unsafe) public let kSecACLAuthorizationDecrypt: CFString = "ACLAuthorizationDecrypt"
nonisolated(unsafe) public let kSecACLAuthorizationExportWrapped: CFString = "ACLAuthorizationExportWrapped"
nonisolated(unsafe) public let kSecACLAuthorizationExportClear: CFString = "ACLAuthorizationExportClear"
nonisolated(unsafe) public let kSecACLAuthorizationImportWrapped: CFString = "ACLAuthorizationImportWrapped"
nonisolated(unsafe) public let kSecACLAuthorizationImportClear: CFString = "ACLAuthorizationImportClear"
nonisolated(unsafe) public let kSecACLAuthorizationSign: CFString = "ACLAuthorizationSign"
nonisolated(unsafe) public let kSecACLAuthorizationVerify: CFString = "ACLAuthorizationVerify"
nonisolated(unsafe) public let kSecACLAuthorizationMAC: CFString = "ACLAuthorizationMAC"
nonisolated(unsafe) public let kSecACLAuthorizationMACVerify: CFString = "ACLAuthorizationMACVerify"
nonisolated(unsafe) public let kSecACLAuthorizationChangeACL: CFString = "ACLAuthorizationChangeACL"
nonisolated(unsafe) public let kSecACLAuthorizationChangeOwner: CFString = "ACLAuthorizationChangeOwner"
nonisolated(unsafe) public let kSecACLAuthorizationIntegrity: CFString = "ACLAuthorizationIntegrity"
nonisolated(unsafe) public let kSecACLAuthorizationPartitionID: CFString = "ACLAuthorizationPartitionID"

// MARK: Trusted applications

/// A trusted application for the executable at `path` (nil: this process's), identified by its SHA-256 now.
/// - Returns: `errSecSuccess`; `errSecParam` when the file cannot be read or is not a regular file.
@discardableResult
public func SecTrustedApplicationCreateFromPath(_ path: UnsafePointer<CChar>?, _ app: UnsafeMutablePointer<SecTrustedApplication?>) -> OSStatus {
    keychainCall {
        let application = try path.map { try ItemAccess.Application(path: String(cString: $0)) } ?? ItemAccess.Application.current
        app.pointee = SecTrustedApplication(application)
    }
}

/// The application's data: its path, NUL-terminated (as Apple's call gives it).
@discardableResult
public func SecTrustedApplicationCopyData(_ appRef: SecTrustedApplication, _ data: UnsafeMutablePointer<CFData?>) -> OSStatus {
    data.pointee = NSData(data: Data(appRef.value.path.utf8) + [0])
    return errSecSuccess
}

/// Points the application at the executable whose path `data` holds (NUL-terminated or not), identified by its
/// SHA-256 now.
/// - Returns: `errSecSuccess`; `errSecParam` when that file cannot be read (the object is unchanged).
@discardableResult
public func SecTrustedApplicationSetData(_ appRef: SecTrustedApplication, _ data: CFData) -> OSStatus {
    keychainCall {
        var bytes = Data(referencing: data)
        if bytes.last == 0 { bytes.removeLast() }
        guard let path = String(data: bytes, encoding: .utf8), !path.isEmpty, !path.contains("\0") else {
            throw KeychainError(.parameter, "the data is not a path")
        }
        let application = try ItemAccess.Application(path: path)
        appRef.application.withLock { $0 = application }
    }
}

// MARK: Access objects

/// The applications of a CF array of SecTrustedApplication.
private func applications(_ list: CFArray?) throws -> [ItemAccess.Application]? {
    try list.map { list in
        try list.map { member in
            guard let application = member as? SecTrustedApplication else {
                throw KeychainError(.parameter, "a trusted-application list holds something else")
            }
            return application.value
        }
    }
}

/// A new access whose entries are Apple's `SecAccessCreate`'s: any application may change the item's secret;
/// the applications of `trustedlist` (nil: this process's alone; empty: none) may read and use it and delete the
/// item; only this process's application may change the list.
/// - Returns: `errSecSuccess`; `errSecParam` when `trustedlist` holds anything but SecTrustedApplication.
@discardableResult
public func SecAccessCreate(_ descriptor: CFString, _ trustedlist: CFArray?, _ accessRef: UnsafeMutablePointer<SecAccess?>) -> OSStatus {
    keychainCall {
        let owner = try ItemAccess.Application.current
        let trusted = try applications(trustedlist) ?? [owner]
        accessRef.pointee = SecAccess(.standard(description: descriptor as String, trusted: trusted, owner: owner))
    }
}

/// The access's entries, in order (changes to them change the access).
@discardableResult
public func SecAccessCopyACLList(_ accessRef: SecAccess, _ aclList: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    aclList.pointee = accessRef.entries.withLock { NSArray(array: $0) }
    return errSecSuccess
}

/// The entries that authorize `authorizationTag` (a `kSecACLAuthorization…` string), or nil when none does.
@discardableResult
public func SecAccessCopyMatchingACLList(_ accessRef: SecAccess, _ authorizationTag: CFTypeRef) -> CFArray? {
    guard let tag = authorizationTag as? String, let authorization = ItemAccess.Authorization(rawValue: tag) else { return nil }
    let matching = accessRef.entries.withLock { $0 }.filter { $0.value.authorizations.contains(authorization) }
    return matching.isEmpty ? nil : NSArray(array: matching)
}

// MARK: Entries

/// Adds a new entry to `access`, trusting `applicationList` (nil: any application), with no authorizations until
/// ``SecACLUpdateAuthorizations(_:_:)`` gives some.
@discardableResult
public func SecACLCreateWithSimpleContents(
    _ access: SecAccess, _ applicationList: CFArray?, _ description: CFString, _ promptSelector: SecKeychainPromptSelector,
    _ newAcl: UnsafeMutablePointer<SecACL?>
) -> OSStatus {
    keychainCall {
        let entry = ItemAccess.Entry(
            authorizations: [], applications: try applications(applicationList), description: description as String,
            promptSelector: promptSelector)
        let acl = SecACL(entry, in: access)
        access.entries.withLock { $0.append(acl) }
        newAcl.pointee = acl
    }
}

/// Removes the entry from its access.
/// - Returns: `errSecSuccess`; `errSecParam` when it was already removed.
@discardableResult
public func SecACLRemove(_ aclRef: SecACL) -> OSStatus {
    keychainCall {
        guard let access = aclRef.access,
            access.entries.withLock({ entries in entries.firstIndex { $0 === aclRef }.map { entries.remove(at: $0) } }) != nil
        else { throw KeychainError(.parameter, "the entry belongs to no access") }
    }
}

/// The entry's trusted applications (nil: any application), description and prompt selector.
@discardableResult
public func SecACLCopyContents(
    _ acl: SecACL, _ applicationList: UnsafeMutablePointer<CFArray?>, _ description: UnsafeMutablePointer<CFString?>,
    _ promptSelector: UnsafeMutablePointer<SecKeychainPromptSelector>
) -> OSStatus {
    let entry = acl.value
    applicationList.pointee = entry.applications.map { NSArray(array: $0.map { SecTrustedApplication($0) }) }
    description.pointee = entry.description as NSString
    promptSelector.pointee = entry.promptSelector
    return errSecSuccess
}

/// Replaces the entry's trusted applications (nil: any application), description and prompt selector.
@discardableResult
public func SecACLSetContents(
    _ acl: SecACL, _ applicationList: CFArray?, _ description: CFString, _ promptSelector: SecKeychainPromptSelector
) -> OSStatus {
    keychainCall {
        let applications = try applications(applicationList)
        acl.entry.withLock { entry in
            entry.applications = applications
            entry.description = description as String
            entry.promptSelector = promptSelector
        }
    }
}

/// The entry's authorizations, as `kSecACLAuthorization…` strings.
@discardableResult
public func SecACLCopyAuthorizations(_ acl: SecACL) -> CFArray {
    NSArray(array: acl.value.authorizations.map { $0.rawValue as NSString })
}

/// Replaces the entry's authorizations with `authorizations` (`kSecACLAuthorization…` strings).
/// - Returns: `errSecSuccess`; `errSecParam` for anything else in the array (the entry is unchanged).
@discardableResult
public func SecACLUpdateAuthorizations(_ acl: SecACL, _ authorizations: CFArray) -> OSStatus {
    keychainCall {
        let tags = try authorizations.map { member in
            guard let tag = member as? String, let authorization = ItemAccess.Authorization(rawValue: tag) else {
                throw KeychainError(.parameter, "not a kSecACLAuthorization value")
            }
            return authorization
        }
        acl.entry.withLock { $0.authorizations = tags }
    }
}

// MARK: Items

/// The item's access control list.
/// - Returns: `errSecSuccess`; `errSecNoAccessForItem` when the item has none (it is open to every application
///   of its access groups); `errSecItemNotFound` when it is gone.
@discardableResult
public func SecKeychainItemCopyAccess(_ itemRef: SecKeychainItem, _ access: UnsafeMutablePointer<SecAccess?>) -> OSStatus {
    var found: SecAccess?
    let status = keychainCall {
        let (store, reference) = try located(itemRef)
        let item = try store.find(ItemQuery(nil, persistentReference: reference, returning: .attributes))[0]
        guard case .data(let list) = item.attributes?[.access] else {
            throw KeychainError(.noAccessForItem, "the item has no access control list")
        }
        found = SecAccess(try ItemAccess(encoded: list))
    }
    access.pointee = found
    return status
}

/// Gives the item `access` as its access control list (an item that has one must let this application change it).
/// - Returns: `errSecSuccess`; `errSecInteractionNotAllowed` when the item's list does not let this application
///   change it, or the keychain is locked; `errSecItemNotFound`.
@discardableResult
public func SecKeychainItemSetAccess(_ itemRef: SecKeychainItem, _ access: SecAccess) -> OSStatus {
    keychainCall {
        let (store, reference) = try located(itemRef)
        try store.update(ItemQuery(nil, persistentReference: reference), attributes: [.access: .data(try access.value.encoded())])
    }
}
