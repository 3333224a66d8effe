public import Foundation
public import KeychainModel
import SecurityBase

/// The keychain service's wire: how a client and `securityd` exchange the keychain calls over a Unix socket.
///
/// Every message is a frame: a 4-byte big-endian length, then that many bytes of body (at most
/// ``maximumMessage``). A body starts with the protocol ``version`` and a kind byte. Values are written in
/// order, big-endian, each variable-length one (bytes, text, lists) behind its 4-byte length; text is UTF-8.
/// A reader checks every length against what is left and every tag against the values it knows before it
/// builds anything, so a truncated, oversized or malformed message is a ``KeychainError/Code/parameter`` error
/// (`errSecParam`) and reaches no store.
public enum KeychainWire {
    /// The protocol version both sides speak; a body of another version is refused.
    public static let version: UInt8 = 1
    /// The largest body either side sends or accepts: 4 MiB.
    public static let maximumMessage = 4 << 20
    /// The `kSecAttrTokenID` of the private keys the service holds: a key or identity item it answers with carries
    /// this token ID, its persistent reference, and, for a key, its public key's representation as data; the
    /// private key stays in the service, which signs and decrypts with it (``Request/keyOperation(_:reference:algorithm:input:)``),
    /// as a Secure Enclave key stays in its token.
    public static let heldKeyTokenID = "com.securityservices.securityd"
    /// At most this many attributes in one dictionary, items in one batch, or queries in one condition list.
    static let maximumCount = 4096

    /// What a client asks.
    public enum Request: Sendable {
        /// Which access groups the service grants this caller; with groups named, the connection acts in those of
        /// them it is granted (none granted: `missingEntitlement`).
        case hello(requesting: [String])
        case add(ItemClass, attributes: ItemAttributes, data: Data?, returning: ReturnOptions)
        case addItems([NewItem], unlessAnyMatches: [ItemQuery])
        case find(ItemQuery)
        case update(ItemQuery, attributes: ItemAttributes, data: Data?)
        case delete(ItemQuery)
        case addIdentity(certificate: ItemAttributes, certificateData: Data, key: ItemAttributes, keyData: Data, returning: ReturnOptions)
        /// A private-key operation done in the service with the key of the key or identity item `reference` (a
        /// persistent reference) names; `algorithm` is Apple's `SecKeyAlgorithm` string. The key stays in the
        /// service; the answer is ``Response/bytes(_:)``.
        case keyOperation(KeyOperationKind, reference: Data, algorithm: String, input: Data, authentication: ItemAuthentication? = nil)
        /// A private key generated and stored by the service, which it then holds: `keyType` is Apple's
        /// `kSecAttrKeyType` code (42 RSA, 73 EC), `bits` its size; `attributes` are added to the ones the key
        /// derives (its application tag, label, access group). The answer is the sealed key item.
        case generateKey(keyType: Int64, bits: Int, attributes: ItemAttributes, returning: ReturnOptions)
        /// The password lock of the caller's keychain, which the service holds for every process of the caller's
        /// uid: the answer is ``Response/lockStatus(passwordLocked:locked:)`` as it is after the request
        /// (``Response/lockSettings(interval:lockOnSleep:)`` for ``LockRequest/settings``).
        case keychainLock(LockRequest)
        /// Makes the connection act on the caller's keychain named `name` (a file name: letters, digits, `.`, `_`,
        /// `-`) instead of its default one; `create` makes it when missing (else `itemNotFound`). The answer is its
        /// ``Response/lockStatus(passwordLocked:locked:)``.
        case openKeychain(name: String, create: Bool)
        /// Deletes the caller's keychain named `name` (its items, password and key). The answer is `count(1)`.
        case deleteKeychain(name: String)
    }

    /// What a ``Request/keychainLock(_:)`` asks.
    public enum LockRequest: Sendable, Equatable {
        case status
        /// Gives the keychain, while it holds no item and no password, a password (it is unlocked after).
        case setPassword(Data)
        case unlock(Data)
        case lock
        case changePassword(old: Data, new: Data)
        /// Sets when the keychain locks itself: after `interval` seconds without use (nil: never).
        case setSettings(interval: Int64?, lockOnSleep: Bool)
        /// When the keychain locks itself.
        case settings
        /// Checks the password without unlocking (the proof of the user, LocalAuthentication's policy evaluation).
        case verifyPassword(Data)
    }

    /// The private-key operations the service does.
    public enum KeyOperationKind: UInt8, Sendable {
        /// The signature of the input (a message or a digest, as the algorithm says).
        case sign = 0
        /// The plaintext of the input.
        case decrypt = 1
    }

