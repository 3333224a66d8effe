public import Foundation
import Keychain
import Synchronization

// Keychain Services' four calls, with Apple's dictionaries, result shapes and status codes, over the default
// keychain (``KeychainDefaults``): a per-user database under the XDG data directory and an access group named
// after the executable, unless configured otherwise.

/// A keychain item returned for `kSecReturnRef` (certificates, keys and identities get their own types with the
/// certificate issue). It can be passed back as `kSecValueRef` to name the item.
public final class SecKeychainItem: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: every stored property is an immutable value.
    public let itemClass: String
    let item: KeychainItem
    /// The keychain the item came from, when a call that names its keychain returned it (nil: the default).
    let keychain: KeychainStore?

    init(_ item: KeychainItem, keychain: KeychainStore? = nil) {
        self.item = item
        self.keychain = keychain
        itemClass = item.itemClass.rawValue
    }

    /// The item's attributes (as `kSecReturnAttributes` gives them).
    public var attributes: NSDictionary { ItemTranslation.dictionary(item.attributes ?? [:], itemClass: item.itemClass) }
    /// The item's data (as `kSecReturnData` gives it).
    public var data: NSData { NSData(data: item.data ?? Data()) }
    public var description: String { "<SecKeychainItem \(itemClass)>" }
}

/// Adds an item to the default keychain.
/// - Parameters:
///   - attributes: `kSecClass`, the item's attributes, `kSecValueData`, and optionally return keys.
///   - result: on success, the new item as the return keys ask (nil when none is given).
/// - Returns: `errSecSuccess`, `errSecDuplicateItem`, `errSecParam`, `errSecMissingEntitlement`,
///   `errSecNoSuchAttr`, ….
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    ItemTranslation.run(result) {
        let request = try ItemRequest(attributes, role: .add)
        if let identity = request.identity {
            // Access group, synchronizable, accessibility and the label apply to both halves (Apple's
            // SecItemAdd splits an identity into two items that both carry the dictionary's attributes); the
            // others are the certificate's.
            let shared = request.query.matching.filter {
                [.accessGroup, .synchronizable, .accessible, .label].contains($0.key)
            }
            let store = try request.keychain ?? KeychainDefaults.store()
            let item = try store.addIdentity(
                certificate: (identity.certificate.attributes.merging(request.query.matching) { $1 }, identity.certificate.data),
                privateKey: (identity.key.attributes.merging(shared) { $1 }, identity.key.data),
                returning: request.query.returning)
            return request.query.returning.isEmpty ? nil : ItemTranslation.value(item, request.query.returning, from: store)
        }
        guard let itemClass = request.query.itemClass else { throw KeychainError(.parameter, "kSecClass is missing") }
        let store = try request.keychain ?? KeychainDefaults.store()
        let item = try store.add(
            itemClass, attributes: request.query.matching, data: request.data,
            returning: request.query.returning)
        return request.query.returning.isEmpty ? nil : ItemTranslation.value(item, request.query.returning, from: store)
    }
}

/// Searches the default keychain.
/// - Parameters:
///   - query: `kSecClass` (or `kSecValuePersistentRef`), attributes to match, match options and return keys.
///   - result: the match (limit one, the default) or an array of matches, shaped by the return keys.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecParam`, `errSecDecode`, ….
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    ItemTranslation.run(result) {
        let request = try ItemRequest(query, role: .search)
        // Smart cards' items are on the cards, not in a keychain.
        if TokenItems.isTokenSearch(request.query) { return try TokenItems.copyMatching(request.query) }
        // The keychains searched, in order, until the limit is met.
        var found: [(item: KeychainItem, store: KeychainStore)] = []
        for store in try KeychainSearch.stores(for: request) {
            do {
                found += try store.find(request.query).map { ($0, store) }
            } catch let error as KeychainError where error.code == .itemNotFound {
                continue
            }
            if let maximum = request.query.limit.maximum, found.count >= maximum {
                found.removeLast(found.count - maximum)
                break
            }
        }
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
        let returning = request.query.returning
        guard !returning.isEmpty else { return nil }
        // A key held by the keychain service keeps the query's proof of the user for its operations.
        let authentication = request.query.authentication
        if request.query.limit == .one {
            return ItemTranslation.value(found[0].item, returning, from: found[0].store, authentication: authentication)
        }
        return NSArray(array: found.map { ItemTranslation.value($0.item, returning, from: $0.store, authentication: authentication) })
    }
}

