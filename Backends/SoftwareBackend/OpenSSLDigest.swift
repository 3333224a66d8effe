internal import COpenSSL
internal import COpenSSLShims
import CryptoContract

/// A streaming EVP digest. Owns its context.
final class OpenSSLDigestStream: DigestStream {
    let algorithm: DigestAlgorithm
    private let md: OpaquePointer
    private let context: OpaquePointer
    private var finished = false

    init(_ algorithm: DigestAlgorithm, md: OpaquePointer) throws {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError(.outOfMemory, "EVP_MD_CTX_new failed") }
        self.context = context
        self.algorithm = algorithm
        self.md = md
        guard EVP_DigestInit_ex2(context, md, nil) == 1 else { throw CryptoError.openSSL("EVP_DigestInit_ex2") }
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ input: UnsafeRawBufferPointer) throws {
        guard !finished else { throw CryptoError(.callSequence, "update after finish; reset first") }
        guard input.count > 0 else { return }
        guard EVP_DigestUpdate(context, input.baseAddress, input.count) == 1 else {
            throw CryptoError.openSSL("EVP_DigestUpdate")
        }
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws {
        guard !finished else { throw CryptoError(.callSequence, "finish called twice; reset first") }
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        guard EVP_DigestFinal_ex(context, output.bindMemory(to: UInt8.self).baseAddress, nil) == 1 else {
            throw CryptoError.openSSL("EVP_DigestFinal_ex")
        }
        finished = true
    }

    func reset() throws {
        guard EVP_DigestInit_ex2(context, md, nil) == 1 else { throw CryptoError.openSSL("EVP_DigestInit_ex2") }
        finished = false
    }
}

/// A streaming EVP HMAC. Owns its context, which holds the key (OpenSSL cleanses it when freed).
final class OpenSSLHMACStream: DigestStream {
    let algorithm: DigestAlgorithm
    private let context: OpaquePointer
    private var finished = false

    init(_ algorithm: DigestAlgorithm, context: OpaquePointer, key: UnsafeRawBufferPointer) throws {
        self.context = context
        self.algorithm = algorithm
        guard copenssl_hmac_init(context, key.bindMemory(to: UInt8.self).baseAddress, key.count) == 1 else {
            throw CryptoError.openSSL("EVP_MAC_init")
        }
    }

    deinit { EVP_MAC_CTX_free(context) }

    func update(_ input: UnsafeRawBufferPointer) throws {
        guard !finished else { throw CryptoError(.callSequence, "update after finish; reset first") }
        guard input.count > 0 else { return }
        guard EVP_MAC_update(context, input.bindMemory(to: UInt8.self).baseAddress, input.count) == 1 else {
            throw CryptoError.openSSL("EVP_MAC_update")
        }
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws {
        guard !finished else { throw CryptoError(.callSequence, "finish called twice; reset first") }
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        var length = 0
        guard EVP_MAC_final(context, output.bindMemory(to: UInt8.self).baseAddress, &length, output.count) == 1 else {
            throw CryptoError.openSSL("EVP_MAC_final")
        }
        finished = true
    }

    func reset() throws {
        // EVP_MAC_init with a NULL key: "reinitialise with the key already set".
        guard EVP_MAC_init(context, nil, 0, nil) == 1 else { throw CryptoError.openSSL("EVP_MAC_init") }
        finished = false
    }
}
