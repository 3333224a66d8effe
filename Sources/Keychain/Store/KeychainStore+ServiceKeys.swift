public import KeychainWire
public import Foundation

extension KeychainStore {
    /// A private-key operation done by the keychain service with the key of the key or identity item
    /// `reference` names, in the caller's groups: the key does not leave the service.
    /// - Parameters:
    ///   - algorithm: Apple's `SecKeyAlgorithm` string.
    ///   - authentication: the proof of the user, for a key whose access control asks for it (the one the key was
    ///     found with).
    /// - Returns: the signature or the plaintext.
    /// - Throws: ``KeychainError`` `.unimplemented` for an embedded keychain (its caller holds the key and does the
    ///   operation itself); `.itemNotFound` when no key or identity of the caller's groups has the reference;
    ///   `.parameter` for a public key, an algorithm the key does not run, or input it does not take.
    public func keyOperation(
        _ kind: KeychainWire.KeyOperationKind, reference: Data, algorithm: String, input: Data, authentication: ItemAuthentication? = nil
    ) throws -> Data {
        guard let service else {
            throw KeychainError(.unimplemented, "key operations are the keychain service's; an embedded keychain's caller holds the key")
        }
        let request = KeychainWire.Request.keyOperation(kind, reference: reference, algorithm: algorithm, input: input, authentication: authentication)
        guard case .bytes(let output) = try service.call(request) else { throw Self.unexpectedAnswer }
        return output
    }

    /// A private key generated and kept by the keychain service (the key never exists in this process).
    /// - Parameters:
    ///   - keyType: Apple's `kSecAttrKeyType` code, 42 (RSA, 1024–4096 bits in whole bytes) or 73 (EC, 256, 384
    ///     or 521 bits).
    ///   - attributes: added to those the key derives (application tag, label, access group, …).
    /// - Returns: the key item as the service seals it (``KeychainWire/heldKeyTokenID``), with what `returning` asks.
    /// - Throws: ``KeychainError`` `.unimplemented` for an embedded keychain; `.parameter` for another type or
    ///   size; the store's errors (`duplicateItem`, `missingEntitlement`, …).
    public func generateKey(keyType: Int64, bits: Int, attributes: ItemAttributes, returning: ReturnOptions) throws -> KeychainItem {
        guard let service else {
            throw KeychainError(.unimplemented, "key generation in the keychain is the keychain service's; an embedded keychain stores keys made by its caller")
        }
        let request = KeychainWire.Request.generateKey(keyType: keyType, bits: bits, attributes: attributes, returning: returning)
        guard case .item(let item) = try service.call(request) else { throw Self.unexpectedAnswer }
        return item
    }
}