/// Changes every item matching `query` in the default keychain.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecDuplicateItem` (nothing changed), `errSecParam`
///   (also for `kSecMatchCaseInsensitive`, as Apple's), ….
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    ItemTranslation.run(nil) {
        let request = try ItemRequest(query, role: .update)
        let changes = try ItemRequest(attributesToUpdate, role: .changes)
        try (request.keychain ?? KeychainDefaults.store()).update(request.query, attributes: changes.query.matching, data: changes.data)
        return nil
    }
}

/// Deletes every item matching `query` from the default keychain.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecParam`, ….
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    ItemTranslation.run(nil) {
        let request = try ItemRequest(query, role: .delete)
        try (request.keychain ?? KeychainDefaults.store()).delete(request.query)
        return nil
    }
}

/// An Apple query or attribute dictionary, checked and translated into the store's terms.
struct ItemRequest {
    enum Role { case add, search, update, delete, changes }

    var query = ItemQuery(nil)
    var data: Data?
    /// An identity to add (`kSecValueRef` holding a SecIdentity): its certificate and its private key.
    var identity: (certificate: ItemReferences.Contents, key: ItemReferences.Contents)?
    /// The keychain `kSecUseKeychain` names, instead of the default.
    var keychain: KeychainStore?
    /// The keychains `kSecMatchSearchList` names, searched in order instead of the search list.
    var searchList: [KeychainStore]?

