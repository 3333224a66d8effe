public import Certificates
public import Foundation
import Synchronization

/// The holder of a key held elsewhere, as the tests play it: it signs and decrypts with a key of this process and
/// counts the calls that reach it (the keychain service's part for the keys it holds).
public final class CountingKeyHolder: PrivateKeyOperations {
    public let key: AsymmetricKey
    private let count = Mutex(0)

    public init(_ key: AsymmetricKey) { self.key = key }

    /// Signatures and decryptions asked of this holder so far.
    public var calls: Int { count.withLock { $0 } }

    public func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        count.withLock { $0 += 1 }
        return try key.signature(for: data, algorithm: algorithm)
    }

    public func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        count.withLock { $0 += 1 }
        return try key.decrypt(data, algorithm: algorithm)
    }
}
