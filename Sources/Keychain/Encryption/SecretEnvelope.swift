import SecurityBase
public import CryptoContract
public import CryptoDispatcher
import Entropy

/// How a secret is stored: AES-256-GCM under the store's wrapping key (the master key, or a password-locked
/// keychain's secrets key), bound to the item's identity and the format's version as associated data — so a blob
/// copied onto another row, opened with another key, or relabelled as another version fails to authenticate
/// instead of decrypting.
///
/// - Version 5 (written): version 3's layout and sealing. The version tells the store how it built the identity: from
///   version 4 on, a secret's identity says whether its item has an access control list, so that removing the list
///   from the row makes the secret fail to open; from version 5 on, also whether the item's access control asks for
///   the user, which the row says in a column of its own for the searches that read no attributes (a row that
///   claims otherwise does not open).
/// - Version 4 (read only): version 5's layout, the identity saying nothing of the user.
/// - Version 3 (read only): `3 | nonce(12) | tag(16) | ciphertext`, the plaintext padded so that the
///   blob does not give the secret's exact length away — a 0x80 byte, then zeros, to a multiple of
///   ``paddingBlock`` (ISO/IEC 7816-4 padding). One AEAD opening per read, with a context the store keyed once:
///   no key schedule per item. Each seal takes a fresh random nonce, as the key wrap of versions 1 and 2 did under
///   the same key: the number of nonces drawn under the key is the same as before.
/// - Version 2 (read only): `2 | wrapNonce(12) | wrappedKey(32) | wrapTag(16) | nonce(12) | tag(16) | ciphertext`:
///   the padded plaintext under a fresh per-item key, that key wrapped by the wrapping key; the version byte bound
///   into both associated data. Two openings per read, the second keying a new context.
/// - Version 1 (read only): version 2's layout, the plaintext unpadded, the identity alone as associated data.
///
/// Older blobs become version 5 when their row is next written (every seal writes version 5); those of versions 1
/// and 2, and version-3 secrets of items with an access control list, all at once through
/// ``KeychainStore/upgradeEnvelopes()``.
public enum SecretEnvelope {
    /// The version written.
    static let version: UInt8 = 5
    /// Sealed plaintexts are padded to a multiple of this (versions 2 and 3): lengths show only to within 32 bytes.
    static let paddingBlock = 32
    static let nonceSize = 12
    static let tagSize = 16
    static let itemKeySize = 32
    /// The header of versions 3 to 5: the version, the nonce and the tag.
    static let headerSize = 1 + nonceSize + tagSize
    /// The header of versions 1 and 2: the version, the wrapped item key with its nonce and tag, the nonce and tag.
    static let wrappedHeaderSize = 1 + nonceSize + itemKeySize + tagSize + nonceSize + tagSize

    /// The header's size in a blob of `version`.
    static func headerSize(of version: UInt8) -> Int { version >= 3 ? headerSize : wrappedHeaderSize }

    /// Where versions 1 and 2 keep the wrapped item key, after the version byte: its nonce, the key, its tag.
    static let wrapNonceRange = 1..<1 + nonceSize
    static let wrappedKeyRange = wrapNonceRange.upperBound..<wrapNonceRange.upperBound + itemKeySize
    static let wrapTagRange = wrappedKeyRange.upperBound..<wrappedKeyRange.upperBound + tagSize

    /// Encrypts `secret` for the item whose identity is `identity` (class and identifying attributes, in a
    /// canonical encoding chosen by the store).
    public static func seal(
        _ secret: [UInt8], identity: [UInt8], masterKey: any MasterKeyHolder, engine: any CryptoBackend = Dispatcher.shared
    ) throws -> [UInt8] {
        try seal(secret, identity: identity, wrapping: .holder(masterKey), engine: engine)
    }

    /// What wraps the item keys: the master key lent by its holder for each call, or a context keyed with it
    /// once (a store's, for its life).
    enum WrappingKey: Sendable {
        case holder(any MasterKeyHolder)
        case keyed(any AEADKey)

