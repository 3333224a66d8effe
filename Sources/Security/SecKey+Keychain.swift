import Foundation
import Keychain

// The key side of ItemReferences (filled in with SecKey).
extension ItemReferences {
    /// A SecKey for a key item (its data is the key's external representation).
    static func keyReference(_ item: KeychainItem) -> CFTypeRef? { nil }

    /// What a SecKey stands for, or nil for any other value.
    static func keyContents(_ value: Any) throws -> Contents? { nil }
}
