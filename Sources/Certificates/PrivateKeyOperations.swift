public import Foundation

/// The private-key operations of a key held outside this process's memory (``AsymmetricKey/init(publicKey:heldBy:)``):
/// the keychain service signs and decrypts with keys that never leave it, a TPM with keys that never leave the TPM.
public protocol PrivateKeyOperations: Sendable {
    /// Who holds the key, for messages ("the keychain service", "the TPM").
    var holderDescription: String { get }
    /// The signature of `data` (a message or a digest, as the algorithm says).
    func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data
    /// The plaintext of `data`.
    func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data
    /// Elliptic-curve Diffie–Hellman with `peer`, a public key on the key's curve: the shared point's x-coordinate
    /// (``AsymmetricKey/sharedSecret(with:)``).
    func sharedSecret(with peer: AsymmetricKey) throws -> Data
    /// Whether the holder pads RSA itself (PKCS#1 v1.5, PSS, OAEP). A holder that does only the raw private
    /// operation (a TPM) says no: the key then pads and unpads here and asks the holder for the raw operation.
    var performsRSAPadding: Bool { get }
}

extension PrivateKeyOperations {
    public var holderDescription: String { "another process (the keychain service)" }
    public var performsRSAPadding: Bool { true }

    /// A holder without key exchange refuses it.
    public func sharedSecret(with peer: AsymmetricKey) throws -> Data {
        throw KeyError(.heldElsewhere, "the private key is held by \(holderDescription), which does no key exchange with it")
    }
}
