import SecurityBase
import CryptoContract
import CryptoDispatcher
import Foundation

/// The keys derived from the master key (HKDF-Expand, RFC 5869 §2.3, with the uniformly random master key as
/// the pseudorandom key), and what the store computes with them: the keyed HMACs that index searchable
/// attributes and enforce uniqueness, and the MAC of persistent references.
struct ItemKeys: Sendable {
    private let index: KeyedMAC
    private let reference: KeyedMAC

    init(masterKey: any MasterKeyHolder) throws {
        index = try Self.expand(masterKey, info: "SecurityServices keychain v1: attribute index") { try KeyedMAC(key: $0) }
        reference = try Self.expand(masterKey, info: "SecurityServices keychain v1: persistent reference") {
            try KeyedMAC(key: $0)
        }
    }

    /// HKDF-Expand's T(1) = HMAC(PRK, info || 0x01): 32 bytes, one block with SHA-256, into `body` and wiped
    /// after it. The master key is used in place, never copied.
    private static func expand<R>(
        _ masterKey: any MasterKeyHolder, info: String, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        var okm = SecretBytes(zeroed: 32)
        let input = Array(info.utf8) + [1]
        try masterKey.withMasterKey { key in
            try input.withUnsafeBytes { input in
                try okm.withUnsafeMutableBytes { try Dispatcher.shared.hmac(.sha256, key: key, input: input, output: $0) }
            }
        }
        return try okm.withUnsafeBytes(body)
    }

    /// An HMAC-SHA256 keyed once for the store's life: the key's inner and outer states are computed once and each
    /// MAC starts from copies of them (measured: 560 ns keying per MAC, 350 ns restarting an EVP stream under a
    /// lock, now 2 compressions with no lock). The key lives in the ``HMACKey``, which wipes it when released.
    private struct KeyedMAC: Sendable {
        private let key: any HMACKey

        init(key: UnsafeRawBufferPointer) throws {
            self.key = try Dispatcher.shared.makeHMACKey(.sha256, key: key)
        }

        func callAsFunction(_ input: [UInt8], count: Int) throws -> [UInt8] {
            // The MAC on the stack, then the `count` bytes kept copied once into an array of that size.
            try withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { mac in
                try input.withUnsafeBytes { try key.authenticate($0, into: mac) }
                return Array(UnsafeRawBufferPointer(rebasing: mac[..<min(count, 32)]))
            }
        }
    }

    /// The index column value for `value` of attribute `key`: 16 bytes of HMAC, exact or case-folded.
    func indexValue(_ key: AttributeKey, _ value: AttributeValue, folded: Bool) throws -> [UInt8] {
        var input: [UInt8] = []
        input.reserveCapacity(64)
        input.appendUTF8(folded ? "ci:" : "eq:")
        input.appendUTF8(key.rawValue)
        input.append(0)
        switch value {
        case .string(let text): input.appendUTF8(folded ? Self.fold(text) : text)
        case .data(let data): input.append(contentsOf: data)
        default: AttributeCoding.append(key, value, to: &input)
        }
        return try index(input, count: 16)
    }

    /// The uniqueness value: the class, the access group, and the class's uniqueness attributes.
    func uniqueness(_ itemClass: ItemClass, group: String, sync: Bool, attributes: ItemAttributes) throws -> [UInt8] {
        let schema = ItemSchema.of(itemClass)
        var input: [UInt8] = []
        input.reserveCapacity(128)
        input.appendUTF8("uniq:")
        input.appendUTF8(itemClass.rawValue)
        input.append(0)
        input.appendUTF8(group)
        input.append(0)
        if schema.syncIsUnique { input.append(sync ? 1 : 0) }
        for key in schema.uniqueness {  // sorted by the schema
            if let value = attributes[key] { AttributeCoding.append(key, value, to: &input) }
        }
        return try index(input, count: 32)
    }

    /// The MAC that makes a persistent reference unforgeable.
    func referenceMAC(_ body: [UInt8]) throws -> [UInt8] { try reference(body, count: 16) }

    /// Case folding for kSecMatchCaseInsensitive (locale-independent). ASCII text folds to its lower case byte for
    /// byte, as Foundation folds it; Foundation's folding (through CoreFoundation) is for the rest: it was a
    /// visible share of every add, which folds each indexed string.
    static func fold(_ text: String) -> String {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return text.folding(options: [.caseInsensitive], locale: nil) }
        return String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
