import CryptoContract
import Entropy
public import Foundation

/// Random bytes for keys and IVs, from the kernel's getrandom(2) (``EntropySource``).
public enum SecureRandom {
    /// `count` random bytes.
    /// - Throws: ``EntropyError`` when the kernel refuses; never returns unfilled bytes.
    public static func bytes(count: Int) throws -> Data { Data(try EntropySource.bytes(count: count)) }
}
