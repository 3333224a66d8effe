package import Foundation
import Keychain

// The desktop keychain's password calls (Apple's SecKeychain.h and SecKeychainItem.h): add and find generic and
// internet passwords by their parts, read and change an item's content, delete it, free what the calls returned,
// and the keychain event callbacks. Each is a thin layer over the same store as the SecItem calls.

public typealias FourCharCode = UInt32
public typealias OSType = FourCharCode
public typealias SecKeychainAttrType = OSType

/// The four bytes of a four-character code, as the store keeps protocol and authentication codes ("htps").
private func fourCharacters(_ code: FourCharCode) -> String {
    String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }, as: UTF8.self)
}

private func fourCharCode(_ text: String) -> FourCharCode {
    Array(text.utf8.prefix(4)).reduce(0) { $0 << 8 | FourCharCode($1) }
}

/// An internet password's protocol, as Apple's `SecProtocolType` (a four-character code).
public enum SecProtocolType: FourCharCode, Sendable {
    case FTP = 0x6674_7020, FTPAccount = 0x6674_7061, HTTP = 0x6874_7470, IRC = 0x6972_6320, NNTP = 0x6E6E_7470
    case POP3 = 0x706F_7033, SMTP = 0x736D_7470, SOCKS = 0x736F_7820, IMAP = 0x696D_6170, LDAP = 0x6C64_6170
    case appleTalk = 0x6174_6C6B, AFP = 0x6166_7020, telnet = 0x7465_6C6E, SSH = 0x7373_6820, FTPS = 0x6674_7073
    case HTTPS = 0x6874_7073, HTTPProxy = 0x6874_7078, HTTPSProxy = 0x6874_7378, FTPProxy = 0x6674_7078
    case CIFS = 0x6369_6673, SMB = 0x736D_6220, RTSP = 0x7274_7370, RTSPProxy = 0x7274_7378, DAAP = 0x6461_6170
    case EPPC = 0x6570_7063, IPP = 0x6970_7020, NNTPS = 0x6E74_7073, LDAPS = 0x6C64_7073, telnetS = 0x7465_6C73
    case IMAPS = 0x696D_7073, IRCS = 0x6972_6373, POP3S = 0x706F_7073, CVSpserver = 0x6376_7370, SVN = 0x7376_6E20
    case any = 0
}

/// An internet password's authentication scheme, as Apple's `SecAuthenticationType`.
public enum SecAuthenticationType: FourCharCode, Sendable {
    case NTLM = 0x6E74_6C6D, MSN = 0x6D73_6E61, DPA = 0x6470_6161, RPA = 0x7270_6161, HTTPBasic = 0x6874_7470
    case HTTPDigest = 0x6874_7464, HTMLForm = 0x666F_726D, `default` = 0x6466_6C74, any = 0
}

/// An item's class, as Apple's `SecItemClass` (the desktop keychain's codes).
public enum SecItemClass: FourCharCode, Sendable {
    case internetPasswordItemClass = 0x696E_6574, genericPasswordItemClass = 0x6765_6E70
    case certificateItemClass = 0x8000_1000, publicKeyItemClass = 0x0000_000F, privateKeyItemClass = 0x0000_0010
    case symmetricKeyItemClass = 0x0000_0011
}

/// One attribute of an item, as Apple's `SecKeychainAttribute`: a tag (a four-character code naming the attribute,
/// ``SecItemAttr``), and its bytes.
public struct SecKeychainAttribute {
    public var tag: SecKeychainAttrType
    public var length: UInt32
    public var data: UnsafeMutableRawPointer?

    public init(tag: SecKeychainAttrType, length: UInt32, data: UnsafeMutableRawPointer?) {
        self.tag = tag
        self.length = length
        self.data = data
    }
}

/// A pointer to attributes (Apple's `SecKeychainAttributePtr`).
public typealias SecKeychainAttributePtr = UnsafeMutablePointer<SecKeychainAttribute>

/// Which attributes, and in which formats, a macOS attribute copy asks for (Apple's `SecKeychainAttributeInfo`,
/// taken by SecKeychain.h's `SecKeychainItemCopyAttributesAndData`, which is not provided).
public struct SecKeychainAttributeInfo {
    public var count: UInt32
    public var tag: UnsafeMutablePointer<UInt32>
    public var format: UnsafeMutablePointer<UInt32>?

