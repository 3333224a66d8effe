internal import COpenSSL
import SecurityBase
import CryptoContract

/// CTR and CFB8 built on a block cipher's ECB encryption, for the ciphers where OpenSSL has no such mode
/// (CTR for DES, 3DES, CAST5, RC2, Blowfish; CFB8 for CAST5, RC2, Blowfish) but CommonCrypto does.
///
/// CTR: the IV is the initial counter block, incremented as one big-endian integer per block (CommonCrypto's
/// `kCCModeOptionCTR_BE`, NIST SP 800-38A §B.1). CFB8: SP 800-38A §6.3 with s = 8.
final class GenericModeCipher: CipherStream {
    let spec: CipherSpec
    let direction: CipherDirection
    private let ecb: OpaquePointer
    private let cipher: OpaquePointer
    private let key: SecretBytes
    private let initialIV: [UInt8]
    /// CTR: the next counter block. CFB8: the shift register.
    private var register: [UInt8]
    /// CTR: the current keystream block and how much of it is used.
    private var keystream: [UInt8]
    private var used: Int
    private var finished = false

    init(
        _ direction: CipherDirection, _ spec: CipherSpec, ecbCipher: OpaquePointer, key: UnsafeRawBufferPointer,
        iv: UnsafeRawBufferPointer
    ) throws {
        precondition(spec.mode == .ctr || spec.mode == .cfb8, "GenericModeCipher runs CTR and CFB8 only")
        guard let ecb = EVP_CIPHER_CTX_new() else { throw CryptoError(.outOfMemory, "EVP_CIPHER_CTX_new failed") }
        self.ecb = ecb
        self.spec = spec
        self.direction = direction
        self.cipher = ecbCipher
        self.key = SecretBytes(copying: key)
        initialIV = Array(iv)
        register = initialIV
        keystream = [UInt8](repeating: 0, count: spec.algorithm.blockSize)
        used = spec.algorithm.blockSize
        // Both modes only ever encrypt with the block cipher.
        try EVPCipher.initialise(
            ecb, ecbCipher, CipherSpec(spec.algorithm, .ecb), .encrypt, key: key, iv: nil)
    }

    deinit {
        keystream.withUnsafeMutableBytes { secureWipe($0) }
        EVP_CIPHER_CTX_free(ecb)
    }

    func outputLength(forInputCount inputCount: Int, final: Bool) -> Int { inputCount }

    func update(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !finished else { throw CryptoError(.callSequence, "update after finish; reset first") }
        try CryptoError.checkOutput(output, holds: input.count)
        let block = spec.algorithm.blockSize
        // Reads every input byte before writing its output byte, so in-place operation is safe.
        for index in 0..<input.count {
            let inByte = input[index]
            switch spec.mode {
            case .ctr:
                if used == block {
                    try encryptBlock(register, into: &keystream)
                    incrementCounter()
                    used = 0
                }
                output[index] = inByte ^ keystream[used]
                used += 1
            default:  // .cfb8
                try encryptBlock(register, into: &keystream)
                let outByte = inByte ^ keystream[0]
                output[index] = outByte
                register.removeFirst()
                register.append(direction == .encrypt ? outByte : inByte)
            }
        }
        return input.count
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !finished else { throw CryptoError(.callSequence, "finish called twice; reset first") }
        finished = true
        return 0
    }

    func reset(iv: UnsafeRawBufferPointer?) throws {
        if let iv {
            try spec.validate(keyCount: key.count, ivCount: iv.count)
            register = Array(iv)
        } else {
            register = initialIV
        }
        used = spec.algorithm.blockSize
        finished = false
    }

    private func encryptBlock(_ block: [UInt8], into out: inout [UInt8]) throws {
        try block.withUnsafeBytes { input in
            try out.withUnsafeMutableBytes { output in
                _ = try EVPCipher.update(ecb, input, output)
            }
        }
    }

    private func incrementCounter() {
        for index in stride(from: register.count - 1, through: 0, by: -1) {
            register[index] &+= 1
            if register[index] != 0 { break }
        }
    }
}
