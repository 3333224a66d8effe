package import Certificates
package import Foundation
package import Keychain

/// The attributes Apple derives from a key, under the store's keys: class, type, sizes, the application label
/// (SHA-1 of the public key's external representation), and the usage flags of its class.
package struct KeyItemAttributes {
    /// The key's external representation (the item's data).
    package let data: Data
    package let attributes: ItemAttributes
    let identifying: ItemAttributes

    /// A key of the Swift API with `label`, as SecItemAdd would store it (shared with the certificate manager).
    package init(_ key: AsymmetricKey, label: String?) throws {
        try self.init(SecKey(key, applicationTag: nil, label: label))
    }

    init(_ key: SecKey) throws {
        let asymmetric = key.key
        data = try asymmetric.externalRepresentation()
        let isPrivate = asymmetric.isPrivate
        var attributes: ItemAttributes = [
            .keyClass: .number(isPrivate ? 1 : 0),
            .keyType: .number(key.keyTypeCode),
            .keySizeInBits: .number(Int64(asymmetric.sizeInBits)),
            .effectiveKeySize: .number(Int64(asymmetric.sizeInBits)),
            .applicationLabel: .data(try asymmetric.publicKeySHA1()),
            .isPermanent: .bool(true),
            .isPrivate: .bool(isPrivate),
            .isModifiable: .bool(true),
            .isSensitive: .bool(false),
            .wasAlwaysSensitive: .bool(false),
            .isExtractable: .bool(true),
            .wasNeverExtractable: .bool(false),
            .canEncrypt: .bool(!isPrivate),
            .canDecrypt: .bool(isPrivate),
            .canDerive: .bool(isPrivate),
            .canSign: .bool(isPrivate),
            .canVerify: .bool(!isPrivate),
            .canSignRecover: .bool(false),
            .canVerifyRecover: .bool(false),
            .canWrap: .bool(!isPrivate),
            .canUnwrap: .bool(isPrivate),
        ]
        if let tag = key.applicationTag { attributes[.applicationTag] = .data(tag) }
        if let label = key.label { attributes[.label] = .string(label) }
        self.attributes = attributes
        identifying = attributes.filter { [.keyClass, .applicationLabel, .keyType].contains($0.key) }
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
    /// A SecKey for a key item (its data is the key's external representation), or nil when it does not decode.
    static func keyReference(_ item: KeychainItem) -> CFTypeRef? {
        guard let data = item.data, let attributes = item.attributes else { return nil }
        let keyClass: Int64?
        switch attributes[.keyClass] {
        case .number(let number)?: keyClass = number
        case .string(let text)?: keyClass = Int64(text)
        default: keyClass = nil
        }
        let keyType: Int64?
        switch attributes[.keyType] {
        case .number(let number)?: keyType = number
        case .string(let text)?: keyType = Int64(text)
        default: keyType = nil
        }
        let type: KeyType
        switch keyType {
        case 42?: type = .rsa
        case 73?: type = .ellipticCurve
        default: return nil
        }
        guard let keyClass, keyClass == 0 || keyClass == 1,
            let key = try? AsymmetricKey(externalRepresentation: data, type: type, isPrivate: keyClass == 1)
        else { return nil }
        var tag: Data?
        if case .data(let bytes)? = attributes[.applicationTag] { tag = bytes }
        var label: String?
        if case .string(let text)? = attributes[.label] { label = text }
        return SecKey(key, applicationTag: tag, label: label)
    }

    /// What a SecKey stands for, or nil for any other value.
    static func keyContents(_ value: Any) throws -> Contents? {
        guard let key = value as? SecKey else { return nil }
        let derived: KeyItemAttributes
        do {
            derived = try KeyItemAttributes(key)
        } catch {
            throw KeychainError(.parameter, "the key's attributes cannot be derived")
        }
        return Contents(itemClass: .key, data: derived.data, attributes: derived.attributes, identifying: derived.identifying)
    }
}
