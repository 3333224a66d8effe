import Certificates
import Foundation
import Keychain
import KeychainItems
import HardwareKeys

extension KeyItemAttributes {
    /// The item of a SecKey, with its application tag and label.
    init(_ key: SecKey) throws {
        try self.init(key.key, applicationTag: key.applicationTag, label: key.label)
    }

    /// The attributes under Apple's keys, with kSecClass (as SecKeyCopyAttributes gives them).
    var appleDictionary: [String: Any] {
        var dictionary: [String: Any] = [kSecClass as String: kSecClassKey]
        for (key, value) in attributes {
            switch (key, value) {
            case (.keyClass, .number(let number)), (.keyType, .number(let number)):
                dictionary[key.rawValue] = NSString(string: String(number))
            case (_, .number(let number)): dictionary[key.rawValue] = NSNumber(value: number)
            case (_, .bool(let flag)): dictionary[key.rawValue] = NSNumber(value: flag)
            case (_, .data(let bytes)): dictionary[key.rawValue] = NSData(data: bytes)
            case (_, .string(let text)): dictionary[key.rawValue] = NSString(string: text)
            case (_, .date(let date)): dictionary[key.rawValue] = NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate)
            }
        }
        return dictionary
    }
}

// The key side of ItemReferences.
extension ItemReferences {
    /// A SecKey for a key item of `store` (its data is the key's external representation, or the public key's for a
    /// key the keychain service holds), or nil when it does not decode.
    static func keyReference(_ item: KeychainItem, from store: KeychainStore, authentication: ItemAuthentication? = nil) -> CFTypeRef? {
        StoredKey(item, from: store, authentication: authentication).map { SecKey($0.key, applicationTag: $0.applicationTag, label: $0.label) }
    }

    /// What a SecKey stands for, or nil for any other value.
    static func keyContents(_ value: Any) throws -> Contents? {
        guard let key = value as? SecKey else { return nil }
        // A key in the TPM is stored as its TPM blob; one the keychain service holds is in the keychain already; one
        // on a smart card stays on the card (found there by its token ID).
        if key.key.heldBy is PKCS11Key {
            throw KeychainError(.parameter, "the key is on a token, which keeps it: search it there (kSecAttrTokenID)")
        }
        guard !key.key.isHeldElsewhere || key.key.heldBy is TPMKey else {
            throw KeychainError(.parameter, "the key is held by the keychain service; it is in the keychain already")
        }
        let derived: KeyItemAttributes
        do {
            derived = try KeyItemAttributes(key)
        } catch {
            throw KeychainError(.parameter, "the key's attributes cannot be derived")
        }
        return Contents(itemClass: .key, data: derived.data, attributes: derived.attributes, identifying: derived.identifying)
    }
}
