import Foundation
import Keychain

/// How a Secret Service item is a keychain item, both ways: a generic password (`kSecClassGenericPassword`) whose
///
/// - label is the item's label;
/// - service is the item's `service` attribute, else `server`, else `xdg:schema` (what libsecret's schemas put
///   there), else empty;
/// - account is the item's `username` attribute, else `user`, else `account`, else empty; when another item with
///   other attributes already has that service and account in the caller's group, the later one's account ends in
///   ` #` and a random suffix, as the keychain holds one item per service and account;
/// - generic attribute (`kSecAttrGeneric`) holds every attribute and the content type, as JSON;
/// - secret is the item's secret.
///
/// A generic password stored another way (`SecItemAdd`, `security add-generic-password`) is an item too: its
/// attributes are `service` and `account`, its content type `text/plain`.
struct SecretItemRecord: Codable, Equatable {
    var attributes: [String: String]
    var contentType: String

    static let serviceKeys = ["service", "server", "xdg:schema"]
    static let accountKeys = ["username", "user", "account"]

    /// The keychain attributes of an item with `label` and this record.
    func keychainAttributes(label: String) throws -> ItemAttributes {
        [
            .label: .string(label),
            .service: .string(Self.serviceKeys.lazy.compactMap { attributes[$0] }.first ?? ""),
            .account: .string(Self.accountKeys.lazy.compactMap { attributes[$0] }.first ?? ""),
            .generic: .data(try encoded()),
        ]
    }

    /// The record as the generic attribute keeps it: JSON, keys sorted.
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(self)
    }

    /// The record of a keychain item's attributes.
    init(_ item: ItemAttributes) {
        if case .data(let json)? = item[.generic], let record = try? JSONDecoder().decode(SecretItemRecord.self, from: json) {
            self = record
            return
        }
        var attributes: [String: String] = [:]
        if case .string(let service)? = item[.service] { attributes["service"] = service }
        if case .string(let account)? = item[.account] { attributes["account"] = account }
        self.init(attributes: attributes, contentType: "text/plain")
    }

    init(attributes: [String: String], contentType: String) {
        self.attributes = attributes
        self.contentType = contentType
    }

    /// Whether the item has every attribute of `query` with its value (an empty query matches every item).
    func matches(_ query: [String: String]) -> Bool {
        query.allSatisfy { attributes[$0.key] == $0.value }
    }
}

/// Object paths: the service, its collections (the caller's keychains in the service: `login` is the default one,
/// `k_<name>` another), their items (named by the keychain item's persistent reference, in hex), sessions,
/// the `default` alias.
enum SecretPaths {
    static let service = "/org/freedesktop/secrets"
    static let collections = service + "/collection/"
    static let sessions = service + "/session/"
    static let prompts = service + "/prompt/"
    static let aliases = service + "/aliases/"
    static let defaultAlias = aliases + "default"
    static let login = collections + "login"
    /// "No object" in the specification's answers (no prompt needed).
    static let none = "/"

    /// The collection path of a keychain (nil: the default one).
    static func collection(_ keychain: String?) -> String {
        guard let keychain else { return login }
        return collections + "k_" + escape(keychain)
    }

    /// The collection a path names, the default alias as the collection it names; nil for a path that names none.
    static func collection(named path: String) -> String? {
        guard keychain(ofCollection: path) != nil else { return nil }
        return path == defaultAlias ? login : path
    }

    /// The keychain a collection path (or the default alias) stands for: `.some(nil)` for the default keychain.
    static func keychain(ofCollection path: String) -> String?? {
        if path == login || path == defaultAlias { return .some(nil) }
        guard path.hasPrefix(collections + "k_") else { return nil }
        let element = path.dropFirst(collections.count + 2)
        guard !element.contains("/") else { return nil }
        return unescape(String(element)).map { .some($0) }
    }

    static func item(_ reference: Data, in collection: String) -> String {
        collection + "/" + reference.map { String(format: "%02x", $0) }.joined()
    }

    /// The collection (``collection(named:)``) and the persistent reference an item path names.
    static func item(_ path: String) -> (collection: String, reference: Data)? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let hex = Array(path[path.index(after: slash)...].utf8)
        guard let collection = collection(named: String(path[..<slash])), !hex.isEmpty, hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: hex.count, by: 2) {
            guard let byte = UInt8(String(decoding: hex[index..<(index + 2)], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return (collection, Data(bytes))
    }

    /// A keychain name as an object path element: letters and digits as they are, anything else `_` and two hex
    /// digits.
    static func escape(_ name: String) -> String {
        name.utf8.map { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                ? String(UnicodeScalar(byte)) : String(format: "_%02x", byte)
        }.joined()
    }

    static func unescape(_ element: String) -> String? {
        var bytes: [UInt8] = []
        var utf8 = Array(element.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "_") {
                guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(bytes: bytes, encoding: .utf8)
    }
}
