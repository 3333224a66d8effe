internal import COpenSSL
internal import COpenSSLShims
import SecurityBase
public import CryptoContract

/// EVP cipher calls shared by the one-shot path and the streams.
@usableFromInline enum EVPCipher {
    /// Initialises `context` for `spec` with `key` and `iv` (both already validated).
    static func initialise(
        _ context: OpaquePointer, _ cipher: OpaquePointer, _ spec: CipherSpec, _ direction: CipherDirection,
        key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?
    ) throws {
        let encrypt: Int32 = direction == .encrypt ? 1 : 0
        let keyBytes = key.bindMemory(to: UInt8.self).baseAddress
        let ivBytes = spec.ivSize > 0 ? iv?.bindMemory(to: UInt8.self).baseAddress : nil
        if spec.algorithm.hasFixedKeyLength {
            guard EVP_CipherInit_ex2(context, cipher, keyBytes, ivBytes, encrypt, nil) == 1 else {
                throw CryptoError.openSSL("EVP_CipherInit_ex2(\(spec))")
            }
        } else {
            // Variable-length keys: the length must be set between choosing the cipher and giving the key,
            // because the provider checks the key against the context's current key length.
            guard EVP_CipherInit_ex2(context, cipher, nil, nil, encrypt, nil) == 1,
                EVP_CIPHER_CTX_set_key_length(context, Int32(key.count)) == 1,
                spec.algorithm != .rc2 || copenssl_set_rc2_key_bits(context, key.count * 8) == 1,
                EVP_CipherInit_ex2(context, nil, keyBytes, ivBytes, encrypt, nil) == 1
            else { throw CryptoError.openSSL("EVP_CipherInit_ex2(\(spec), \(key.count)-byte key)") }
        }
        EVP_CIPHER_CTX_set_padding(context, spec.effectivePadding == .pkcs7 ? 1 : 0)
    }

    /// `EVP_CipherUpdate` over any length (its length argument is an `int`). Returns bytes written.
    @usableFromInline static func update(_ context: OpaquePointer, _ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer)
        throws -> Int
    {
        guard input.count > 0 else { return 0 }
        guard let outBase = output.baseAddress else {
            // No output buffer: callers checked that nothing is due (a block mode buffering a partial block),
            // but OpenSSL still wants a valid pointer.
            return try withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { try update(context, input, $0) }
        }
        let out = outBase.assumingMemoryBound(to: UInt8.self)
        let inp = input.baseAddress!.assumingMemoryBound(to: UInt8.self)  // !: count > 0
        if input.count <= Int(Int32.max) {
            var outLength: Int32 = 0
            guard EVP_CipherUpdate(context, out, &outLength, inp, Int32(input.count)) == 1 else {
                throw CryptoError.openSSL("EVP_CipherUpdate")
            }
            return Int(outLength)
        }
        let chunk = 1 << 30
        var consumed = 0
        var written = 0
        while consumed < input.count {
            let length = min(chunk, input.count - consumed)
            var outLength: Int32 = 0
            guard EVP_CipherUpdate(context, out + written, &outLength, inp + consumed, Int32(length)) == 1 else {
                throw CryptoError.openSSL("EVP_CipherUpdate")
            }
            consumed += length
            written += Int(outLength)
        }
        return written
    }

    fileprivate static func finish(
        _ context: OpaquePointer, _ spec: CipherSpec, _ direction: CipherDirection, _ output: UnsafeMutablePointer<UInt8>
    ) throws -> Int {
        var outLength: Int32 = 0
        guard EVP_CipherFinal_ex(context, output, &outLength) == 1 else {
            if direction == .decrypt && spec.effectivePadding == .pkcs7 {
                ERR_clear_error()
                throw CryptoError(.decode, "\(spec) decryption found invalid padding")
            }
            if spec.mode.isBlockMode {
                ERR_clear_error()
                throw CryptoError(.alignment, "\(spec) input is not a whole number of blocks")
            }
            throw CryptoError.openSSL("EVP_CipherFinal_ex")
        }
        return Int(outLength)
    }
}

