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

    /// An HMAC key set up once for many messages: what depends on the key alone (the inner and outer states) is
    /// computed here, not per message. The key is copied into the returned object, which wipes it when released.
    /// - Throws: ``CryptoError`` `.unsupported`.
    func makeHMACKey(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any HMACKey
}

/// What a backend without authenticated encryption inherits: `seal` and `open` throw `.unsupported` (the kernel
/// backend and plug-ins that only offload ciphers and digests), and ``makeAEADKey(_:key:)`` keeps the key for the
/// backend's own one-shot calls.
extension CryptoBackend {
    /// The default: the key kept (wiped on release) and handed to this backend's one-shot calls.
    public func makeAEADKey(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer) throws -> any AEADKey {
        try algorithm.validate(keyCount: key.count, nonceCount: 12, tagCount: 16)
        return OneShotAEADKey(algorithm, key: key, backend: self)
    }

    /// The default: the key kept (wiped on release) and handed to this backend's one-shot ``hmac``.
    public func makeHMACKey(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any HMACKey {
        guard supports(.hmac(algorithm)) else { throw CryptoError(.unsupported, "the \(kind) backend has no HMAC over \(algorithm)") }
        return OneShotHMACKey(algorithm, key: key, backend: self)
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
}
