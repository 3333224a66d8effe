internal import COpenSSL
import SecurityBase
public import CryptoContract
import Synchronization

/// AES-GCM on EVP, on the thread's cipher context.
enum OpenSSLAEAD {
    /// The key a thread's context holds between calls (the longest GCM key's length; OpenSSL reads the context's).
    private static let zeroKey = [UInt8](repeating: 0, count: 32)

    static func run(
        _ encrypt: Bool, _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
        aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer,
        tag: UnsafeMutableRawBufferPointer
    ) throws {
        try algorithm.validate(keyCount: key.count, nonceCount: nonce.count, tagCount: tag.count)
        try CryptoError.checkOutput(output, holds: input.count)
        guard let cipher = OpenSSLAlgorithms.shared.gcm(keySize: key.count) else {
            throw CryptoError(.unsupported, "OpenSSL offers no \(algorithm) with a \(key.count)-byte key here")
        }
        guard let context = ThreadContexts.cipher() else { throw CryptoError(.outOfMemory, "EVP_CIPHER_CTX_new failed") }
        // Run last: the call's key does not stay in the thread's context. The all-zero key overwrites the schedule
        // (the context keeps its cipher, so the next GCM call does not remake it); failing that, the context goes.
        defer { if EVP_CipherInit_ex2(context, nil, Self.zeroKey, nil, -1, nil) != 1 { ThreadContexts.discardCipher() } }
        let direction: Int32 = encrypt ? 1 : 0
        // Choosing the cipher frees and remakes OpenSSL's per-cipher state, so when the thread's context already
        // holds this cipher (the previous call was GCM with this key size) it is kept and only the direction, key
        // and IV are new. The context's IV length is GCM's default (12) between calls: a 12-byte nonce (nearly
        // every caller's) goes in with the key in one call; another length is set between choosing the cipher and
        // giving key and IV (EVP_CTRL_AEAD_SET_IVLEN), and set back to 12 when the call ends.
        let chosen = EVP_CIPHER_CTX_get0_cipher(context) == cipher
        let keyBytes = key.bindMemory(to: UInt8.self).baseAddress
        let nonceBytes = nonce.bindMemory(to: UInt8.self).baseAddress
        if nonce.count == Self.defaultNonceSize {
            guard EVP_CipherInit_ex2(context, chosen ? nil : cipher, keyBytes, nonceBytes, direction, nil) == 1 else {
                throw CryptoError.openSSL("AES-GCM init")
            }
            try process(context, encrypt, algorithm, aad: aad, input: input, output: output, tag: tag)
            return
        }
        defer {
            if EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(Self.defaultNonceSize), nil) != 1 {
                // The context cannot keep the invariant: free it, the thread's next call makes a new one.
                ThreadContexts.discardCipher()
            }
        }
        guard EVP_CipherInit_ex2(context, chosen ? nil : cipher, nil, nil, direction, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonce.count), nil) == 1,
            EVP_CipherInit_ex2(context, nil, keyBytes, nonceBytes, direction, nil) == 1
        else { throw CryptoError.openSSL("AES-GCM init") }
        try process(context, encrypt, algorithm, aad: aad, input: input, output: output, tag: tag)
    }

    /// GCM's default nonce length, which the thread's context keeps between calls.
    static let defaultNonceSize = 12

    /// The operation on a context given its key and nonce: associated data, input, tag. A tag that does not
    /// verify leaves `output` zeroed.
    static func process(
        _ context: OpaquePointer, _ encrypt: Bool, _ algorithm: AEADAlgorithm, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        var length: Int32 = 0
        if aad.count > 0 {
            guard EVP_CipherUpdate(context, nil, &length, aad.bindMemory(to: UInt8.self).baseAddress, Int32(aad.count)) == 1
            else { throw CryptoError.openSSL("AES-GCM associated data") }
        }
        let written = try EVPCipher.update(context, input, output)
        if !encrypt {
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tag.count), tag.baseAddress) == 1 else {
                throw CryptoError.openSSL("AES-GCM set tag")
            }
        }
        var scratch = (UInt64(0), UInt64(0))
        let finished = withUnsafeMutableBytes(of: &scratch) {
            EVP_CipherFinal_ex(context, $0.bindMemory(to: UInt8.self).baseAddress, &length) == 1
        }
        guard finished else {
            ERR_clear_error()
            // The tag did not verify: the plaintext must not be used, so none is left behind.
            secureWipe(UnsafeMutableRawBufferPointer(rebasing: output[..<written]))
            throw CryptoError(.integrity, "\(algorithm) authentication failed")
        }
        if encrypt {
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tag.count), tag.baseAddress) == 1 else {
                throw CryptoError.openSSL("AES-GCM get tag")
            }
        }
    }
}

