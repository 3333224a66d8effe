/// Which backend served a call.
public struct BackendKind: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(name: String) { self.name = name }

    /// OpenSSL 3 libcrypto in the process.
    public static let software = BackendKind(name: "software")
    /// The Linux kernel crypto API over AF_ALG.
    public static let kernel = BackendKind(name: "kernel")

    public var description: String { name }
}

/// A provider of symmetric ciphers, digests and HMAC.
///
/// The core calls work on raw buffers so that no layer above has to copy or allocate; the extensions below
/// give `[UInt8]` conveniences. Every call validates its input and throws ``CryptoError`` without writing
/// output when the input is bad. Implementations are thread-safe; the streaming objects they return are not
/// (one owner at a time).
public protocol CryptoBackend: Sendable {
    var kind: BackendKind { get }

    /// Whether the backend can run `operation` on this machine.
    func supports(_ operation: CryptoOperation) -> Bool

    /// One-shot encryption or decryption.
    /// - Parameters:
    ///   - iv: one block for the modes that take an IV; ignored by ECB and RC4.
    ///   - output: must hold ``CipherSpec/oneShotOutputLength(_:inputCount:)`` bytes (a padded decryption
    ///     writes fewer).
    /// - Returns: the number of bytes written.
    /// - Throws: ``CryptoError``.
    func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int

    /// A streaming cipher, keyed and ready for ``CipherStream/update(_:into:)``.
    func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?
    ) throws -> any CipherStream

    /// One-shot digest into `output` (at least ``DigestAlgorithm/outputSize`` bytes).
    func digest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
        throws

    /// A streaming digest.
    func makeDigestStream(_ algorithm: DigestAlgorithm) throws -> any DigestStream

    /// One-shot HMAC into `output` (at least ``DigestAlgorithm/outputSize`` bytes). Any key length works.
    func hmac(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws

    /// A streaming HMAC.
    func makeHMACStream(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any DigestStream

    /// Authenticated encryption: `input` encrypted into `output` (as long as `input`), the tag into `tag`
    /// (its length is the tag length). Backends without AEAD inherit an `unsupported` default.
    func seal(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws

    /// Authenticated decryption. A tag that does not verify throws ``CryptoError/Code/integrity`` and leaves no
    /// plaintext in `output`.
    func open(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws

    /// An AEAD key set up once for many operations, each with its own nonce: the key schedule is computed
    /// here, not per call. The key is copied into the returned object, which wipes it when released.
    /// - Throws: ``CryptoError`` `.invalidKeySize`, `.unsupported`.
    func makeAEADKey(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer) throws -> any AEADKey
}

extension CryptoBackend {
    /// The default: the key kept (wiped on release) and handed to this backend's one-shot calls.
    public func makeAEADKey(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer) throws -> any AEADKey {
        try algorithm.validate(keyCount: key.count, nonceCount: 12, tagCount: 16)
        return OneShotAEADKey(algorithm, key: key, backend: self)
    }

    public func seal(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        throw CryptoError(.unsupported, "the \(kind) backend has no \(algorithm)")
    }

    public func open(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        throw CryptoError(.unsupported, "the \(kind) backend has no \(algorithm)")
    }

    /// `(ciphertext, tag)` of `plaintext`, with a tag of `tagLength` bytes.
    public func seal(
        _ algorithm: AEADAlgorithm, key: [UInt8], nonce: [UInt8], aad: [UInt8] = [], _ plaintext: [UInt8], tagLength: Int = 16
    ) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        try key.withUnsafeBytes { try seal(algorithm, key: $0, nonce: nonce, aad: aad, plaintext, tagLength: tagLength) }
    }

    /// As above, with a key the caller holds in place (a master key that must not be copied).
    public func seal(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: [UInt8], aad: [UInt8] = [], _ plaintext: [UInt8],
        tagLength: Int = 16
    ) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagLength)
        try nonce.withUnsafeBytes { nonce in
            try aad.withUnsafeBytes { aad in
                try plaintext.withUnsafeBytes { input in
                    try ciphertext.withUnsafeMutableBytes { output in
                        try tag.withUnsafeMutableBytes {
                            try seal(algorithm, key: key, nonce: nonce, aad: aad, input: input, output: output, tag: $0)
                        }
                    }
                }
            }
        }
        return (ciphertext, tag)
    }

    /// The plaintext of `ciphertext`, or ``CryptoError/Code/integrity`` when the tag does not verify.
    public func open(
        _ algorithm: AEADAlgorithm, key: [UInt8], nonce: [UInt8], aad: [UInt8] = [], _ ciphertext: [UInt8], tag: [UInt8]
    ) throws -> [UInt8] {
        try key.withUnsafeBytes { try open(algorithm, key: $0, nonce: nonce, aad: aad, ciphertext, tag: tag) }
    }

    /// As above, with a key the caller holds in place.
    public func open(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: [UInt8], aad: [UInt8] = [], _ ciphertext: [UInt8],
        tag: [UInt8]
    ) throws -> [UInt8] {
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        try nonce.withUnsafeBytes { nonce in
            try aad.withUnsafeBytes { aad in
                try ciphertext.withUnsafeBytes { input in
                    try tag.withUnsafeBytes { tag in
                        try plaintext.withUnsafeMutableBytes {
                            try open(algorithm, key: key, nonce: nonce, aad: aad, input: input, tag: tag, output: $0)
                        }
                    }
                }
            }
        }
        return plaintext
    }
}

/// A cipher fed in pieces. One owner at a time; after ``finish(into:)`` only ``reset(iv:)`` is allowed.
public protocol CipherStream: AnyObject {
    var spec: CipherSpec { get }
    var direction: CipherDirection { get }

