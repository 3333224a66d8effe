internal import CSDBus
import Foundation
import SecurityBase

/// An error a bus call is answered with: its code is the D-Bus error name, its reason the message for people.
struct BusError: CodedError {
    typealias Code = ErrorCode<BusError>

    let code: Code
    let reason: String
    let location: ErrorLocation

    init(_ code: Code, _ reason: String, file: StaticString = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        location = ErrorLocation(fileID: file, line: line)
    }
}

extension ErrorCode where Domain == BusError {
    static let invalidArguments = Self(name: "org.freedesktop.DBus.Error.InvalidArgs")
    static let accessDenied = Self(name: "org.freedesktop.DBus.Error.AccessDenied")
    static let notSupported = Self(name: "org.freedesktop.DBus.Error.NotSupported")
    static let unknownMethod = Self(name: "org.freedesktop.DBus.Error.UnknownMethod")
    static let unknownProperty = Self(name: "org.freedesktop.DBus.Error.UnknownProperty")
    static let failed = Self(name: "org.freedesktop.DBus.Error.Failed")
    static let noSuchObject = Self(name: "org.freedesktop.Secret.Error.NoSuchObject")
    static let noSession = Self(name: "org.freedesktop.Secret.Error.NoSession")
    static let isLocked = Self(name: "org.freedesktop.Secret.Error.IsLocked")
}

/// A value the Secret Service puts in a variant or reads from one.
enum BusValue: Equatable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case uint64(UInt64)
    case bytes([UInt8])
    case objectPaths([String])
    case stringDictionary([String: String])

    /// The D-Bus signature of the value.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .uint64: "t"
        case .bytes: "ay"
        case .objectPaths: "ao"
        case .stringDictionary: "a{ss}"
        }
    }
}

/// A secret as the Secret Service passes one: `(oayays)`, the session, its parameters (an IV), the value (encrypted
/// for the session) and the content type.
struct WireSecret {
    var session: String
    var parameters: [UInt8]
    var value: [UInt8]
    var contentType: String
}

/// Reads a message's arguments in order. The message is the bus call's; this value only borrows it.
struct BusReader {
    let message: OpaquePointer

    private func check(_ result: Int32, _ what: String) throws {
        guard result >= 0 else { throw BusError(.invalidArguments, "the call's arguments are not as the method takes them (\(what))") }
    }

    private func basic<T>(_ type: Character, _ initial: T) throws -> T {
        var value = initial
        try check(withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(message, CChar(type.asciiValue!), $0) }, String(type))
        return value
    }

    func string() throws -> String { try text("s") }
    func objectPath() throws -> String { try text("o") }

    private func text(_ type: Character) throws -> String {
        var pointer: UnsafePointer<CChar>?
        try check(sd_bus_message_read_basic(message, CChar(type.asciiValue!), &pointer), String(type))
        return pointer.map { String(cString: $0) } ?? ""
    }

    func bool() throws -> Bool { try basic("b", Int32(0)) != 0 }

    func bytes() throws -> [UInt8] {
        var pointer: UnsafeRawPointer?
        var size = 0
        try check(sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &pointer, &size), "ay")
        guard let pointer, size > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: size))
    }

    func enter(_ type: Character, _ contents: String) throws -> Bool {
        let result = sd_bus_message_enter_container(message, CChar(type.asciiValue!), contents)
        try check(result, "\(type)\(contents)")
        return result > 0
    }

    func exit() throws { try check(sd_bus_message_exit_container(message), "end of container") }

    func objectPaths() throws -> [String] {
        guard try enter("a", "o") else { return [] }
        var paths: [String] = []
        while sd_bus_message_at_end(message, 0) == 0 { paths.append(try objectPath()) }
        try exit()
        return paths
    }

    func stringDictionary() throws -> [String: String] {
        guard try enter("a", "{ss}") else { return [:] }
        var dictionary: [String: String] = [:]
        while try enter("e", "ss") {
            let key = try string()
            dictionary[key] = try string()
            try exit()
        }
        try exit()
        return dictionary
    }

    /// A variant holding one of the ``BusValue`` kinds; nil for another kind (skipped).
    func variant() throws -> BusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        try check(sd_bus_message_peek_type(message, &type, &contents), "v")
        let signature = contents.map { String(cString: $0) } ?? ""
        guard try enter("v", signature) else { return nil }
        defer { _ = try? exit() }
        switch signature {
        case "s": return .string(try string())
        case "o": return .objectPath(try objectPath())
        case "b": return .bool(try bool())
        case "ay": return .bytes(try bytes())
        case "ao": return .objectPaths(try objectPaths())
        case "a{ss}": return .stringDictionary(try stringDictionary())
        default:
            try check(sd_bus_message_skip(message, signature), signature)
            return nil
        }
    }

    /// `a{sv}`: the properties a creation call passes.
    func properties() throws -> [String: BusValue] {
        guard try enter("a", "{sv}") else { return [:] }
        var properties: [String: BusValue] = [:]
        while try enter("e", "sv") {
            let key = try string()
            if let value = try variant() { properties[key] = value }
            try exit()
        }
        try exit()
        return properties
    }

    func secret() throws -> WireSecret {
        guard try enter("r", "oayays") else { throw BusError(.invalidArguments, "a secret is (oayays)") }
        let secret = WireSecret(session: try objectPath(), parameters: try bytes(), value: try bytes(), contentType: try string())
        try exit()
        return secret
    }
}

