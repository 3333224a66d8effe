public import Foundation

/// The private-key operations of a key another process holds (``AsymmetricKey/init(publicKey:heldBy:)``): the
/// keychain service signs and decrypts with keys that never leave it.
public protocol PrivateKeyOperations: Sendable {
    /// The signature of `data` (a message or a digest, as the algorithm says).
    func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data
    /// The plaintext of `data`.
    func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data
}
