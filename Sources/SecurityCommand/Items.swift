import Foundation
import Security

/// One attribute value as SecItemCopyMatching returns it.
enum ItemValue {
    case text(String)
    case bytes(Data)
    case number(Int64)
    case date(Date)

    init?(_ value: Any) {
        if let text = value as? String {
            self = .text(text)
        } else if let bytes = value as? Data {
            self = .bytes(bytes)
        } else if let date = value as? Date {
            self = .date(date)
        } else if let number = value as? NSNumber {
            self = .number(number.int64Value)
        } else {
            return nil
        }
    }
}

/// One item as the tool shows it: its class, its attributes (Apple's four-character keys), the persistent
/// reference that names it for an update or a delete, and its data when it was asked for.
struct ItemRecord {
    let itemClass: String
    let attributes: [String: ItemValue]
    let reference: Data
    let data: Data?

    init?(_ dictionary: NSDictionary) {
        var attributes: [String: ItemValue] = [:]
        var itemClass: String?
        var reference: Data?
        var data: Data?
        for (rawKey, rawValue) in dictionary {
            guard let key = rawKey as? String else { continue }
            if key == kSecClass as String {
                itemClass = rawValue as? String
            } else if key == kSecValuePersistentRef as String {
                reference = rawValue as? Data
            } else if key == kSecValueData as String {
                data = rawValue as? Data
            } else if let value = ItemValue(rawValue) {
                attributes[key] = value
            }
        }
        guard let itemClass, let reference else { return nil }
        self.itemClass = itemClass
        self.attributes = attributes
        self.reference = reference
        self.data = data
    }
}

/// The Security API calls the commands make, each with the dictionary Apple's would build. Searches see
/// synchronizable and non-synchronizable items alike, as a keychain inspector should.
enum Items {
    private static func search(_ itemClass: CFString, _ matching: [String: Any], withData: Bool) -> [String: Any] {
        var query = matching
        query[kSecClass as String] = itemClass
        query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
        query[kSecReturnAttributes as String] = true
        query[kSecReturnPersistentRef as String] = true
        if withData { query[kSecReturnData as String] = true }
        return query
    }

    /// The first item of `itemClass` whose attributes have the values in `matching`.
    /// - Returns: the item, or nil when none matches.
    /// - Throws: ``Failure`` (`SecItemCopyMatching`) for any other status.
    static func first(_ itemClass: CFString, matching: [String: Any], withData: Bool) throws -> ItemRecord? {
        var query = search(itemClass, matching, withData: withData)
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw Failure("SecItemCopyMatching", status) }
        guard let dictionary = result as? NSDictionary, let item = ItemRecord(dictionary) else {
            throw Failure("SecItemCopyMatching", errSecInternalComponent)
        }
        return item
    }

    /// Every item of `itemClass`, in the order they were added.
    /// - Throws: ``Failure`` (`SecItemCopyMatching`, exit status 1 as macOS's dump) for a status other than
    ///   success or `errSecItemNotFound`.
    static func all(_ itemClass: CFString, withData: Bool) throws -> [ItemRecord] {
        var query = search(itemClass, [:], withData: withData)
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        guard status == errSecSuccess else { throw Failure("SecItemCopyMatching", status, exitStatus: 1) }
        guard let array = result as? NSArray else { throw Failure("SecItemCopyMatching", errSecInternalComponent) }
        return try array.map { element in
            guard let dictionary = element as? NSDictionary, let item = ItemRecord(dictionary) else {
                throw Failure("SecItemCopyMatching", errSecInternalComponent)
            }
            return item
        }
    }

    /// Adds an item of `itemClass` with `attributes` and the secret `data`.
    static func add(_ itemClass: CFString, _ attributes: [String: Any], data: Data) -> OSStatus {
        var item = attributes
        item[kSecClass as String] = itemClass
        item[kSecValueData as String] = data
        return SecItemAdd(item as CFDictionary, nil)
    }

    /// Changes the attributes in `changes` (and the secret, when `data` is given) of the item `item` names.
    static func update(_ item: ItemRecord, _ changes: [String: Any], data: Data?) -> OSStatus {
        var attributes = changes
        if let data { attributes[kSecValueData as String] = data }
        return SecItemUpdate(naming(item) as CFDictionary, attributes as CFDictionary)
    }

    /// Deletes the one item `item` names.
    static func delete(_ item: ItemRecord) -> OSStatus {
        SecItemDelete(naming(item) as CFDictionary)
    }

    /// A query for exactly one item: its persistent reference.
    private static func naming(_ item: ItemRecord) -> [String: Any] {
        [
            kSecClass as String: item.itemClass,
            kSecValuePersistentRef as String: item.reference,
            kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
        ]
    }
}
