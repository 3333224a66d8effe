import SecurityBase
public import CryptoContract
import CryptoDispatcher
public import Foundation

/// Message digests through the dispatcher (SHA-1 goes to the kernel above the threshold).
///
/// ```swift
/// let sum = try Digest.hash(.sha256, data)
/// ```
public struct Digest {
    private let stream: any DigestStream

    /// A streaming digest.
    public init(_ algorithm: DigestAlgorithm) throws {
        stream = try Dispatcher.shared.makeDigestStream(algorithm)
    }

    public mutating func update(_ data: some DataProtocol) throws { try stream.update(Array(data)) }

    public func finalize() throws -> Data { Data(try stream.finish()) }

    /// The digest of `data` in one call.
    public static func hash(_ algorithm: DigestAlgorithm, _ data: some DataProtocol) throws -> Data {
        Data(try Dispatcher.shared.digest(algorithm, Array(data)))
    }
}

/// HMAC (RFC 2104) through the dispatcher (HMAC-SHA1 goes to the kernel above the threshold).
///
/// ```swift
/// let tag = try HMAC.authenticationCode(.sha256, key: key, data)
/// ```
public struct HMAC {
    private let stream: any DigestStream

    /// A streaming HMAC; any key length works.
    /// - Throws: ``CryptoError`` `.unsupported` for MD2 and MD4.
    public init(_ algorithm: DigestAlgorithm, key: some DataProtocol) throws {
        stream = try Dispatcher.shared.makeHMACStream(algorithm, key: SecretBytes(key))
    }

    public mutating func update(_ data: some DataProtocol) throws { try stream.update(Array(data)) }

    public func finalize() throws -> Data { Data(try stream.finish()) }

    public static func authenticationCode(_ algorithm: DigestAlgorithm, key: some DataProtocol, _ data: some DataProtocol)
        throws -> Data
    {
        Data(try Dispatcher.shared.hmac(algorithm, key: SecretBytes(key), Array(data)))
    }

    /// Compares two MACs in time independent of where they differ.
    public static func isEqual(_ a: some DataProtocol, _ b: some DataProtocol) -> Bool {
        constantTimeEquals(Array(a), Array(b))
    }
}
