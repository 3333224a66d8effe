import Foundation
import KeychainModel
import SecurityBase

/// Appends wire values to a body.
struct WireWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u32(_ value: Int) {
        let value = UInt32(truncatingIfNeeded: value)
        bytes += [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    mutating func i64(_ value: Int64) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }

    mutating func raw(_ data: some Collection<UInt8>) {
        u32(data.count)
        bytes += data
    }

    mutating func text(_ text: String) { raw(Array(text.utf8)) }

    mutating func optionalBytes(_ data: Data?) {
        guard let data else { return u8(0) }
        u8(1)
        raw(data)
    }

    mutating func itemClass(_ itemClass: ItemClass?) { text(itemClass?.rawValue ?? "") }

    mutating func attributes(_ attributes: ItemAttributes) {
        u32(attributes.count)
        for (key, value) in attributes.sorted(by: { $0.key < $1.key }) {
            text(key.rawValue)
            switch value {
            case .string(let string):
                u8(1)
                text(string)
            case .data(let data):
                u8(2)
                raw(data)
            case .number(let number):
                u8(3)
                i64(number)
            case .bool(let bool):
                u8(4)
                u8(bool ? 1 : 0)
            case .date(let date):
                u8(5)
                i64(Int64(bitPattern: date.timeIntervalSinceReferenceDate.bitPattern))
            }
        }
    }

    mutating func query(_ query: ItemQuery) {
        itemClass(query.itemClass)
        attributes(query.matching)
        switch query.synchronizable {
        case .no: u8(0)
        case .yes: u8(1)
        case .any: u8(2)
        }
        switch query.limit {
        case .one: u8(0)
        case .all: u8(1)
        case .count(let count):
            u8(2)
            i64(Int64(count))
        }
        u8(query.caseInsensitive ? 1 : 0)
        optionalBytes(query.persistentReference)
        u8(UInt8(truncatingIfNeeded: query.returning.rawValue))
        authentication(query.authentication)
    }

    /// The proof of the user, for the service to check (the password travels as an unlock's does).
    mutating func authentication(_ authentication: ItemAuthentication?) {
        if let authentication {
            u8(1)
            optionalBytes(authentication.password.map { $0.withUnsafeBytes { Data($0) } })
            i64(Int64(clamping: authentication.reuse.components.seconds * 1000 + authentication.reuse.components.attoseconds / 1_000_000_000_000_000))
            switch authentication.interaction {
            case .allow: u8(0)
            case .fail: u8(1)
            case .skip: u8(2)
            }
        } else {
            u8(0)
        }
    }

    mutating func item(_ item: KeychainItem) {
        itemClass(item.itemClass)
        if let attributes = item.attributes {
            u8(1)
            self.attributes(attributes)
        } else {
            u8(0)
        }
        optionalBytes(item.data)
        optionalBytes(item.persistentReference)
        optionalBytes(item.identityKeyData)
    }
}

/// Reads wire values from a body, checking each against what is left.
struct WireReader {
    private let bytes: [UInt8]
    private var offset: Int

    /// Starts after the version byte.
    /// - Throws: `.parameter` for an empty body or another version.
    init(_ bytes: [UInt8]) throws {
        guard let version = bytes.first else { throw Self.malformed("an empty message") }
        guard version == KeychainWire.version else {
            throw Self.malformed("protocol version \(version), this side speaks \(KeychainWire.version)")
        }
        self.bytes = bytes
        offset = 1
    }

    static func malformed(_ what: String) -> KeychainError {
        KeychainError(.parameter, "malformed keychain service message: \(what)")
    }

