import CryptoContract
import CryptoDispatcher
import Foundation

/// The keys derived from the master key (HKDF-Expand, RFC 5869 §2.3, with the uniformly random master key as
/// the pseudorandom key), and what the store computes with them: the keyed HMACs that index searchable
/// attributes and enforce uniqueness, and the MAC of persistent references.
struct ItemKeys: Sendable {
    private let index: SecretBytes
    private let reference: SecretBytes

    init(masterKey: any MasterKeyHolder) throws {
        index = try Self.expand(masterKey, info: "SecurityServices keychain v1: attribute index")
        reference = try Self.expand(masterKey, info: "SecurityServices keychain v1: persistent reference")
    }

    private static func expand(_ masterKey: any MasterKeyHolder, info: String) throws -> SecretBytes {
        // T(1) = HMAC(PRK, info || 0x01): 32 bytes, one block of HKDF-Expand with SHA-256.
        // The master key is used in place, never copied.
        var okm = [UInt8](repeating: 0, count: 32)
        let input = Array(info.utf8) + [1]
        try masterKey.withMasterKey { key in
            try input.withUnsafeBytes { input in
                try okm.withUnsafeMutableBytes { try Dispatcher.shared.hmac(.sha256, key: key, input: input, output: $0) }
            }
        }
        defer { okm.withUnsafeMutableBytes { secureWipe($0) } }
        return okm.withUnsafeBytes { SecretBytes(copying: $0) }
    }

    private static func mac(_ key: SecretBytes, _ input: [UInt8], count: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        try key.withUnsafeBytes { key in
            try input.withUnsafeBytes { input in
                try output.withUnsafeMutableBytes { try Dispatcher.shared.hmac(.sha256, key: key, input: input, output: $0) }
            }
        }
        return Array(output.prefix(count))
    }

    /// The index column value for `value` of attribute `key`: 16 bytes of HMAC, exact or case-folded.
    func indexValue(_ key: AttributeKey, _ value: AttributeValue, folded: Bool) throws -> [UInt8] {
        var input: [UInt8] = []
        input.reserveCapacity(64)
        input.append(contentsOf: (folded ? "ci:" : "eq:").utf8)
        input.append(contentsOf: key.rawValue.utf8)
        input.append(0)
        switch value {
        case .string(let text): input.append(contentsOf: (folded ? Self.fold(text) : text).utf8)
        case .data(let data): input.append(contentsOf: data)
        default: AttributeCoding.append(key, value, to: &input)
        }
        return try Self.mac(index, input, count: 16)
    }

    /// The uniqueness value: the class, the access group, and the class's uniqueness attributes.
    func uniqueness(_ itemClass: ItemClass, group: String, sync: Bool, attributes: ItemAttributes) throws -> [UInt8] {
        let schema = ItemSchema.of(itemClass)
        var input: [UInt8] = []
        input.reserveCapacity(128)
        input.append(contentsOf: "uniq:".utf8)
        input.append(contentsOf: itemClass.rawValue.utf8)
        input.append(0)
        input.append(contentsOf: group.utf8)
        input.append(0)
        if schema.syncIsUnique { input.append(sync ? 1 : 0) }
        for key in schema.uniqueness {  // sorted by the schema
            if let value = attributes[key] { AttributeCoding.append(key, value, to: &input) }
        }
        return try Self.mac(index, input, count: 32)
    }

    /// The MAC that makes a persistent reference unforgeable.
    func referenceMAC(_ body: [UInt8]) throws -> [UInt8] { try Self.mac(reference, body, count: 16) }

    /// Case folding for kSecMatchCaseInsensitive (locale-independent).
    static func fold(_ text: String) -> String { text.folding(options: [.caseInsensitive], locale: nil) }
}