    init(_ dictionary: NSDictionary, role: Role) throws {
        var limitGiven = false
        for (rawKey, value) in dictionary {
            guard let key = rawKey as? String else { throw KeychainError(.parameter, "a dictionary key is not a string") }
            switch key {
            case "class":
                guard role != .changes else { throw KeychainError(.parameter, "an update cannot change kSecClass") }
                guard let code = value as? String else { throw KeychainError(.parameter, "kSecClass is not a string") }
                guard let itemClass = ItemClass(rawValue: code) else {
                    throw KeychainError(.noSuchClass, "kSecClass names no item class")
                }
                query.itemClass = itemClass
            case "m_Limit":
                guard role == .search || role == .delete || role == .update else {
                    throw KeychainError(.parameter, "kSecMatchLimit belongs in a query")
                }
                limitGiven = true
                switch value {
                case let code as String where code == "m_LimitOne": query.limit = .one
                case let code as String where code == "m_LimitAll": query.limit = .all
                case let number as NSNumber where !(value is Bool) && number.intValue > 0: query.limit = .count(number.intValue)
                case let number as Int where number > 0: query.limit = .count(number)
                default: throw KeychainError(.parameter, "kSecMatchLimit is not one, all or a positive number")
                }
            case "m_CaseInsensitive":
                guard role != .add, role != .changes else {
                    throw KeychainError(.parameter, "kSecMatchCaseInsensitive belongs in a query")
                }
                query.caseInsensitive = try Self.flag(value, key)
            case "r_Data", "r_Attributes", "r_Ref", "r_PersistentRef":
                guard role == .add || role == .search else {
                    throw KeychainError(.parameter, "return keys belong in SecItemAdd and SecItemCopyMatching")
                }
                let option: ReturnOptions =
                    switch key {
                    case "r_Data": .data
                    case "r_Attributes": .attributes
                    case "r_Ref": .reference
                    default: .persistentReference
                    }
                if try Self.flag(value, key) { query.returning.insert(option) }
            case "v_Data":
                guard role == .add || role == .changes else {
                    throw KeychainError(.parameter, "kSecValueData belongs in SecItemAdd or the update attributes")
                }
                guard let bytes = dataValue(value) else { throw KeychainError(.parameter, "kSecValueData is not data") }
                data = bytes
            case "v_PersistentRef":
                guard role == .search || role == .update || role == .delete else {
                    throw KeychainError(.parameter, "kSecValuePersistentRef belongs in a query")
                }
                guard let reference = dataValue(value) else {
                    throw KeychainError(.parameter, "kSecValuePersistentRef is not data")
                }
                query.persistentReference = reference
            case "v_Ref":
                if let item = value as? SecKeychainItem, let reference = item.item.persistentReference {
                    guard role == .search || role == .update || role == .delete else {
                        throw KeychainError(.parameter, "a keychain item reference names an item in a query")
                    }
                    query.persistentReference = reference
                } else if let halves = try ItemReferences.identityContents(value) {
                    // An identity: both halves in an add; the certificate's identifying attributes in a query.
                    guard role != .changes else { throw KeychainError(.parameter, "kSecValueRef cannot be updated") }
                    if query.itemClass == nil { query.itemClass = .identity }
                    guard query.itemClass == .identity else {
                        throw KeychainError(.parameter, "kSecValueRef is not of the class kSecClass names")
                    }
                    if role == .add { identity = halves } else { query.matching.merge(halves.certificate.identifying) { given, _ in given } }
                } else if let contents = try ItemReferences.contents(of: value) {
                    // A certificate, key or identity object: in an add, its data and derived attributes; in a
                    // query, the attributes that identify it.
                    guard role != .changes else { throw KeychainError(.parameter, "kSecValueRef cannot be updated") }
                    if query.itemClass == nil { query.itemClass = contents.itemClass }
                    guard query.itemClass == contents.itemClass else {
                        throw KeychainError(.parameter, "kSecValueRef is not of the class kSecClass names")
                    }
                    if role == .add {
                        data = contents.data
                        query.matching.merge(contents.attributes) { given, _ in given }
                    } else {
                        query.matching.merge(contents.identifying) { given, _ in given }
                    }
                } else {
                    throw KeychainError(.parameter, "kSecValueRef is not an item reference of this keychain")
                }
            case "sync":
                if let code = value as? String, code == "syna" {
                    guard role == .search || role == .update || role == .delete else {
                        throw KeychainError(.parameter, "kSecAttrSynchronizableAny belongs in a query")
                    }
                    query.synchronizable = .any
                } else {
                    let flag = try Self.flag(value, key)
                    query.matching[.synchronizable] = .bool(flag)
                    query.synchronizable = flag ? .yes : .no
                }
            case "nleg", "u_OpPrompt":
                // kSecUseDataProtectionKeychain and the prompt's text: this keychain has one kind and no user
                // interface to show a prompt in.
                continue
            case "u_AuthCtx":
                // An LAContext: the proof of the user for items whose access control asks for it.
                guard let context = value as? any ItemAuthenticationContext else {
                    throw KeychainError(.parameter, "kSecUseAuthenticationContext is not an LAContext")
                }
                let given = context.itemAuthentication
                var authentication = query.authentication ?? ItemAuthentication()
                authentication.password = given.password
                authentication.reuse = given.reuse
                if authentication.interaction == .allow { authentication.interaction = given.interaction }
                query.authentication = authentication
            case "u_AuthUI", "u_NoAuthUI":
                let interaction: ItemAuthentication.Interaction
                if key == "u_NoAuthUI" {
                    interaction = try Self.flag(value, key) ? .fail : .allow
                } else {
                    switch value as? String {
                    case "u_AuthUIA": interaction = .allow
                    case "u_AuthUIF": interaction = .fail
                    case "u_AuthUIS": interaction = .skip
                    default: throw KeychainError(.parameter, "kSecUseAuthenticationUI is not one of the kSecUseAuthenticationUI values")
                    }
                }
                var authentication = query.authentication ?? ItemAuthentication()
                // Skipping wins over failing, and either over allowing, whichever key came first.
                if interaction == .skip || authentication.interaction == .allow { authentication.interaction = interaction }
                query.authentication = authentication
            case "u_Keychain":
                guard role != .changes, let keychain = value as? SecKeychain else {
                    throw KeychainError(.parameter, "kSecUseKeychain is not a SecKeychain, or is in an update's changes")
                }
                self.keychain = try keychain.store()
            case "m_SearchList":
                guard role == .search, let list = value as? [Any], !list.isEmpty else {
                    throw KeychainError(.parameter, "kSecMatchSearchList is a non-empty array of SecKeychain, in a search")
                }
                searchList = try list.map { member in
                    guard let keychain = member as? SecKeychain else { throw KeychainError(.parameter, "a kSecMatchSearchList member is not a SecKeychain") }
                    return try keychain.store()
                }
            case "acls":
                guard role == .add || role == .changes, let access = value as? SecAccess else {
                    throw KeychainError(.parameter, "kSecAttrAccess is a SecAccess, in SecItemAdd or an update's changes")
                }
                query.matching[.access] = .data(try access.value.encoded())
            case "accc":
                guard role == .add || role == .changes, let control = value as? SecAccessControl else {
                    throw KeychainError(.parameter, "kSecAttrAccessControl is a SecAccessControl, in SecItemAdd or an update's changes")
                }
                query.matching[.accessControl] = .data(try control.value.encoded())
            case "tkid":
                // The token an item lives on: a search names one (a PKCS#11 token's URI, or the Secure Enclave's).
                guard role == .search else { throw KeychainError(.parameter, "kSecAttrTokenID belongs in a search (or key generation)") }
                guard let token = value as? String else { throw KeychainError(.parameter, "kSecAttrTokenID is not a string") }
                query.matching[.tokenID] = .string(token)
            case "m_Policy", "m_ItemList", "m_Issuers", "m_EmailAddressIfPresent",
                "m_SubjectContains", "m_SubjectStartsWith", "m_SubjectEndsWith", "m_SubjectWholeString",
                "m_TrustedOnly", "m_ValidOnDate", "m_DiacriticInsensitive", "m_WidthInsensitive", "u_ItemList",
                "m_HostOrSubdomainOfHost", "u_UserIndependentKeychain":
                throw KeychainError(.unimplemented, "\(key) is not supported by this keychain")
            default:
                query.matching[AttributeKey(key)] = try Self.attributeValue(value, key)
            }
        }
        if role == .add || role == .changes, query.matching[.synchronizable] == nil { query.synchronizable = .no }
        _ = limitGiven
    }