    public init(count: UInt32, tag: UnsafeMutablePointer<UInt32>, format: UnsafeMutablePointer<UInt32>?) {
        self.count = count
        self.tag = tag
        self.format = format
    }
}

public struct SecKeychainAttributeList {
    public var count: UInt32
    public var attr: UnsafeMutablePointer<SecKeychainAttribute>?

    public init(count: UInt32, attr: UnsafeMutablePointer<SecKeychainAttribute>?) {
        self.count = count
        self.attr = attr
    }
}

/// The attribute tags of password items, as Apple's `SecItemAttr`.
public enum SecItemAttr: FourCharCode, Sendable {
    case creationDateItemAttr = 0x6364_6174, modDateItemAttr = 0x6D64_6174, descriptionItemAttr = 0x6465_7363
    case commentItemAttr = 0x6963_6D74, creatorItemAttr = 0x6372_7472, typeItemAttr = 0x7479_7065
    case labelItemAttr = 0x6C61_626C, invisibleItemAttr = 0x696E_7669, negativeItemAttr = 0x6E65_6761
    case accountItemAttr = 0x6163_6374, serviceItemAttr = 0x7376_6365, genericItemAttr = 0x6765_6E61
    case securityDomainItemAttr = 0x7364_6D6E, serverItemAttr = 0x7372_7672, authenticationTypeItemAttr = 0x6174_7970
    case portItemAttr = 0x706F_7274, pathItemAttr = 0x7061_7468, protocolItemAttr = 0x7074_636C
}

/// The item attributes a string-valued tag names (its four characters are the store's attribute key).
private let stringTags: Set<FourCharCode> = [
    SecItemAttr.descriptionItemAttr, .commentItemAttr, .labelItemAttr, .accountItemAttr, .serviceItemAttr,
    .securityDomainItemAttr, .serverItemAttr, .pathItemAttr,
].reduce(into: []) { $0.insert($1.rawValue) }

/// A string given as Apple's calls give it: a length and bytes (nil: not given).
private func text(_ length: UInt32, _ bytes: UnsafePointer<CChar>?) throws -> String? {
    guard let bytes else {
        guard length == 0 else { throw KeychainError(.parameter, "a length without its string") }
        return nil
    }
    let buffer = UnsafeRawBufferPointer(start: bytes, count: Int(length))
    guard let string = String(validating: buffer, as: UTF8.self) else { throw KeychainError(.parameter, "a string that is not UTF-8") }
    return string
}

/// Copies `data` into memory the caller frees with ``SecKeychainItemFreeContent(_:_:)`` (malloc'd).
private func copyOut(_ data: Data, _ length: UnsafeMutablePointer<UInt32>?, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
    length?.pointee = UInt32(data.count)
    guard let out else { return }
    let memory = malloc(max(data.count, 1))!  // !: malloc of a few bytes fails only when the process is out of memory
    data.withUnsafeBytes { if let base = $0.baseAddress { memory.copyMemory(from: base, byteCount: data.count) } }
    out.pointee = memory
}

/// The keychain a find searches: the one named (a SecKeychain), else the default keychain.
private func searched(_ keychainOrArray: CFTypeRef?) throws -> KeychainStore {
    if let keychain = keychainOrArray as? SecKeychain { return try keychain.store() }
    if let list = keychainOrArray as? [Any], let first = list.first {
        guard list.count == 1, let keychain = first as? SecKeychain else {
            throw KeychainError(.unimplemented, "searching several keychains at once is not built yet")
        }
        return try keychain.store()
    }
    guard keychainOrArray == nil else { throw KeychainError(.parameter, "not a keychain or a list of keychains") }
    return try KeychainDefaults.store()
}

/// Adds a generic password (service, account, password) to `keychain` (nil: the default keychain).
/// - Returns: `errSecSuccess`; `errSecDuplicateItem`; `errSecInteractionNotAllowed` while locked; `errSecParam`.
@discardableResult
public func SecKeychainAddGenericPassword(
    _ keychain: SecKeychain?, _ serviceNameLength: UInt32, _ serviceName: UnsafePointer<CChar>?, _ accountNameLength: UInt32,
    _ accountName: UnsafePointer<CChar>?, _ passwordLength: UInt32, _ passwordData: UnsafeRawPointer,
    _ itemRef: UnsafeMutablePointer<SecKeychainItem?>?
) -> OSStatus {
    keychainCall {
        var attributes: ItemAttributes = [:]
        attributes[.service] = try text(serviceNameLength, serviceName).map { .string($0) }
        attributes[.account] = try text(accountNameLength, accountName).map { .string($0) }
        try add(.genericPassword, attributes, to: keychain, passwordLength, passwordData, itemRef)
    }
}