/// `EVP_CipherFinal_ex`: a failed padded decryption is a decode error.
///
/// Finishing writes at most one block. Where `output` has room for a whole block OpenSSL writes there
/// directly; otherwise into a scratch block, copied if it fits, so OpenSSL never writes past a short buffer.
/// A free function for the reason ``keyedCipherContext(_:_:_:key:iv:)`` gives.
@usableFromInline func finishCipher(
    _ context: OpaquePointer, _ spec: CipherSpec, _ direction: CipherDirection, _ output: UnsafeMutableRawBufferPointer
) throws -> Int {
    if output.count >= spec.algorithm.blockSize, let base = output.baseAddress {
        return try EVPCipher.finish(context, spec, direction, base.assumingMemoryBound(to: UInt8.self))
    }
    return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { scratch in
        defer { secureWipe(UnsafeMutableRawBufferPointer(scratch)) }
        let count = try EVPCipher.finish(context, spec, direction, scratch.baseAddress!)  // !: capacity 32
        try CryptoError.checkOutput(output, holds: count)
        if count > 0 { output.baseAddress!.copyMemory(from: scratch.baseAddress!, byteCount: count) }  // !: non-empty
        return count
    }
}

/// A streaming EVP cipher. Owns its context and a wiped copy of the key (for ``reset(iv:)``).
final class OpenSSLCipherStream: CipherStream {
    let spec: CipherSpec
    let direction: CipherDirection
    private let cipher: OpaquePointer
    private let context: OpaquePointer
    private let key: SecretBytes
    private var iv: [UInt8]?
    private var accounting: CipherStreamAccounting
    private var finished = false

    init(
        _ direction: CipherDirection, _ spec: CipherSpec, cipher: OpaquePointer, key: UnsafeRawBufferPointer,
        iv: UnsafeRawBufferPointer?
    ) throws {
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError(.outOfMemory, "EVP_CIPHER_CTX_new failed") }
        self.context = context
        self.spec = spec
        self.direction = direction
        self.cipher = cipher
        self.key = SecretBytes(copying: key)
        self.iv = iv.map { Array($0) }
        accounting = CipherStreamAccounting(spec: spec, direction: direction)
        try EVPCipher.initialise(context, cipher, spec, direction, key: key, iv: iv)
    }

    deinit {
        // EVP_CIPHER_CTX_free cleanses the key schedule before freeing.
        EVP_CIPHER_CTX_free(context)
    }

    func outputLength(forInputCount inputCount: Int, final: Bool) -> Int {
        accounting.outputLength(forInputCount: inputCount, final: final)
    }

    func update(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !finished else { throw CryptoError(.callSequence, "update after finish; reset first") }
        try CryptoError.checkOutput(output, holds: accounting.updateOutputCount(input.count))
        let written = try EVPCipher.update(context, input, output)
        accounting.recordUpdate(input: input.count, output: written)
        return written
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !finished else { throw CryptoError(.callSequence, "finish called twice; reset first") }
        // A padded decryption must end on a whole block, as the one-shot and the kernel stream say (.alignment);
        // EVP_CipherFinal_ex would fail it as bad padding (found by the cryptor fuzz target).
        let block = spec.algorithm.blockSize
        if spec.mode.isBlockMode && direction == .decrypt && spec.effectivePadding == .pkcs7 && accounting.held != block {
            throw CryptoError(.alignment, "padded \(spec) decryption needs a non-empty multiple of \(block) bytes")
        }
        try CryptoError.checkOutput(output, holds: accounting.outputLength(forInputCount: 0, final: true))
        let written = try finishCipher(context, spec, direction, output)
        finished = true
        return written
    }

    func reset(iv newIV: UnsafeRawBufferPointer?) throws {
        if let newIV {
            try spec.validate(keyCount: key.count, ivCount: newIV.count)
            iv = Array(newIV)
        }
        try key.withUnsafeBytes { key in
            try iv.withUnsafeBufferOrNil { iv in
                try EVPCipher.initialise(context, cipher, spec, direction, key: key, iv: iv)
            }
        }
        accounting.reset()
        finished = false
    }
}