/// Writes a message's arguments in order. The message is owned by whoever made it.
struct BusWriter {
    let message: OpaquePointer

    private func check(_ result: Int32) throws {
        guard result >= 0 else { throw BusError(.failed, "the answer cannot be written (\(String(cString: strerror(-result))))") }
    }

    func string(_ value: String) throws { try check(value.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }) }
    func objectPath(_ value: String) throws { try check(value.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "o")), $0) }) }

    func bool(_ value: Bool) throws {
        var number: Int32 = value ? 1 : 0
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "b")), &number))
    }

    func uint64(_ value: UInt64) throws {
        var number = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "t")), &number))
    }

    func bytes(_ value: [UInt8]) throws {
        try check(value.withUnsafeBytes { sd_bus_message_append_array(message, CChar(UInt8(ascii: "y")), $0.baseAddress, $0.count) })
    }

    func container(_ type: Character, _ contents: String, _ body: () throws -> Void) throws {
        try check(sd_bus_message_open_container(message, CChar(type.asciiValue!), contents))
        try body()
        try check(sd_bus_message_close_container(message))
    }

    func objectPaths(_ paths: [String]) throws {
        try container("a", "o") { for path in paths { try objectPath(path) } }
    }

    func stringDictionary(_ dictionary: [String: String]) throws {
        try container("a", "{ss}") {
            for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) {
                try container("e", "ss") {
                    try string(key)
                    try string(value)
                }
            }
        }
    }

    func value(_ value: BusValue) throws {
        switch value {
        case .string(let text): try string(text)
        case .objectPath(let path): try objectPath(path)
        case .bool(let flag): try bool(flag)
        case .uint64(let number): try uint64(number)
        case .bytes(let bytes): try self.bytes(bytes)
        case .objectPaths(let paths): try objectPaths(paths)
        case .stringDictionary(let dictionary): try stringDictionary(dictionary)
        }
    }

    func variant(_ value: BusValue) throws {
        try container("v", value.signature) { try self.value(value) }
    }

    func properties(_ properties: [(String, BusValue)]) throws {
        try container("a", "{sv}") {
            for (name, value) in properties {
                try container("e", "sv") {
                    try string(name)
                    try variant(value)
                }
            }
        }
    }

    func secret(_ secret: WireSecret) throws {
        try container("r", "oayays") {
            try objectPath(secret.session)
            try bytes(secret.parameters)
            try bytes(secret.value)
            try string(secret.contentType)
        }
    }
}