    /// What the service answers: one result per request, or the error that request met.
    public enum Response: Sendable {
        case groups([String])
        case item(KeychainItem)
        case added(Bool)
        case items([KeychainItem])
        case count(Int)
        case failure(KeychainError)
        /// A key operation's output.
        case bytes(Data)
        /// Whether the keychain has a password, and whether it is locked now.
        case lockStatus(passwordLocked: Bool, locked: Bool)
        /// When the keychain locks itself: after `interval` seconds without use (nil: never).
        case lockSettings(interval: Int64?, lockOnSleep: Bool)
    }

    // MARK: Encoding

    public static func encode(_ request: Request) -> [UInt8] {
        var writer = WireWriter()
        writer.u8(version)
        switch request {
        case .hello(let groups):
            writer.u8(0)
            writer.u32(groups.count)
            for group in groups { writer.text(group) }
        case .add(let itemClass, let attributes, let data, let returning):
            writer.u8(1)
            writer.itemClass(itemClass)
            writer.attributes(attributes)
            writer.optionalBytes(data)
            writer.u8(UInt8(truncatingIfNeeded: returning.rawValue))
        case .addItems(let items, let conditions):
            writer.u8(2)
            writer.u32(items.count)
            for item in items {
                writer.itemClass(item.itemClass)
                writer.attributes(item.attributes)
                writer.optionalBytes(item.data)
            }
            writer.u32(conditions.count)
            for query in conditions { writer.query(query) }
        case .find(let query):
            writer.u8(3)
            writer.query(query)
        case .update(let query, let attributes, let data):
            writer.u8(4)
            writer.query(query)
            writer.attributes(attributes)
            writer.optionalBytes(data)
        case .delete(let query):
            writer.u8(5)
            writer.query(query)
        case .addIdentity(let certificate, let certificateData, let key, let keyData, let returning):
            writer.u8(6)
            writer.attributes(certificate)
            writer.raw(certificateData)
            writer.attributes(key)
            writer.raw(keyData)
            writer.u8(UInt8(truncatingIfNeeded: returning.rawValue))
        case .keyOperation(let kind, let reference, let algorithm, let input, let authentication):
            writer.u8(7)
            writer.u8(kind.rawValue)
            writer.raw(reference)
            writer.text(algorithm)
            writer.raw(input)
            writer.authentication(authentication)
        case .generateKey(let keyType, let bits, let attributes, let returning):
            writer.u8(8)
            writer.i64(keyType)
            writer.i64(Int64(bits))
            writer.attributes(attributes)
            writer.u8(UInt8(truncatingIfNeeded: returning.rawValue))
        case .keychainLock(let lock):
            writer.u8(9)
            switch lock {
            case .status: writer.u8(0)
            case .setPassword(let password):
                writer.u8(1)
                writer.raw(password)
            case .unlock(let password):
                writer.u8(2)
                writer.raw(password)
            case .lock: writer.u8(3)
            case .changePassword(let old, let new):
                writer.u8(4)
                writer.raw(old)
                writer.raw(new)
            case .setSettings(let interval, let lockOnSleep):
                writer.u8(5)
                writer.i64(interval ?? -1)
                writer.u8(lockOnSleep ? 1 : 0)
            case .settings: writer.u8(6)
            case .verifyPassword(let password):
                writer.u8(7)
                writer.raw(password)
            }
        case .openKeychain(let name, let create):
            writer.u8(10)
            writer.text(name)
            writer.u8(create ? 1 : 0)
        case .deleteKeychain(let name):
            writer.u8(11)
            writer.text(name)
        }
        return writer.bytes
    }

    public static func encode(_ response: Response) -> [UInt8] {
        var writer = WireWriter()
        writer.u8(version)
        switch response {
        case .groups(let groups):
            writer.u8(0)
            writer.u32(groups.count)
            for group in groups { writer.text(group) }
        case .item(let item):
            writer.u8(1)
            writer.item(item)
        case .added(let added):
            writer.u8(2)
            writer.u8(added ? 1 : 0)
        case .items(let items):
            writer.u8(3)
            writer.u32(items.count)
            for item in items { writer.item(item) }
        case .count(let count):
            writer.u8(4)
            writer.i64(Int64(count))
        case .failure(let error):
            writer.u8(5)
            writer.text(error.code.name)
            writer.text(error.reason)
        case .bytes(let bytes):
            writer.u8(6)
            writer.raw(bytes)
        case .lockStatus(let passwordLocked, let locked):
            writer.u8(7)
            writer.u8(passwordLocked ? 1 : 0)
            writer.u8(locked ? 1 : 0)
        case .lockSettings(let interval, let lockOnSleep):
            writer.u8(8)
            writer.i64(interval ?? -1)
            writer.u8(lockOnSleep ? 1 : 0)
        }
        return writer.bytes
    }

    // MARK: Decoding