    private mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - offset else { throw Self.malformed("truncated") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u8() throws -> UInt8 { try take(1).first! }  // !: take(1) has one byte

    mutating func bool() throws -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        default: throw Self.malformed("a truth value other than 0 or 1")
        }
    }

    mutating func u32() throws -> Int { try take(4).reduce(0) { $0 << 8 | Int($1) } }

    mutating func i64() throws -> Int64 {
        Int64(bitPattern: try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// A list length, at most `maximum` (and never more than the bytes left could hold).
    mutating func count(maximum: Int = KeychainWire.maximumCount) throws -> Int {
        let count = try u32()
        guard count <= maximum, count <= bytes.count - offset else { throw Self.malformed("a list of \(count) entries") }
        return count
    }

    mutating func raw() throws -> Data { Data(try take(try u32())) }

    /// A lock interval in seconds: positive, or -1 for none.
    mutating func interval() throws -> Int64? {
        let seconds = try i64()
        guard seconds == -1 || seconds > 0 else { throw Self.malformed("a lock interval of \(seconds) seconds") }
        return seconds == -1 ? nil : seconds
    }

    mutating func text() throws -> String {
        guard let text = String(validating: try take(try u32()), as: UTF8.self) else { throw Self.malformed("text that is not UTF-8") }
        return text
    }

    mutating func optionalBytes() throws -> Data? { try bool() ? try raw() : nil }

    mutating func optionalItemClass() throws -> ItemClass? {
        let raw = try text()
        if raw.isEmpty { return nil }
        guard let itemClass = ItemClass(rawValue: raw) else { throw KeychainError(.noSuchClass, "no item class is coded \(raw.debugDescription)") }
        return itemClass
    }

    mutating func itemClass() throws -> ItemClass {
        guard let itemClass = try optionalItemClass() else { throw Self.malformed("an item without a class") }
        return itemClass
    }

    mutating func returnOptions() throws -> ReturnOptions {
        let raw = try u8()
        guard raw & ~0x0F == 0 else { throw Self.malformed("unknown return options") }
        return ReturnOptions(rawValue: Int(raw))
    }

    mutating func attributes() throws -> ItemAttributes {
        var attributes: ItemAttributes = [:]
        for _ in 0..<(try count()) {
            let key = try text()
            guard !key.isEmpty, key.utf8.count <= 16 else { throw Self.malformed("an attribute name of \(key.utf8.count) bytes") }
            let value: AttributeValue
            switch try u8() {
            case 1: value = .string(try text())
            case 2: value = .data(try raw())
            case 3: value = .number(try i64())
            case 4: value = .bool(try bool())
            case 5: value = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: UInt64(bitPattern: try i64()))))
            case let tag: throw Self.malformed("attribute value type \(tag)")
            }
            guard attributes.updateValue(value, forKey: AttributeKey(key)) == nil else {
                throw Self.malformed("the attribute \(key) twice")
            }
        }
        return attributes
    }

    mutating func query() throws -> ItemQuery {
        let itemClass = try optionalItemClass()
        let matching = try attributes()
        let synchronizable: SynchronizableMatch
        switch try u8() {
        case 0: synchronizable = .no
        case 1: synchronizable = .yes
        case 2: synchronizable = .any
        case let tag: throw Self.malformed("synchronizable match \(tag)")
        }
        let limit: MatchLimit
        switch try u8() {
        case 0: limit = .one
        case 1: limit = .all
        case 2:
            let count = try i64()
            guard count > 0, count <= Int64(Int32.max) else { throw Self.malformed("a match limit of \(count)") }
            limit = .count(Int(count))
        case let tag: throw Self.malformed("match limit kind \(tag)")
        }
        var query = ItemQuery(
            itemClass, matching: matching, synchronizable: synchronizable, limit: limit, caseInsensitive: try bool(),
            persistentReference: try optionalBytes(), returning: try returnOptions())
        query.authentication = try authentication()
        return query
    }

    mutating func authentication() throws -> ItemAuthentication? {
        if try bool() {
            let password = try optionalBytes().map { SecretBytes($0) }
            let milliseconds = try i64()
            guard milliseconds >= 0 else { throw Self.malformed("a reuse of \(milliseconds) ms") }
            let interaction: ItemAuthentication.Interaction
            switch try u8() {
            case 0: interaction = .allow
            case 1: interaction = .fail
            case 2: interaction = .skip
            case let tag: throw Self.malformed("authentication interaction \(tag)")
            }
            return ItemAuthentication(password: password, reuse: .milliseconds(milliseconds), interaction: interaction)
        }
        return nil
    }

    mutating func item() throws -> KeychainItem {
        let itemClass = try itemClass()
        let attributes = try bool() ? try self.attributes() : nil
        return KeychainItem(
            itemClass: itemClass, attributes: attributes, data: try optionalBytes(), persistentReference: try optionalBytes(),
            identityKeyData: try optionalBytes())
    }

    /// - Throws: `.parameter` when bytes are left over.
    func end() throws {
        guard offset == bytes.count else { throw Self.malformed("\(bytes.count - offset) bytes after the message") }
    }
}
