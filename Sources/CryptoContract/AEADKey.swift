import SecurityBase
/// A keyed AEAD (see ``CryptoBackend/makeAEADKey(_:key:)``). Safe to use from several threads.
public protocol AEADKey: AnyObject, Sendable {
    var algorithm: AEADAlgorithm { get }

    /// Encrypts `input` into `output` (as long) and writes the tag (its length is the tag's).
    func seal(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws

    /// Decrypts `input` into `output` when `tag` verifies; otherwise throws `.integrity` and leaves `output`
    /// zeroed.
    func open(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws
}

/// An ``AEADKey`` over a backend's one-shot calls, for backends with nothing better.
final class OneShotAEADKey<Backend: CryptoBackend>: AEADKey {
    let algorithm: AEADAlgorithm
    private let key: SecretBytes
    private let backend: Backend

    init(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, backend: Backend) {
        self.algorithm = algorithm
        self.key = SecretBytes(copying: key)
        self.backend = backend
    }

    func seal(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        try key.withUnsafeBytes {
            try backend.seal(algorithm, key: $0, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
        }
    }

    func open(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        try key.withUnsafeBytes {
            try backend.open(algorithm, key: $0, nonce: nonce, aad: aad, input: input, tag: tag, output: output)
        }
    }
}

/// A keyed HMAC (see ``CryptoBackend/makeHMACKey(_:key:)``). Safe to use from several threads.
public protocol HMACKey: AnyObject, Sendable {
    var algorithm: DigestAlgorithm { get }

    /// The MAC of `input` into `output` (room for the digest's size).
    func authenticate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws
}

/// An ``HMACKey`` over a backend's one-shot calls, for backends (and hashes) with nothing better.
public final class OneShotHMACKey<Backend: CryptoBackend>: HMACKey {
    public let algorithm: DigestAlgorithm
    private let key: SecretBytes
    private let backend: Backend

    public init(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, backend: Backend) {
        self.algorithm = algorithm
        self.key = SecretBytes(copying: key)
        self.backend = backend
    }

    public func authenticate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws {
        try key.withUnsafeBytes { try backend.hmac(algorithm, key: $0, input: input, output: output) }
    }
}

extension HMACKey {
    /// The MAC of `input`.
    public func authenticate(_ input: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        try input.withUnsafeBytes { input in try output.withUnsafeMutableBytes { try authenticate(input, into: $0) } }
        return output
    }
}

extension AEADKey {
    public func seal(nonce: [UInt8], aad: [UInt8] = [], _ plaintext: [UInt8], tagLength: Int = 16) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagLength)
        try nonce.withUnsafeBytes { nonce in
            try aad.withUnsafeBytes { aad in
                try plaintext.withUnsafeBytes { input in
                    try ciphertext.withUnsafeMutableBytes { output in
                        try tag.withUnsafeMutableBytes { try seal(nonce: nonce, aad: aad, input: input, output: output, tag: $0) }
                    }
                }
            }
        }
        return (ciphertext, tag)
    }

    public func open(nonce: [UInt8], aad: [UInt8] = [], _ ciphertext: [UInt8], tag: [UInt8]) throws -> [UInt8] {
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        try nonce.withUnsafeBytes { nonce in
            try aad.withUnsafeBytes { aad in
                try ciphertext.withUnsafeBytes { input in
                    try tag.withUnsafeBytes { tag in
                        try plaintext.withUnsafeMutableBytes { try open(nonce: nonce, aad: aad, input: input, tag: tag, output: $0) }
                    }
                }
            }
        }
        return plaintext
    }
}
