import CryptoContract
import SoftwareBackend
import Testing
import TestVectors

/// Bad input, edge cases and the modes built on ECB, on the software backend.
@Suite("Software backend: bad input and edge cases")
struct SoftwareBehaviourTests {
    let backend = SoftwareBackend()
    let key16 = [UInt8](repeating: 0x5a, count: 16)
    let iv16 = [UInt8](repeating: 0xa5, count: 16)

    @Test("the contract's dense indexes number every case once, without gaps")
    func denseIndexes() {
        #expect(Set(CipherAlgorithm.allCases.map(\.index)) == Set(0..<CipherAlgorithm.indexCount))
        #expect(Set(CipherMode.allCases.map(\.index)) == Set(0..<CipherMode.indexCount))
        #expect(Set(DigestAlgorithm.allCases.map(\.index)) == Set(0..<DigestAlgorithm.indexCount))
        let operations = CipherAlgorithm.allCases.flatMap { a in CipherMode.allCases.map { CryptoOperation.cipher(a, $0) } }
            + DigestAlgorithm.allCases.flatMap { [CryptoOperation.digest($0), .hmac($0)] }
        #expect(Set(operations.map(\.index)) == Set(0..<CryptoOperation.indexCount))
    }

    @Test("every operation of the contract is offered")
    func everything() {
        for operation in CryptoOperation.all { #expect(backend.supports(operation), "\(operation)") }
    }

    @Test("wrong key sizes are rejected with invalidKeySize", arguments: CipherAlgorithm.allCases)
    func keySizes(algorithm: CipherAlgorithm) {
        let mode: CipherMode = algorithm == .rc4 ? .stream : .cbc
        let spec = CipherSpec(algorithm, mode)
        let iv = [UInt8](repeating: 0, count: spec.ivSize)
        for size in [0, algorithm.keySizes.lowerBound - 1, algorithm.keySizes.upperBound + 1] where size >= 0 {
            #expect(throws: CryptoError(.invalidKeySize, ""), "\(algorithm) with \(size) bytes") {
                try backend.crypt(.encrypt, spec, key: [UInt8](repeating: 1, count: size), iv: iv, [UInt8](repeating: 0, count: 8))
            }
        }
    }