    /// - Throws: ``KeychainError`` `.parameter` naming what is malformed.
    public static func decodeRequest(_ body: [UInt8]) throws -> Request {
        var reader = try WireReader(body)
        let request: Request
        switch try reader.u8() {
        case 0:
            var groups: [String] = []
            for _ in 0..<(try reader.count()) {
                let group = try reader.text()
                guard !group.isEmpty else { throw WireReader.malformed("an empty access group") }
                groups.append(group)
            }
            request = .hello(requesting: groups)
        case 1:
            request = .add(
                try reader.itemClass(), attributes: try reader.attributes(), data: try reader.optionalBytes(),
                returning: try reader.returnOptions())
        case 2:
            var items: [NewItem] = []
            for _ in 0..<(try reader.count()) {
                items.append(.init(try reader.itemClass(), attributes: try reader.attributes(), data: try reader.optionalBytes()))
            }
            var conditions: [ItemQuery] = []
            for _ in 0..<(try reader.count()) { conditions.append(try reader.query()) }
            request = .addItems(items, unlessAnyMatches: conditions)
        case 3: request = .find(try reader.query())
        case 4: request = .update(try reader.query(), attributes: try reader.attributes(), data: try reader.optionalBytes())
        case 5: request = .delete(try reader.query())
        case 6:
            request = .addIdentity(
                certificate: try reader.attributes(), certificateData: try reader.raw(), key: try reader.attributes(),
                keyData: try reader.raw(), returning: try reader.returnOptions())
        case 7:
            guard let kind = KeyOperationKind(rawValue: try reader.u8()) else { throw WireReader.malformed("an unknown key operation") }
            request = .keyOperation(
                kind, reference: try reader.raw(), algorithm: try reader.text(), input: try reader.raw(), authentication: try reader.authentication())
        case 8:
            let keyType = try reader.i64()
            let bits = try reader.i64()
            guard (0...16_384).contains(bits) else { throw WireReader.malformed("a key size of \(bits) bits") }
            request = .generateKey(keyType: keyType, bits: Int(bits), attributes: try reader.attributes(), returning: try reader.returnOptions())
        case 9:
            switch try reader.u8() {
            case 0: request = .keychainLock(.status)
            case 1: request = .keychainLock(.setPassword(try reader.raw()))
            case 2: request = .keychainLock(.unlock(try reader.raw()))
            case 3: request = .keychainLock(.lock)
            case 4: request = .keychainLock(.changePassword(old: try reader.raw(), new: try reader.raw()))
            case 5: request = .keychainLock(.setSettings(interval: try reader.interval(), lockOnSleep: try reader.bool()))
            case 6: request = .keychainLock(.settings)
            case 7: request = .keychainLock(.verifyPassword(try reader.raw()))
            case let kind: throw WireReader.malformed("unknown keychain lock request \(kind)")
            }
        case 10: request = .openKeychain(name: try reader.text(), create: try reader.bool())
        case 11: request = .deleteKeychain(name: try reader.text())
        case let kind: throw WireReader.malformed("unknown request kind \(kind)")
        }
        try reader.end()
        return request
    }

    /// - Throws: ``KeychainError`` `.parameter` naming what is malformed.
    public static func decodeResponse(_ body: [UInt8]) throws -> Response {
        var reader = try WireReader(body)
        let response: Response
        switch try reader.u8() {
        case 0:
            var groups: [String] = []
            for _ in 0..<(try reader.count()) { groups.append(try reader.text()) }
            response = .groups(groups)
        case 1: response = .item(try reader.item())
        case 2: response = .added(try reader.bool())
        case 3:
            var items: [KeychainItem] = []
            for _ in 0..<(try reader.count(maximum: Int(UInt32.max))) { items.append(try reader.item()) }
            response = .items(items)
        case 4:
            let count = try reader.i64()
            guard count >= 0 else { throw WireReader.malformed("a negative count") }
            response = .count(Int(count))
        case 5:
            let name = try reader.text()
            let reason = try reader.text()
            guard let code = KeychainError.knownCodes.first(where: { $0.name == name }) else {
                throw WireReader.malformed("an unknown error code")
            }
            response = .failure(KeychainError(code, reason))
        case 6: response = .bytes(try reader.raw())
        case 7: response = .lockStatus(passwordLocked: try reader.bool(), locked: try reader.bool())
        case 8: response = .lockSettings(interval: try reader.interval(), lockOnSleep: try reader.bool())
        case let kind: throw WireReader.malformed("unknown response kind \(kind)")
        }
        try reader.end()
        return response
    }
}

extension KeychainError {
    /// Every code a service may answer with.
    static let knownCodes: [Code] = [
        .decode, .masterKey, .io, .database, .duplicateItem, .itemNotFound, .parameter, .noSuchAttribute, .noSuchClass,
        .missingEntitlement, .unimplemented, .authFailed, .interactionNotAllowed, .noAccessForItem, .diskFull, .readOnly,
    ]
}