/// Finds the generic password of `serviceName` and `accountName` (either may be nil: any).
/// - Parameters:
///   - passwordData: on success, the password in memory the caller frees with
///     ``SecKeychainItemFreeContent(_:_:)``; nil to ask for none (the keychain may then be locked).
/// - Returns: `errSecSuccess`; `errSecItemNotFound`; `errSecInteractionNotAllowed` while locked (when the password
///   is asked for).
@discardableResult
public func SecKeychainFindGenericPassword(
    _ keychainOrArray: CFTypeRef?, _ serviceNameLength: UInt32, _ serviceName: UnsafePointer<CChar>?, _ accountNameLength: UInt32,
    _ accountName: UnsafePointer<CChar>?, _ passwordLength: UnsafeMutablePointer<UInt32>?,
    _ passwordData: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ itemRef: UnsafeMutablePointer<SecKeychainItem?>?
) -> OSStatus {
    keychainCall {
        var matching: ItemAttributes = [:]
        matching[.service] = try text(serviceNameLength, serviceName).map { .string($0) }
        matching[.account] = try text(accountNameLength, accountName).map { .string($0) }
        try find(.genericPassword, matching, in: searched(keychainOrArray), passwordLength, passwordData, itemRef)
    }
}

/// Adds an internet password (server, security domain, account, path, port, protocol, authentication type).
/// - Returns: `errSecSuccess`; `errSecDuplicateItem`; `errSecInteractionNotAllowed` while locked; `errSecParam`.
@discardableResult
public func SecKeychainAddInternetPassword(
    _ keychain: SecKeychain?, _ serverNameLength: UInt32, _ serverName: UnsafePointer<CChar>?, _ securityDomainLength: UInt32,
    _ securityDomain: UnsafePointer<CChar>?, _ accountNameLength: UInt32, _ accountName: UnsafePointer<CChar>?,
    _ pathLength: UInt32, _ path: UnsafePointer<CChar>?, _ port: UInt16, _ protocol: SecProtocolType,
    _ authenticationType: SecAuthenticationType, _ passwordLength: UInt32, _ passwordData: UnsafeRawPointer,
    _ itemRef: UnsafeMutablePointer<SecKeychainItem?>?
) -> OSStatus {
    keychainCall {
        var attributes = try internetAttributes(
            serverNameLength, serverName, securityDomainLength, securityDomain, accountNameLength, accountName, pathLength, path,
            port, `protocol`, authenticationType)
        // Apple's add stores the default authentication type for "any".
        if authenticationType == .any { attributes[.authenticationType] = .string(fourCharacters(SecAuthenticationType.default.rawValue)) }
        try add(.internetPassword, attributes, to: keychain, passwordLength, passwordData, itemRef)
    }
}

/// Finds an internet password; nil strings, port 0, `.any` protocol and `.any` authentication match anything.
@discardableResult
public func SecKeychainFindInternetPassword(
    _ keychainOrArray: CFTypeRef?, _ serverNameLength: UInt32, _ serverName: UnsafePointer<CChar>?, _ securityDomainLength: UInt32,
    _ securityDomain: UnsafePointer<CChar>?, _ accountNameLength: UInt32, _ accountName: UnsafePointer<CChar>?,
    _ pathLength: UInt32, _ path: UnsafePointer<CChar>?, _ port: UInt16, _ protocol: SecProtocolType,
    _ authenticationType: SecAuthenticationType, _ passwordLength: UnsafeMutablePointer<UInt32>?,
    _ passwordData: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ itemRef: UnsafeMutablePointer<SecKeychainItem?>?
) -> OSStatus {
    keychainCall {
        let matching = try internetAttributes(
            serverNameLength, serverName, securityDomainLength, securityDomain, accountNameLength, accountName, pathLength, path,
            port, `protocol`, authenticationType)
        try find(.internetPassword, matching, in: searched(keychainOrArray), passwordLength, passwordData, itemRef)
    }
}

