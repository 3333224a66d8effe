// Apple-platform code, unchanged: a keychain wrapper written as the popular iOS/macOS wrappers are (with the
// names such wrappers rely on: `noErr`, `kSecAttrSynchronizable` and
// `kSecAttrSynchronizableAny`, `SecAccessControl`, `SecAccessControlCreateWithFlags`, `SecAccessControlCreateFlags`,
// `kSecAttrAccessControl`, and the CFError calls). It imports only what an Apple-platform file imports.
import Foundation
import Security

public enum KeychainWrapperError: Error, Equatable {
    case unhandled(OSStatus, String)
    case accessControl(Int, String)
    case unexpectedData
}

public struct KeychainWrapper {
    public var service: String
    public var synchronizable: Bool
    public var accessGroup: String?

    public init(service: String, synchronizable: Bool = false, accessGroup: String? = nil) {
        self.service = service
        self.synchronizable = synchronizable
        self.accessGroup = accessGroup
    }

    private func baseQuery(_ account: String) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    private func message(_ status: OSStatus) -> String {
        (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
    }

    /// Stores `value`, replacing what was there; with `userPresence`, behind an access control that asks for it.
    public func set(_ value: String, for account: String, userPresence: Bool = false) throws {
        var query = baseQuery(account)
        query[kSecAttrSynchronizable as String] = synchronizable ? kCFBooleanTrue : kCFBooleanFalse
        let deleted = SecItemDelete(query as CFDictionary)
        guard deleted == noErr || deleted == errSecItemNotFound else { throw KeychainWrapperError.unhandled(deleted, message(deleted)) }

        query[kSecValueData as String] = value.data(using: .utf8)!
        if userPresence {
            var error: Unmanaged<CFError>?
            guard let access = SecAccessControlCreateWithFlags(
                kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, &error)
            else {
                let cfError = error!.takeRetainedValue()
                throw KeychainWrapperError.accessControl(CFErrorGetCode(cfError), CFErrorCopyDescription(cfError) as String)
            }
            query[kSecAttrAccessControl as String] = access
        } else {
            query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock
        }
        let status = SecItemAdd(query as CFDictionary, nil)
        guard status == noErr else { throw KeychainWrapperError.unhandled(status, message(status)) }
    }

    /// The value stored for `account`, nil when there is none; synchronizable or not.
    public func get(_ account: String) throws -> String? {
        var query = baseQuery(account)
        query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
        query[kSecReturnData as String] = kCFBooleanTrue
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        let status = withUnsafeMutablePointer(to: &result) { SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0)) }
        if status == errSecItemNotFound { return nil }
        guard status == noErr else { throw KeychainWrapperError.unhandled(status, message(status)) }
        guard let data = result as? Data, let text = String(data: data, encoding: .utf8) else { throw KeychainWrapperError.unexpectedData }
        return text
    }

    /// Every account of the service, with whether it is synchronizable.
    public func allAccounts() throws -> [(account: String, synchronizable: Bool)] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrSynchronizable as String: kSecAttrSynchronizableAny, kSecReturnAttributes as String: true,
            kSecMatchLimit as String: kSecMatchLimitAll,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        guard status == noErr, let items = result as? [[String: Any]] else { throw KeychainWrapperError.unhandled(status, message(status)) }
        return items.compactMap { item in
            guard let account = item[kSecAttrAccount as String] as? String else { return nil }
            return (account, (item[kSecAttrSynchronizable as String] as? Bool) ?? false)
        }.sorted { $0.account < $1.account }
    }

    public func remove(_ account: String) throws {
        var query = baseQuery(account)
        query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
        let status = SecItemDelete(query as CFDictionary)
        guard status == noErr || status == errSecItemNotFound else { throw KeychainWrapperError.unhandled(status, message(status)) }
    }
}

/// The shape of the most used open-source keychain wrapper: an open class that keeps the last call's status in an
/// `OSStatus` property starting as `noErr`, and answers with booleans and optionals.
open class StatusKeepingKeychain {
    open var lastResultCode: OSStatus = noErr
    public let service: String

    public init(service: String) { self.service = service }

    private func query(_ key: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key]
    }

    @discardableResult
    open func set(_ value: String, forKey key: String) -> Bool {
        SecItemDelete(query(key) as CFDictionary)
        var attributes = query(key)
        attributes[kSecValueData as String] = Data(value.utf8)
        lastResultCode = SecItemAdd(attributes as CFDictionary, nil)
        return lastResultCode == noErr
    }

    open func get(_ key: String) -> String? {
        var search = query(key)
        search[kSecReturnData as String] = kCFBooleanTrue
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        lastResultCode = withUnsafeMutablePointer(to: &result) { SecItemCopyMatching(search as CFDictionary, UnsafeMutablePointer($0)) }
        guard lastResultCode == noErr, let data = result as? Data else { return nil }
        return String(data: data, encoding: .utf8)
    }

    @discardableResult
    open func delete(_ key: String) -> Bool {
        lastResultCode = SecItemDelete(query(key) as CFDictionary)
        return lastResultCode == noErr
    }
}
