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
    static func perform(
        _ kind: KeychainWire.KeyOperationKind, reference: Data, algorithm: String, input: Data, on store: KeychainStore
    ) throws -> Data {
        let found = try store.find(ItemQuery(nil, persistentReference: reference, returning: .reference))  // an identity's key comes with .reference
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

    /// The private key of a key item or an identity item; nil for any other item and for a public key.
    private static func privateKey(of item: KeychainItem) -> AsymmetricKey? {
        switch item.itemClass {
        case .key: StoredKey(item).map(\.key).flatMap { $0.isPrivate ? $0 : nil }
        case .identity: StoredIdentity(item)?.privateKey
        default: nil
        }
    }
}