private func internetAttributes(
    _ serverNameLength: UInt32, _ serverName: UnsafePointer<CChar>?, _ securityDomainLength: UInt32,
    _ securityDomain: UnsafePointer<CChar>?, _ accountNameLength: UInt32, _ accountName: UnsafePointer<CChar>?,
    _ pathLength: UInt32, _ path: UnsafePointer<CChar>?, _ port: UInt16, _ protocol: SecProtocolType,
    _ authenticationType: SecAuthenticationType
) throws -> ItemAttributes {
    var attributes: ItemAttributes = [:]
    attributes[.server] = try text(serverNameLength, serverName).map { .string($0) }
    attributes[.securityDomain] = try text(securityDomainLength, securityDomain).map { .string($0) }
    attributes[.account] = try text(accountNameLength, accountName).map { .string($0) }
    attributes[.path] = try text(pathLength, path).map { .string($0) }
    if port != 0 { attributes[.port] = .number(Int64(port)) }
    if `protocol` != .any { attributes[.protocol] = .string(fourCharacters(`protocol`.rawValue)) }
    if authenticationType != .any { attributes[.authenticationType] = .string(fourCharacters(authenticationType.rawValue)) }
    return attributes
}

/// Adds a password item to `keychain` (nil: the default keychain), returning its reference when asked.
private func add(
    _ itemClass: ItemClass, _ attributes: ItemAttributes, to keychain: SecKeychain?, _ passwordLength: UInt32,
    _ passwordData: UnsafeRawPointer, _ itemRef: UnsafeMutablePointer<SecKeychainItem?>?
) throws {
    let store = try keychain?.store() ?? KeychainDefaults.store()
    let item = try store.add(
        itemClass, attributes: attributes, data: Data(bytes: passwordData, count: Int(passwordLength)),
        returning: itemRef == nil ? [] : [.attributes, .persistentReference])
    itemRef?.pointee = SecKeychainItem(item, keychain: store)
}

private func find(
    _ itemClass: ItemClass, _ matching: ItemAttributes, in store: KeychainStore, _ passwordLength: UnsafeMutablePointer<UInt32>?,
    _ passwordData: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ itemRef: UnsafeMutablePointer<SecKeychainItem?>?
) throws {
    var returning: ReturnOptions = []
    if passwordData != nil || passwordLength != nil { returning.insert(.data) }
    if itemRef != nil { returning.formUnion([.attributes, .persistentReference]) }
    if returning.isEmpty { returning = .persistentReference }  // an existence check still finds the item
    let item = try store.find(ItemQuery(itemClass, matching: matching, returning: returning))[0]  // find throws when none
    if returning.contains(.data) { copyOut(item.data ?? Data(), passwordLength, passwordData) }
    itemRef?.pointee = SecKeychainItem(item, keychain: store)
}

/// Frees what ``SecKeychainFindGenericPassword``, ``SecKeychainFindInternetPassword`` and
/// ``SecKeychainItemCopyContent`` returned: the data, and each attribute's bytes and the list's array.
@discardableResult
public func SecKeychainItemFreeContent(_ attrList: UnsafeMutablePointer<SecKeychainAttributeList>?, _ data: UnsafeMutableRawPointer?) -> OSStatus {
    if let list = attrList?.pointee, let attributes = list.attr {
        for index in 0..<Int(list.count) { free(attributes[index].data) }
        free(attributes)
        attrList?.pointee.attr = nil
        attrList?.pointee.count = 0
    }
    free(data)
    return errSecSuccess
}