    /// The most bytes the next ``update(_:into:)`` (or, with `final`, the update plus ``finish(into:)``) can
    /// write for `inputCount` more bytes of input.
    func outputLength(forInputCount inputCount: Int, final: Bool) -> Int

    /// Processes `input`; returns the number of bytes written (block modes hold back a partial block).
    func update(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int

    /// Ends the stream: pads, or checks and strips padding. Returns the number of bytes written.
    func finish(into output: UnsafeMutableRawBufferPointer) throws -> Int

    /// Starts over with the same key, and a new IV if given (else the original one).
    func reset(iv: UnsafeRawBufferPointer?) throws
}

/// A digest or HMAC fed in pieces. One owner at a time; after ``finish(into:)`` only ``reset()`` is allowed.
public protocol DigestStream: AnyObject {
    var algorithm: DigestAlgorithm { get }
    func update(_ input: UnsafeRawBufferPointer) throws
    /// Writes the digest (``DigestAlgorithm/outputSize`` bytes) into `output`.
    func finish(into output: UnsafeMutableRawBufferPointer) throws
    /// Starts over (an HMAC keeps its key).
    func reset() throws
}

/// Byte bookkeeping for a cipher stream: how much input is held back, and so how much output the next call
/// can produce. Shared by every backend so that they agree on ``CipherStream/outputLength(forInputCount:final:)``.
public struct CipherStreamAccounting: Sendable {
    public let spec: CipherSpec
    public let direction: CipherDirection
    /// Input bytes taken but not yet answered by output.
    public private(set) var held = 0

    public init(spec: CipherSpec, direction: CipherDirection) {
        self.spec = spec
        self.direction = direction
    }

    /// Output of an update of `count` more bytes, exactly as an EVP-style block buffer produces it.
    public func updateOutputCount(_ count: Int) -> Int {
        guard spec.mode.isBlockMode else { return count }
        let block = spec.algorithm.blockSize
        let total = held + count
        if direction == .decrypt && spec.effectivePadding == .pkcs7 {
            // The last whole block is held back until finish, where its padding is checked.
            return total == 0 ? 0 : ((total - 1) / block) * block
        }
        return (total / block) * block
    }

    public func outputLength(forInputCount count: Int, final: Bool) -> Int {
        guard final else { return updateOutputCount(count) }
        guard spec.mode.isBlockMode else { return count }
        let total = held + count
        let block = spec.algorithm.blockSize
        switch (direction, spec.effectivePadding) {
        case (.encrypt, .pkcs7): return (total / block + 1) * block
        default: return total
        }
    }

    public mutating func recordUpdate(input: Int, output: Int) { held += input - output }
    public mutating func reset() { held = 0 }
}

extension CryptoBackend {
    /// Encrypts or decrypts `input` in one call.
    public func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: [UInt8], iv: [UInt8]? = nil, _ input: [UInt8]
    ) throws -> [UInt8] {
        // Key and IV errors come before length errors, as in the raw call.
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        let capacity = try spec.oneShotOutputLength(direction, inputCount: input.count)
        var output = [UInt8](repeating: 0, count: capacity)
        let written = try key.withUnsafeBytes { key in
            try input.withUnsafeBytes { input in
                try output.withUnsafeMutableBytes { output in
                    if let iv {
                        try iv.withUnsafeBytes { iv in
                            try crypt(direction, spec, key: key, iv: iv, input: input, output: output)
                        }
                    } else {
                        try crypt(direction, spec, key: key, iv: nil, input: input, output: output)
                    }
                }
            }
        }
        output.removeLast(capacity - written)
        return output
    }

    public func digest(_ algorithm: DigestAlgorithm, _ input: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        try input.withUnsafeBytes { input in
            try output.withUnsafeMutableBytes { try digest(algorithm, input: input, output: $0) }
        }
        return output
    }

    public func hmac(_ algorithm: DigestAlgorithm, key: [UInt8], _ input: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        try key.withUnsafeBytes { key in
            try input.withUnsafeBytes { input in
                try output.withUnsafeMutableBytes { try hmac(algorithm, key: key, input: input, output: $0) }
            }
        }
        return output
    }

    public func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: [UInt8], iv: [UInt8]? = nil
    ) throws -> any CipherStream {
        try key.withUnsafeBytes { key in
            if let iv {
                try iv.withUnsafeBytes { try makeCipherStream(direction, spec, key: key, iv: $0) }
            } else {
                try makeCipherStream(direction, spec, key: key, iv: nil)
            }
        }
    }

    public func makeHMACStream(_ algorithm: DigestAlgorithm, key: [UInt8]) throws -> any DigestStream {
        try key.withUnsafeBytes { try makeHMACStream(algorithm, key: $0) }
    }
}

extension CipherStream {
    public func update(_ input: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: outputLength(forInputCount: input.count, final: false))
        let written = try input.withUnsafeBytes { input in
            try output.withUnsafeMutableBytes { try update(input, into: $0) }
        }
        output.removeLast(output.count - written)
        return output
    }

    public func finish() throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: outputLength(forInputCount: 0, final: true))
        let written = try output.withUnsafeMutableBytes { try finish(into: $0) }
        output.removeLast(output.count - written)
        return output
    }
}

extension DigestStream {
    public func update(_ input: [UInt8]) throws {
        try input.withUnsafeBytes { try update($0) }
    }

    public func finish() throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        try output.withUnsafeMutableBytes { try finish(into: $0) }
        return output
    }
}

extension Optional where Wrapped == [UInt8] {
    /// Calls `body` with the bytes, or with `nil` when there are none (an optional IV, say).
    public func withUnsafeBufferOrNil<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        switch self {
        case .some(let bytes): try bytes.withUnsafeBytes { try body($0) }
        case .none: try body(nil)
        }
    }
}

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