    private static func flag(_ value: Any, _ key: String) throws -> Bool {
        if let flag = value as? Bool { return flag }
        if let number = value as? NSNumber { return number.boolValue }
        throw KeychainError(.parameter, "\(key) is not a boolean")
    }

    /// A value of an attribute, as the store types it.
    static func attributeValue(_ value: Any, _ key: String) throws -> AttributeValue {
        if type(of: value) == Bool.self, let flag = value as? Bool { return .bool(flag) }
        if let text = value as? String { return .string(text) }
        if let bytes = dataValue(value) { return .data(bytes) }
        if let date = value as? Date { return .date(date) }
        if let number = value as? NSNumber {
            // A CFBoolean arrives as an NSNumber whose type code is 'c' (char); the schema also converts
            // between numbers and booleans where an attribute needs it.
            if String(cString: number.objCType) == "c", number.intValue == 0 || number.intValue == 1 {
                return .bool(number.boolValue)
            }
            return .number(number.int64Value)
        }
        if let number = value as? Int { return .number(Int64(number)) }
        throw KeychainError(.parameter, "attribute \(key) has a value of an unsupported type")
    }
}

/// Why the last keychain call of this thread failed with `errSecNotAvailable`: Apple's message for the status ("No
/// keychain is available. You may need to restart your computer.") cannot say that a keychain's master key file is
/// missing, or where; the `security` command prints this instead.
package enum KeychainUnavailability {
    private static let key = "SecurityServices.keychainUnavailableReason"

    package internal(set) static var lastReason: String? {
        get { Thread.current.threadDictionary[key] as? String }
        set { Thread.current.threadDictionary[key] = newValue }
    }
}

/// The shapes of results, and the mapping of errors to status codes.
enum ItemTranslation {
    static func run(_ result: UnsafeMutablePointer<CFTypeRef?>?, _ body: () throws -> CFTypeRef?) -> OSStatus {
        result?.pointee = nil
        do {
            let value = try body()
            result?.pointee = value
            return errSecSuccess
        } catch let error as KeychainError {
            return status(error)
        } catch {
            return errSecInternalComponent
        }
    }

    static func status(_ error: KeychainError) -> OSStatus {
        if error.code == .masterKey { KeychainUnavailability.lastReason = error.reason }
        return switch error.code {
        case .duplicateItem: errSecDuplicateItem
        case .itemNotFound: errSecItemNotFound
        case .parameter: errSecParam
        case .noSuchAttribute: errSecNoSuchAttr
        case .noSuchClass: errSecNoSuchClass
        case .missingEntitlement: errSecMissingEntitlement
        case .decode: errSecDecode
        case .unimplemented: errSecUnimplemented
        case .masterKey: errSecNotAvailable
        case .authFailed: errSecAuthFailed
        case .interactionNotAllowed: errSecInteractionNotAllowed
        case .noAccessForItem: errSecNoAccessForItem
        case .io, .database: errSecIO
        case .diskFull: errSecDiskFull
        case .readOnly: errSecReadOnly
        default: errSecInternalComponent
        }
    }

