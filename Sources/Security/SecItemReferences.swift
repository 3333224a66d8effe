import Foundation
import Keychain

/// How keychain items become objects (`kSecReturnRef`) and objects become items (`kSecValueRef`), per class.
/// Each class's side lives with its type (`SecCertificate+Keychain.swift`, `SecKey+Keychain.swift`); passwords
/// have no type of their own and come back as ``SecKeychainItem``.
enum ItemReferences {
    /// What an object stands for in the keychain.
    struct Contents {
        let itemClass: ItemClass
        /// The bytes stored as the item's data.
        let data: Data
        /// The attributes derived from the object (added with it).
        let attributes: ItemAttributes
        /// The attributes that find the item in a query (its uniqueness attributes).
        let identifying: ItemAttributes
    }

    /// The object for an item of `store`.
    static func reference(for item: KeychainItem, from store: KeychainStore, authentication: ItemAuthentication? = nil) -> CFTypeRef {
        switch item.itemClass {
        case .certificate: certificateReference(item) ?? SecKeychainItem(item)
        case .key: keyReference(item, from: store, authentication: authentication) ?? SecKeychainItem(item)
        case .identity: makeIdentity(item, from: store, authentication: authentication) ?? SecKeychainItem(item)
        case .genericPassword, .internetPassword: SecKeychainItem(item)
        }
    }

    /// The item an object stands for, or `nil` when it is not a certificate, key or identity object.
    static func contents(of value: Any) throws -> Contents? {
        if let contents = try certificateContents(value) { return contents }
        if let contents = try keyContents(value) { return contents }
        return nil
    }
}
