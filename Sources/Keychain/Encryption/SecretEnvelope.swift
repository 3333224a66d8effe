public import CryptoContract
public import CryptoDispatcher
import Entropy

/// How a secret is stored: AES-256-GCM under a fresh per-item key, that key wrapped (AES-256-GCM) by the
/// master key, both bound to the item's identity as associated data — so a blob copied onto another row, or
/// opened with another master key, fails to authenticate instead of decrypting.
///
/// Layout (version 1): `01 | wrapNonce(12) | wrappedKey(32) | wrapTag(16) | nonce(12) | tag(16) | ciphertext`.
public enum SecretEnvelope {
    static let version: UInt8 = 1
    static let nonceSize = 12
    static let tagSize = 16
    static let itemKeySize = 32
    static let headerSize = 1 + nonceSize + itemKeySize + tagSize + nonceSize + tagSize

    /// Encrypts `secret` for the item whose identity is `identity` (class and identifying attributes, in a
    /// canonical encoding chosen by the store).
    public static func seal(
        _ secret: [UInt8], identity: [UInt8], masterKey: any MasterKeyHolder, engine: any CryptoBackend = Dispatcher.shared
    ) throws -> [UInt8] {
        var itemKey = try EntropySource.bytes(count: itemKeySize)
        defer { itemKey.withUnsafeMutableBytes { secureWipe($0) } }
        let wrapNonce = try EntropySource.bytes(count: nonceSize)
        let nonce = try EntropySource.bytes(count: nonceSize)
        // The master key is used in place (never copied into an array that would outlive the call).
        let wrapped = try masterKey.withMasterKey { try engine.seal(.aesGCM, key: $0, nonce: wrapNonce, aad: identity, itemKey) }
        let sealed = try engine.seal(.aesGCM, key: itemKey, nonce: nonce, aad: identity, secret)
        return [version] + wrapNonce + wrapped.ciphertext + wrapped.tag + nonce + sealed.tag + sealed.ciphertext
    }

    /// Decrypts a blob made by ``seal(_:identity:masterKey:engine:)`` for the same identity and master key.
    /// - Throws: ``KeychainError`` `.decode` for a malformed blob, another identity or another master key.
    public static func open(
        _ blob: [UInt8], identity: [UInt8], masterKey: any MasterKeyHolder, engine: any CryptoBackend = Dispatcher.shared
    ) throws -> [UInt8] {
        guard blob.count >= headerSize, blob[0] == version else {
            throw KeychainError(.decode, "the stored secret is not a version-\(version) envelope")
        }
        var offset = 1
        func take(_ count: Int) -> [UInt8] {
            defer { offset += count }
            return Array(blob[offset..<offset + count])
        }
        let wrapNonce = take(nonceSize), wrappedKey = take(itemKeySize), wrapTag = take(tagSize)
        let nonce = take(nonceSize), tag = take(tagSize)
        let ciphertext = Array(blob[offset...])
        do {
            var itemKey = try masterKey.withMasterKey {
                try engine.open(.aesGCM, key: $0, nonce: wrapNonce, aad: identity, wrappedKey, tag: wrapTag)
            }
            defer { itemKey.withUnsafeMutableBytes { secureWipe($0) } }
            return try engine.open(.aesGCM, key: itemKey, nonce: nonce, aad: identity, ciphertext, tag: tag)
        } catch let error as CryptoError where error.code == .integrity {
            throw KeychainError(.decode, "the stored secret does not authenticate for this item and master key")
        }
    }
}