    /// One item as Apple shapes it: the single value asked for, or a dictionary when several are. `store` is the
    /// keychain it came from (the service's keys sign and decrypt through it).
    static func value(
        _ item: KeychainItem, _ returning: ReturnOptions, from store: KeychainStore, authentication: ItemAuthentication? = nil
    ) -> CFTypeRef {
        shaped(
            returning,
            attributes: {
                var attributes: [String: AnyObject] = [:]
                for (key, value) in dictionary(item.attributes ?? [:], itemClass: item.itemClass) {
                    if let key = key as? String { attributes[key] = value as AnyObject }
                }
                return attributes
            }, data: item.data ?? Data(), persistentReference: item.persistentReference ?? Data(),
            reference: { ItemReferences.reference(for: item, from: store, authentication: authentication) })
    }

    /// A result as Apple shapes it, for keychain and token items alike: the single value asked for, or a dictionary
    /// when several are (a persistent reference only where the item has one).
    static func shaped(
        _ returning: ReturnOptions, attributes: () -> [String: AnyObject], data: Data, persistentReference: Data?,
        reference: () -> AnyObject
    ) -> CFTypeRef {
        let single = [ReturnOptions.data, .attributes, .reference, .persistentReference].filter { returning.contains($0) }.count == 1
        if single {
            if returning.contains(.data) { return data as NSData }
            if returning.contains(.persistentReference) { return (persistentReference ?? Data()) as NSData }
            if returning.contains(.reference) { return reference() }
            return NSDictionary(dictionary: attributes())
        }
        var shape = returning.contains(.attributes) ? attributes() : [:]
        if returning.contains(.data) { shape["v_Data"] = data as NSData }
        if returning.contains(.persistentReference), let persistentReference { shape["v_PersistentRef"] = persistentReference as NSData }
        if returning.contains(.reference) { shape["v_Ref"] = reference() }
        return NSDictionary(dictionary: shape)
    }

    /// Attributes under Apple's keys, with `kSecClass`.
    static func dictionary(_ attributes: ItemAttributes, itemClass: ItemClass) -> NSDictionary {
        var dictionary: [String: AnyObject] = ["class": NSString(string: itemClass.rawValue)]
        for (key, value) in attributes {
            if key == .access, case .data(let list) = value, let access = try? ItemAccess(encoded: list) {
                dictionary[key.rawValue] = SecAccess(access)
                continue
            }
            if key == .accessControl, case .data(let data) = value, let control = try? ItemAccessControl(encoded: data) {
                dictionary[key.rawValue] = SecAccessControl(control)
                continue
            }
            switch value {
            case .string(let text): dictionary[key.rawValue] = NSString(string: text)
            case .data(let bytes): dictionary[key.rawValue] = NSData(data: bytes)
            case .number(let number): dictionary[key.rawValue] = NSNumber(value: number)
            case .bool(let flag): dictionary[key.rawValue] = NSNumber(value: flag)
            case .date(let date): dictionary[key.rawValue] = NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate)
            }
        }
        return NSDictionary(dictionary: dictionary)
    }
}

/// Which keychains a search goes through: the one `kSecUseKeychain` names; else those of `kSecMatchSearchList`;
/// else, unless this process set its own default keychain, the user's search list (``KeychainSearchList``); else
/// the default keychain alone.
enum KeychainSearch {
    /// Stores opened for search-list members, by path, for the process's life (opening one costs a database open and
    /// a key check).
    private static let opened = Mutex<[String: KeychainStore]>([:])

    static func stores(for request: ItemRequest) throws -> [KeychainStore] {
        if let keychain = request.keychain { return [keychain] }
        if let list = request.searchList { return list }
        let (defaultStore, followsPreferences) = try KeychainDefaults.storeForSearch()
        guard followsPreferences else { return [defaultStore] }
        let paths = try KeychainSearchList.effectiveCached(defaultKeychain: defaultStore.path)
        guard paths != [defaultStore.path] else { return [defaultStore] }
        return try paths.filter { FileManager.default.fileExists(atPath: $0) }.map { path in
            if path == defaultStore.path { return defaultStore }
            return try opened.withLock { opened in
                if let store = opened[path] { return store }
                let store = try KeychainStore(path: path, accessGroups: KeychainDefaults.accessGroups)
                opened[path] = store
                return store
            }
        }
    }
}
