internal import COpenSSL
public import CryptoContract

/// AES-GCM on EVP, on the thread's cipher context.
enum OpenSSLAEAD {
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
        let direction: Int32 = encrypt ? 1 : 0
        // EVP_CTRL_AEAD_SET_IVLEN goes between choosing the cipher and giving key and IV.
        guard EVP_CipherInit_ex2(context, cipher, nil, nil, direction, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonce.count), nil) == 1,
            EVP_CipherInit_ex2(
                context, nil, key.bindMemory(to: UInt8.self).baseAddress, nonce.bindMemory(to: UInt8.self).baseAddress,
                direction, nil) == 1
        else { throw CryptoError.openSSL("AES-GCM init") }
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
}
