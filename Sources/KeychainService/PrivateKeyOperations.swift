import KeychainWire
import Certificates
import Foundation
import Keychain
import KeychainItems

/// The service's private-key operations (``KeychainWire/Request/keyOperation(_:reference:algorithm:input:)``):
/// the key is read from the caller's own keychain, in the caller's groups, used, and freed (OpenSSL clears a
/// private key's numbers as it frees them); only the signature or the plaintext leaves the service.
enum PrivateKeyOperations {
    /// - Throws: ``KeychainError`` `.itemNotFound` when no item of the caller's groups has `reference` (another
    ///   application's key is not found, as its items are not); `.parameter` for an item that holds no private
    ///   key, an algorithm name Apple does not define or the key does not run, and input the key does not take.
    /// A key whose access control asks for the user is used only with `authentication`'s proof.
    static func perform(
        _ kind: KeychainWire.KeyOperationKind, reference: Data, algorithm: String, input: Data, authentication: ItemAuthentication?,
        on store: EmbeddedKeychain
    ) throws -> Data {
        // An identity's key comes with .reference.
        let found = try store.find(ItemQuery(nil, persistentReference: reference, returning: .reference, authentication: authentication))
        guard let item = found.first, let key = privateKey(of: item) else {
            throw KeychainError(.parameter, "the reference names no private key")
        }
        do {
            switch (KeyOperation(algorithmName: algorithm), kind) {
            case (.signature(let scheme)?, .sign):
                guard key.supports(scheme, signing: true) else { break }
                return try key.signature(for: input, algorithm: scheme)
            case (.encryption(let scheme)?, .decrypt):
                guard key.supports(scheme, encrypting: false) else { break }
                return try key.decrypt(input, algorithm: scheme)
            default:
                break
            }
        } catch let error as KeyError {
            throw KeychainError(.parameter, error.reason)
        }
        throw KeychainError(.parameter, "\(algorithm): algorithm not supported by the key")
    }

    /// Generates a private key and stores it in the caller's keychain, in the caller's groups.
    /// - Returns: the stored item, unsealed (the caller seals it).
    /// - Throws: ``KeychainError`` `.parameter` for a type other than RSA (42) or EC (73), or a size the type does not
    ///   have; the store's errors.
    static func generate(
        keyType: Int64, bits: Int, attributes: ItemAttributes, returning: ReturnOptions, on store: EmbeddedKeychain
    ) throws -> KeychainItem {
        let key: AsymmetricKey
        do {
            switch KeyType(keychainTypeCode: keyType) {
            case .rsa?: key = try AsymmetricKey.generateRSA(bits: bits)
            case .ellipticCurve?:
                guard let curve = EllipticCurve(bits: bits) else { throw KeychainError(.parameter, "EC keys are 256, 384 or 521 bits, not \(bits)") }
                key = try AsymmetricKey.generateEC(curve: curve)
            default: throw KeychainError(.parameter, "kSecAttrKeyType \(keyType) is not RSA or EC")
            }
        } catch let error as KeyError {
            throw KeychainError(.parameter, error.reason)
        }
        // What the key derives wins over what the caller sent (class, type, sizes, application label, usage).
        let derived = try KeyItemAttributes(key, label: nil)
        return try store.add(
            .key, attributes: attributes.merging(derived.attributes) { _, derived in derived }, data: derived.data,
            returning: HeldKeys.storeReturning(.key, returning))
    }

    /// The private key of a key item or an identity item; nil for any other item and for a public key.
    private static func privateKey(of item: KeychainItem) -> AsymmetricKey? {
        switch item.itemClass {
        case .key: StoredKey(item).map(\.key).flatMap { $0.isPrivate ? $0 : nil }
        case .identity: StoredIdentity(item)?.privateKey
        default: nil
        }
    }
}