/// The item's content: its class, the attributes `attrList` names by tag (their bytes filled in, the caller frees
/// them with ``SecKeychainItemFreeContent(_:_:)``), and its data when `outData` is given.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when the item is gone; `errSecInteractionNotAllowed` for the
///   data of a locked keychain's item; `errSecNoSuchAttr` for a tag the class does not have.
@discardableResult
public func SecKeychainItemCopyContent(
    _ itemRef: SecKeychainItem, _ itemClass: UnsafeMutablePointer<SecItemClass>?,
    _ attrList: UnsafeMutablePointer<SecKeychainAttributeList>?, _ length: UnsafeMutablePointer<UInt32>?,
    _ outData: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> OSStatus {
    keychainCall {
        let (store, reference) = try located(itemRef)
        var returning: ReturnOptions = [.attributes]
        if outData != nil || length != nil { returning.insert(.data) }
        let item = try store.find(ItemQuery(nil, persistentReference: reference, returning: returning))[0]
        itemClass?.pointee = item.itemClass == .internetPassword ? .internetPasswordItemClass : .genericPasswordItemClass
        if let list = attrList?.pointee, let attributes = list.attr {
            let schema = item.attributes ?? [:]
            for index in 0..<Int(list.count) {
                let tag = attributes[index].tag
                let value = schema[AttributeKey(fourCharacters(tag))]
                let bytes: Data
                switch value {
                case .string(let string): bytes = Data(string.utf8)
                case .number(let number) where tag == SecItemAttr.portItemAttr.rawValue: bytes = withUnsafeBytes(of: UInt32(clamping: number)) { Data($0) }
                case .number(let number): bytes = withUnsafeBytes(of: Int32(clamping: number)) { Data($0) }
                case .data(let data): bytes = data
                case .bool(let flag): bytes = withUnsafeBytes(of: UInt32(flag ? 1 : 0)) { Data($0) }
                case .date(let date): bytes = Data(CSSMTime.string(date).utf8) + [0]  // NUL-terminated, as Apple's
                case nil: bytes = Data()
                }
                var copied: UnsafeMutableRawPointer?
                copyOut(bytes, &attributes[index].length, &copied)
                attributes[index].data = copied
            }
        }
        if returning.contains(.data) { copyOut(item.data ?? Data(), length, outData) }
    }
}

/// Changes the item's attributes (string-valued tags: label, description, comment, account, service, server,
/// security domain, path) and, when `data` is given, its data.
/// - Returns: `errSecSuccess`; `errSecItemNotFound`; `errSecDuplicateItem`; `errSecInteractionNotAllowed` while
///   locked; `errSecNoSuchAttr` for a tag not handled here.
@discardableResult
public func SecKeychainItemModifyAttributesAndData(
    _ itemRef: SecKeychainItem, _ attrList: UnsafePointer<SecKeychainAttributeList>?, _ length: UInt32, _ data: UnsafeRawPointer?
) -> OSStatus {
    keychainCall {
        let (store, reference) = try located(itemRef)
        var changes: ItemAttributes = [:]
        if let list = attrList?.pointee, let attributes = list.attr {
            for attribute in UnsafeBufferPointer(start: attributes, count: Int(list.count)) {
                guard stringTags.contains(attribute.tag) else {
                    throw KeychainError(.noSuchAttribute, "attribute \(fourCharacters(attribute.tag)) is not changed by this call here")
                }
                let bytes = attribute.data.map { UnsafeRawBufferPointer(start: $0, count: Int(attribute.length)) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
                guard let value = String(validating: bytes, as: UTF8.self) else { throw KeychainError(.parameter, "an attribute that is not UTF-8") }
                changes[AttributeKey(fourCharacters(attribute.tag))] = .string(value)
            }
        }
        let newData = data.map { Data(bytes: $0, count: Int(length)) }
        try store.update(ItemQuery(nil, persistentReference: reference), attributes: changes, data: newData)
    }
}

/// Deletes the item from its keychain.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when it is gone; `errSecInteractionNotAllowed` while locked.
@discardableResult
public func SecKeychainItemDelete(_ itemRef: SecKeychainItem) -> OSStatus {
    keychainCall {
        let (store, reference) = try located(itemRef)
        try store.delete(ItemQuery(nil, persistentReference: reference))
    }
}

/// The keychain and persistent reference of an item the password calls returned.
func located(_ item: SecKeychainItem) throws -> (KeychainStore, Data) {
    guard let reference = item.item.persistentReference else {
        throw KeychainError(.parameter, "the item was not returned by a call that names it")
    }
    return (try item.keychain ?? KeychainDefaults.store(), reference)
}

/// The desktop keychain's dates: CSSM times, `YYYYMMDDhhmmssZ` in UTC (for the password calls and the `security`
/// command's listings alike).
package enum CSSMTime {
    package static func string(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04ld%02ld%02ld%02ld%02ld%02ldZ", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0, parts.hour ?? 0,
            parts.minute ?? 0, parts.second ?? 0)
    }
}