        func seal(
            _ engine: any CryptoBackend, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
            input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
        ) throws {
            switch self {
            case .holder(let holder):
                // The master key is used in place (never copied into an array that would outlive the call).
                try holder.withMasterKey {
                    try engine.seal(.aesGCM, key: $0, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
                }
            case .keyed(let key): try key.seal(nonce: nonce, aad: aad, input: input, output: output, tag: tag)
            }
        }

        func open(
            _ engine: any CryptoBackend, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
            input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
        ) throws {
            switch self {
            case .holder(let holder):
                try holder.withMasterKey {
                    try engine.open(.aesGCM, key: $0, nonce: nonce, aad: aad, input: input, tag: tag, output: output)
                }
            case .keyed(let key): try key.open(nonce: nonce, aad: aad, input: input, tag: tag, output: output)
            }
        }
    }

    /// The padded length of `count` plaintext bytes: at least one byte of padding, to a multiple of the block.
    static func paddedCount(_ count: Int) -> Int { (count / paddingBlock + 1) * paddingBlock }

    /// The associated data of a version: the identity, after the version byte from version 2 on.
    static func withAssociatedData<R>(
        _ identity: [UInt8], version: UInt8, _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        guard version >= 2 else { return try identity.withUnsafeBytes(body) }
        return try withUnsafeTemporaryAllocation(byteCount: identity.count + 1, alignment: 1) { aad in
            aad[0] = version
            identity.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: aad[1...]).copyMemory(from: $0) }
            return try body(UnsafeRawBufferPointer(aad))
        }
    }

    static func seal(
        _ secret: [UInt8], identity: [UInt8], wrapping: WrappingKey, engine: any CryptoBackend, version: UInt8 = version
    ) throws -> [UInt8] {
        try secret.withUnsafeBytes { try seal($0, identity: identity, wrapping: wrapping, engine: engine, version: version) }
    }

    static func seal(
        _ secret: UnsafeRawBufferPointer, identity: [UInt8], wrapping: WrappingKey, engine: any CryptoBackend,
        version: UInt8 = version
    ) throws -> [UInt8] {
        // One buffer for the whole blob, filled in place: the nonces from getrandom, the wrapped key (versions 1 and
        // 2) and the ciphertext written by the engine where they belong. The padded plaintext is made in wiped storage.
        let padded = version >= 2 ? paddedCount(secret.count) : secret.count
        var plaintext = SecretBytes(zeroed: padded)
        plaintext.withUnsafeMutableBytes { buffer in
            UnsafeMutableRawBufferPointer(rebasing: buffer[..<secret.count]).copyMemory(from: secret)
            if padded > secret.count { buffer[secret.count] = 0x80 }
        }
        let header = headerSize(of: version)
        var blob = [UInt8](repeating: 0, count: header + padded)
        try blob.withUnsafeMutableBytes { blob in
            blob[0] = version
            let nonce = UnsafeMutableRawBufferPointer(rebasing: blob[header - nonceSize - tagSize..<header - tagSize])
            let tag = UnsafeMutableRawBufferPointer(rebasing: blob[header - tagSize..<header])
            let ciphertext = UnsafeMutableRawBufferPointer(rebasing: blob[header...])
            try EntropySource.fill(nonce)
            try withAssociatedData(identity, version: version) { aad in
                guard version < 3 else {
                    try plaintext.withUnsafeBytes {
                        try wrapping.seal(engine, nonce: UnsafeRawBufferPointer(nonce), aad: aad, input: $0, output: ciphertext, tag: tag)
                    }
                    return
                }
                let wrapNonce = UnsafeMutableRawBufferPointer(rebasing: blob[wrapNonceRange])
                let wrappedKey = UnsafeMutableRawBufferPointer(rebasing: blob[wrappedKeyRange])
                let wrapTag = UnsafeMutableRawBufferPointer(rebasing: blob[wrapTagRange])
                try EntropySource.fill(wrapNonce)
                var itemKey = SecretBytes(zeroed: itemKeySize)
                try itemKey.withUnsafeMutableBytes { try EntropySource.fill($0) }
                try itemKey.withUnsafeBytes { itemKey in
                    try wrapping.seal(engine, nonce: UnsafeRawBufferPointer(wrapNonce), aad: aad, input: itemKey, output: wrappedKey, tag: wrapTag)
                    try plaintext.withUnsafeBytes {
                        try engine.seal(.aesGCM, key: itemKey, nonce: UnsafeRawBufferPointer(nonce), aad: aad, input: $0, output: ciphertext, tag: tag)
                    }
                }
            }
        }
        return blob
    }

    /// Decrypts a blob made by ``seal(_:identity:masterKey:engine:)`` for the same identity and master key.
    /// - Throws: ``KeychainError`` `.decode` for a malformed blob, another identity or another master key.
    public static func open(
        _ blob: [UInt8], identity: [UInt8], masterKey: any MasterKeyHolder, engine: any CryptoBackend = Dispatcher.shared
    ) throws -> [UInt8] {
        try open(blob, identity: identity, wrapping: .holder(masterKey), engine: engine)
    }

    static func open(_ blob: [UInt8], identity: [UInt8], wrapping: WrappingKey, engine: any CryptoBackend) throws -> [UInt8] {
        try blob.withUnsafeBytes { blob in
            var plaintext = [UInt8](repeating: 0, count: try plaintextCount(blob))
            let count = try plaintext.withUnsafeMutableBytes { try open(blob, identity: identity, wrapping: wrapping, engine: engine, into: $0) }
            plaintext.removeSubrange(count...)  // the padding, no secret
            return plaintext
        }
    }

    /// The room the plaintext of `blob` needs (from version 2 on, the secret and its padding).
    /// - Throws: ``KeychainError`` `.decode` when `blob` is not a version-1 to 5 envelope.
    static func plaintextCount(_ blob: UnsafeRawBufferPointer) throws -> Int {
        guard let version = blob.first, (1...5).contains(version), blob.count >= headerSize(of: version) else {
            throw KeychainError(.decode, "the stored secret is not a version-1 to 5 envelope")
        }
        let count = blob.count - headerSize(of: version)
        guard version == 1 || count % paddingBlock == 0 && count > 0 else {
            throw KeychainError(.decode, "the stored secret's padding is malformed")
        }
        return count
    }

    /// Decrypts `blob` into `plaintext` (``plaintextCount(_:)`` bytes) and returns the secret's length (the bytes
    /// after it are padding); `plaintext` holds nothing of the secret when this throws.
    @discardableResult
    static func open(
        _ blob: UnsafeRawBufferPointer, identity: [UInt8], wrapping: WrappingKey, engine: any CryptoBackend,
        into plaintext: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        guard try plaintextCount(blob) == plaintext.count else {
            throw KeychainError(.decode, "the stored secret does not fit its buffer")
        }
        let version = blob[0]
        let header = headerSize(of: version)
        let nonce = UnsafeRawBufferPointer(rebasing: blob[header - nonceSize - tagSize..<header - tagSize])
        let tag = UnsafeRawBufferPointer(rebasing: blob[header - tagSize..<header])
        let ciphertext = UnsafeRawBufferPointer(rebasing: blob[header...])
        do {
            try withAssociatedData(identity, version: version) { aad in
                guard version < 3 else {
                    try wrapping.open(engine, nonce: nonce, aad: aad, input: ciphertext, tag: tag, output: plaintext)
                    return
                }
                let wrapNonce = UnsafeRawBufferPointer(rebasing: blob[wrapNonceRange])
                let wrappedKey = UnsafeRawBufferPointer(rebasing: blob[wrappedKeyRange])
                let wrapTag = UnsafeRawBufferPointer(rebasing: blob[wrapTagRange])
                // The item key on the stack, wiped before it goes.
                try withUnsafeTemporaryAllocation(byteCount: itemKeySize, alignment: 16) { itemKey in
                    itemKey.initializeMemory(as: UInt8.self, repeating: 0)
                    defer { secureWipe(itemKey) }
                    try wrapping.open(engine, nonce: wrapNonce, aad: aad, input: wrappedKey, tag: wrapTag, output: itemKey)
                    try engine.open(.aesGCM, key: UnsafeRawBufferPointer(itemKey), nonce: nonce, aad: aad, input: ciphertext, tag: tag, output: plaintext)
                }
            }
        } catch let error as CryptoError where error.code == .integrity {
            throw KeychainError(.decode, "the stored secret does not authenticate for this item and master key")
        }
        guard version >= 2 else { return plaintext.count }
        // ISO/IEC 7816-4: zeros back to the 0x80 that ends the secret (authenticated: only a wrong writer gets here).
        var end = plaintext.count - 1
        while end >= 0 && plaintext[end] == 0 { end -= 1 }
        guard end >= 0, plaintext[end] == 0x80 else {
            secureWipe(plaintext)
            throw KeychainError(.decode, "the stored secret's padding is malformed")
        }
        return end
    }
}