    @Test("wrong or missing IVs are rejected with invalidIVSize; ECB ignores an IV")
    func ivSizes() throws {
        for iv in [nil, [UInt8](), [UInt8](repeating: 0, count: 15), [UInt8](repeating: 0, count: 17)] {
            #expect(throws: CryptoError(.invalidIVSize, "")) {
                try backend.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key16, iv: iv, [UInt8](repeating: 0, count: 16))
            }
        }
        #expect(try backend.crypt(.encrypt, CipherSpec(.aes128, .ecb), key: key16, iv: [1, 2, 3], [UInt8](repeating: 0, count: 16)).count == 16)
    }

    @Test("block modes without padding need whole blocks")
    func alignment() {
        for spec in [CipherSpec(.aes128, .cbc), CipherSpec(.aes128, .ecb), CipherSpec(.des, .cbc)] {
            #expect(throws: CryptoError(.alignment, "")) {
                try backend.crypt(.encrypt, spec, key: Array(key16.prefix(spec.algorithm.keySizes.lowerBound)), iv: Array(iv16.prefix(spec.ivSize)), [UInt8](repeating: 0, count: 17))
            }
        }
        // Padded decryption of something that is not whole blocks, or empty.
        for count in [0, 15, 17] {
            #expect(throws: CryptoError(.alignment, "")) {
                try backend.crypt(.decrypt, CipherSpec(.aes128, .cbc, padding: .pkcs7), key: key16, iv: iv16, [UInt8](repeating: 0, count: count))
            }
        }
    }

    @Test("corrupt padding is a decode error and the output is wiped")
    func corruptPadding() throws {
        let spec = CipherSpec(.aes128, .cbc, padding: .pkcs7)
        var ciphertext = try backend.crypt(.encrypt, spec, key: key16, iv: iv16, Array("sixteen byte msg and more".utf8))
        ciphertext[ciphertext.count - 1] ^= 0x80
        var output = [UInt8](repeating: 0xee, count: ciphertext.count)
        #expect(throws: CryptoError(.decode, "")) {
            try key16.withUnsafeBytes { key in
                try iv16.withUnsafeBytes { iv in
                    try ciphertext.withUnsafeBytes { input in
                        try output.withUnsafeMutableBytes { try backend.crypt(.decrypt, spec, key: key, iv: iv, input: input, output: $0) }
                    }
                }
            }
        }
        // The plaintext of the blocks before the bad one must not be left behind.
        #expect(!output.prefix(16).contains { $0 != 0 && $0 != 0xee })
    }

    @Test("an output buffer that is too small is refused before anything is written")
    func bufferTooSmall() throws {
        var output = [UInt8](repeating: 0xee, count: 31)
        do {
            _ = try key16.withUnsafeBytes { key in
                try iv16.withUnsafeBytes { iv in
                    try [UInt8](repeating: 1, count: 20).withUnsafeBytes { input in
                        try output.withUnsafeMutableBytes {
                            try backend.crypt(.encrypt, CipherSpec(.aes128, .cbc, padding: .pkcs7), key: key, iv: iv, input: input, output: $0)
                        }
                    }
                }
            }
            Issue.record("no error")
        } catch let error as CryptoError {
            #expect(error.code == .bufferTooSmall)
            #expect(error.requiredSize == 32)
        }
        #expect(output.allSatisfy { $0 == 0xee })
        var digest = [UInt8](repeating: 0, count: 19)
        #expect(throws: CryptoError(.bufferTooSmall, "")) {
            try digest.withUnsafeMutableBytes { try backend.digest(.sha1, input: UnsafeRawBufferPointer(start: nil, count: 0), output: $0) }
        }
    }

    @Test("zero-length input: empty output unpadded, one padding block padded, the empty digest")
    func zeroLength() throws {
        #expect(try backend.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key16, iv: iv16, []) == [])
        #expect(try backend.crypt(.encrypt, CipherSpec(.aes128, .ctr), key: key16, iv: iv16, []) == [])
        let padded = try backend.crypt(.encrypt, CipherSpec(.aes128, .cbc, padding: .pkcs7), key: key16, iv: iv16, [])
        #expect(padded.count == 16)
        #expect(try backend.crypt(.decrypt, CipherSpec(.aes128, .cbc, padding: .pkcs7), key: key16, iv: iv16, padded) == [])
        #expect(try backend.digest(.sha256, []).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // HMAC-SHA256 with an empty key over an empty message (cross-checked with `openssl mac`).
        #expect(try backend.hmac(.sha256, key: [], []).hex == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test("RC4 runs only as a stream; block ciphers never do")
    func modeCombinations() {
        #expect(throws: CryptoError(.unsupported, "")) { try backend.crypt(.encrypt, CipherSpec(.rc4, .cbc), key: key16, iv: iv16, []) }
        #expect(throws: CryptoError(.unsupported, "")) { try backend.crypt(.encrypt, CipherSpec(.aes128, .stream), key: key16, iv: nil, []) }
        #expect(throws: CryptoError(.unsupported, "")) { try backend.makeHMACStream(.md4, key: key16) }
    }

    @Test("streams refuse use after finish, and reset starts over")
    func streamSequence() throws {
        let stream = try backend.makeCipherStream(.encrypt, CipherSpec(.aes128, .cbc, padding: .pkcs7), key: key16, iv: iv16)
        let first = try stream.update([1, 2, 3]) + stream.finish()
        #expect(throws: CryptoError(.callSequence, "")) { try stream.update([1]) }
        #expect(throws: CryptoError(.callSequence, "")) { try stream.finish() }
        try stream.reset(iv: nil)
        #expect(try stream.update([1, 2, 3]) + stream.finish() == first)
        let digest = try backend.makeDigestStream(.sha1)
        try digest.update([1])
        _ = try digest.finish()
        #expect(throws: CryptoError(.callSequence, "")) { try digest.update([1]) }
        try digest.reset()
        try digest.update(Array("abc".utf8))
        #expect(try digest.finish().hex == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test("in-place encryption and decryption work")
    func inPlace() throws {
        let spec = CipherSpec(.aes256, .cbc)
        let key = [UInt8](repeating: 3, count: 32)
        var buffer = (0..<4096).map { UInt8(truncatingIfNeeded: $0) }
        let expected = try backend.crypt(.encrypt, spec, key: key, iv: iv16, buffer)
        try key.withUnsafeBytes { key in
            try iv16.withUnsafeBytes { iv in
                try buffer.withUnsafeMutableBytes { buffer in
                    _ = try backend.crypt(.encrypt, spec, key: key, iv: iv, input: UnsafeRawBufferPointer(buffer), output: buffer)
                }
            }
        }
        #expect(buffer == expected)
    }

    /// CTR and CFB8 for the ciphers OpenSSL lacks them for are built on ECB: checked against SP 800-38A's
    /// definitions computed here from the cipher's (vector-tested) ECB.
    @Test("CTR and CFB8 built on ECB follow SP 800-38A",
          arguments: [CipherAlgorithm.des, .tripleDES, .blowfish, .rc2, .cast5])
    func genericModes(algorithm: CipherAlgorithm) throws {
        let block = algorithm.blockSize
        let key = (0..<algorithm.keySizes.upperBound.clamped(to: 8...24)).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 1) }
        let iv = (0..<block).map { UInt8(truncatingIfNeeded: 0xfa + $0) }  // wraps: exercises the carry
        let plaintext = (0..<(5 * block + 3)).map { UInt8(truncatingIfNeeded: $0 &* 29) }
        let ecb = CipherSpec(algorithm, .ecb)

        // CTR: C_i = P_i xor E(counter + i), counter big-endian over the whole block.
        var counter = iv
        var expected: [UInt8] = []
        for start in stride(from: 0, to: plaintext.count, by: block) {
            let stream = try backend.crypt(.encrypt, ecb, key: key, iv: nil, counter)
            for (index, byte) in plaintext[start..<min(start + block, plaintext.count)].enumerated() { expected.append(byte ^ stream[index]) }
            for index in stride(from: block - 1, through: 0, by: -1) {
                counter[index] &+= 1
                if counter[index] != 0 { break }
            }
        }
        #expect(try backend.crypt(.encrypt, CipherSpec(algorithm, .ctr), key: key, iv: iv, plaintext) == expected)

        // CFB8: out = in xor E(register)[0]; the register shifts in the ciphertext byte.
        var register = iv
        var cfb8: [UInt8] = []
        for byte in plaintext {
            let out = byte ^ (try backend.crypt(.encrypt, ecb, key: key, iv: nil, register))[0]
            cfb8.append(out)
            register = Array(register.dropFirst()) + [out]
        }
        let spec = CipherSpec(algorithm, .cfb8)
        #expect(try backend.crypt(.encrypt, spec, key: key, iv: iv, plaintext) == cfb8)
        #expect(try backend.crypt(.decrypt, spec, key: key, iv: iv, cfb8) == plaintext)
    }
}

extension Int {
    fileprivate func clamped(to range: ClosedRange<Int>) -> Int { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