extension SoftwareBackend {
    public func seal(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        try OpenSSLAEAD.run(true, algorithm, key: key, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
    }

    public func open(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        // OpenSSL reads the expected tag; it is not written.
        let tag = UnsafeMutableRawBufferPointer(mutating: tag)
        try OpenSSLAEAD.run(false, algorithm, key: key, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
    }

    public func makeAEADKey(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer) throws -> any AEADKey {
        try OpenSSLAEADKey(algorithm, key: key)
    }
}

/// An AES-GCM key on a context of its own, keyed once: each operation gives only its nonce (measured in C on
/// a 32-byte input with 70 bytes of associated data: 390 ns with the key, 196 ns without). Owns the context
/// and frees it in `deinit` (OpenSSL cleanses the key schedule).
final class OpenSSLAEADKey: AEADKey, @unchecked Sendable {
    // @unchecked: the context is only touched while holding `lock`. (Not a Mutex<OpaquePointer>: every use hands the
    // context to OpenSSL together with the caller's buffers, which region checking cannot tell apart from it.)
    let algorithm: AEADAlgorithm
    private let keySize: Int
    private let context: OpaquePointer
    private let lock = Mutex(())

    init(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer) throws {
        try algorithm.validate(keyCount: key.count, nonceCount: OpenSSLAEADKey.nonceSize, tagCount: 16)
        guard let cipher = OpenSSLAlgorithms.shared.gcm(keySize: key.count) else {
            throw CryptoError(.unsupported, "OpenSSL offers no \(algorithm) with a \(key.count)-byte key here")
        }
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError(.outOfMemory, "EVP_CIPHER_CTX_new failed") }
        self.context = context
        self.algorithm = algorithm
        keySize = key.count
        guard EVP_CipherInit_ex2(context, cipher, key.bindMemory(to: UInt8.self).baseAddress, nil, 1, nil) == 1 else {
            throw CryptoError.openSSL("AES-GCM key")
        }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// The nonce length the context keeps, GCM's default (the one-shot calls take others).
    static let nonceSize = 12

    func seal(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        try run(true, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
    }

    func open(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        try run(false, nonce: nonce, aad: aad, input: input, output: output, tag: UnsafeMutableRawBufferPointer(mutating: tag))
    }

    private func run(
        _ encrypt: Bool, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        try algorithm.validate(keyCount: keySize, nonceCount: nonce.count, tagCount: tag.count)
        guard nonce.count == Self.nonceSize else {
            throw CryptoError(.invalidIVSize, "this \(algorithm) key takes \(Self.nonceSize)-byte nonces, got \(nonce.count)")
        }
        try CryptoError.checkOutput(output, holds: input.count)
        try lock.withLock { _ in
            // A NULL key keeps the schedule; the nonce restarts the counter and the hash.
            guard EVP_CipherInit_ex2(context, nil, nil, nonce.bindMemory(to: UInt8.self).baseAddress, encrypt ? 1 : 0, nil) == 1
            else { throw CryptoError.openSSL("AES-GCM nonce") }
            try OpenSSLAEAD.process(context, encrypt, algorithm, aad: aad, input: input, output: output, tag: tag)
        }
    }
}
