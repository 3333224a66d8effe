import CommonCrypto
import CryptoContract
import CryptoDispatcher
import Foundation
import Testing
import TestVectors

@testable import CommonCryptoAdapter

/// Every CCCryptorStatus is produced by at least one call, with its output arguments checked; and the
/// edge cases applications rely on.
@Suite("CommonCrypto: status codes and edge cases")
struct CommonCryptoStatusTests {
    let key = [UInt8](repeating: 0x2b, count: 16)
    let iv = [UInt8](repeating: 0x7e, count: 16)
    let block = [UInt8](repeating: 0x41, count: 16)

    @Test("kCCSuccess with dataOutMoved set; kCCBufferTooSmall with the size needed, also when asking with NULL")
    func successAndBufferTooSmall() {
        var moved = -1
        var out = [UInt8](repeating: 0, count: 32)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key, 16, iv, block, 16, &out, 32, &moved) == kCCSuccess)
        #expect(moved == 32)
        moved = -1
        var small = [UInt8](repeating: 0xee, count: 31)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key, 16, iv, block, 16, &small, 31, &moved) == kCCBufferTooSmall)
        #expect(moved == 32)
        #expect(small.allSatisfy { $0 == 0xee })
        moved = -1
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key, 16, iv, block, 5, nil, 0, &moved) == kCCBufferTooSmall)
        #expect(moved == 16)
    }

    @Test("kCCParamError: bad operation, algorithm, mode, padding, NULL data, NULL cryptor")
    func paramError() {
        var moved = -1
        var out = [UInt8](repeating: 0, count: 32)
        #expect(CCCrypt(7, CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, block, 16, &out, 32, &moved) == kCCParamError)
        #expect(moved == 0)
        #expect(CCCrypt(CCOperation(kCCEncrypt), 99, 0, key, 16, iv, block, 16, &out, 32, &moved) == kCCParamError)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, nil, 16, &out, 32, &moved) == kCCParamError)
        var cryptor: CCCryptorRef?
        #expect(CCCryptorCreateWithMode(CCOperation(kCCEncrypt), 42, CCAlgorithm(kCCAlgorithmAES), 0, iv, key, 16, nil, 0, 0, 0, &cryptor) == kCCParamError)
        #expect(cryptor == nil)
        #expect(CCCryptorCreateWithMode(CCOperation(kCCEncrypt), CCMode(kCCModeCBC), CCAlgorithm(kCCAlgorithmAES), 9, iv, key, 16, nil, 0, 0, 0, &cryptor) == kCCParamError)
        // RC4 only as kCCModeRC4.
        #expect(CCCryptorCreateWithMode(CCOperation(kCCEncrypt), CCMode(kCCModeCBC), CCAlgorithm(kCCAlgorithmRC4), 0, nil, key, 16, nil, 0, 0, 0, &cryptor) == kCCParamError)
        #expect(CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, nil) == kCCParamError)
        #expect(CCCryptorUpdate(nil, block, 16, &out, 32, &moved) == kCCParamError)
        #expect(moved == 0)
        #expect(CCCryptorFinal(nil, &out, 32, &moved) == kCCParamError)
        #expect(CCCryptorReset(nil, nil) == kCCParamError)
        #expect(CCCryptorGetOutputLength(nil, 16, true) == 0)
        #expect(CCCryptorRelease(nil) == kCCSuccess)
        var derived = [UInt8](repeating: 0, count: 16)
        #expect(CCKeyDerivationPBKDF(CCPBKDFAlgorithm(kCCPBKDF2), "pw", 2, [1], 1, 77, 1000, &derived, 16) == kCCParamError)
        #expect(CCKeyDerivationPBKDF(CCPBKDFAlgorithm(kCCPBKDF2), "pw", 2, [1], 1, CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA1), 0, &derived, 16) == kCCParamError)
        #expect(derived.allSatisfy { $0 == 0 })
        var wrappedLength = 24
        var wrapped = [UInt8](repeating: 0, count: 24)
        #expect(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, key, 15, key, 16, &wrapped, &wrappedLength) == kCCParamError)
        #expect(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, key, 16, key, 12, &wrapped, &wrappedLength) == kCCParamError)
    }

    @Test("kCCKeySizeError and kCCInvalidKey")
    func keyErrors() {
        var moved = -1
        var out = [UInt8](repeating: 0, count: 32)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 15, iv, block, 16, &out, 32, &moved) == kCCKeySizeError)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmBlowfish), 0, key, 4, iv, block, 16, &out, 32, &moved) == kCCKeySizeError)
        #expect(moved == 0)
        var cryptor: CCCryptorRef?
        #expect(CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithm3DES), 0, key, 16, iv, &cryptor) == kCCKeySizeError)
        #expect(cryptor == nil)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, nil, 16, iv, block, 16, &out, 32, &moved) == kCCInvalidKey)
        #expect(moved == 0)
    }

    @Test("kCCAlignmentError for unpadded input that is not whole blocks; kCCDecodeError for bad padding, checked in full")
    func alignmentAndDecode() {
        var moved = -1
        var out = [UInt8](repeating: 0xee, count: 48)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, block, 15, &out, 48, &moved) == kCCAlignmentError)
        #expect(moved == 0)
        // A padding whose last byte is right but whose other pad bytes are wrong: a decode error, not success.
        var plain = [UInt8](repeating: 0x55, count: 32)
        plain[29] = 3; plain[30] = 9; plain[31] = 3
        var cipher = [UInt8](repeating: 0, count: 32)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, plain, 32, &cipher, 32, &moved) == kCCSuccess)
        moved = -1
        #expect(CCCrypt(CCOperation(kCCDecrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key, 16, iv, cipher, 32, &out, 48, &moved) == kCCDecodeError)
        #expect(moved == 0)
        #expect(!out.prefix(16).contains { $0 == 0x55 }, "no plaintext left behind")
        // The same through a cryptor: the error comes at Final.
        var cryptor: CCCryptorRef?
        #expect(CCCryptorCreate(CCOperation(kCCDecrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key, 16, iv, &cryptor) == kCCSuccess)
        defer { CCCryptorRelease(cryptor) }
        #expect(CCCryptorUpdate(cryptor, cipher, 32, &out, 48, &moved) == kCCSuccess)
        #expect(moved == 16)
        #expect(CCCryptorFinal(cryptor, &out, 48, &moved) == kCCDecodeError)
        #expect(moved == 0)
    }

    @Test("kCCUnimplemented: XTS, F8, LRW and little-endian counters")
    func unimplemented() {
        var cryptor: CCCryptorRef?
        for mode in [kCCModeXTS, kCCModeF8, kCCModeLRW] {
            #expect(CCCryptorCreateWithMode(CCOperation(kCCEncrypt), CCMode(mode), CCAlgorithm(kCCAlgorithmAES), 0, iv, key, 16, key, 16, 0, 0, &cryptor) == kCCUnimplemented)
            #expect(cryptor == nil)
        }
        #expect(CCCryptorCreateWithMode(CCOperation(kCCEncrypt), CCMode(kCCModeCTR), CCAlgorithm(kCCAlgorithmAES), 0, iv, key, 16, nil, 0, 0, CCModeOptions(kCCModeOptionCTR_LE), &cryptor) == kCCUnimplemented)
    }

    @Test("kCCOverflow when the padded length does not fit")
    func overflow() {
        var moved = -1
        var out = [UInt8](repeating: 0, count: 16)
        #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key, 16, iv, block, Int.max, &out, 16, &moved) == kCCOverflow)
        #expect(moved == 0)
    }

    @Test("kCCCallSequenceError: Update after Final; Reset makes the cryptor usable again")
    func callSequence() {
        var cryptor: CCCryptorRef?
        #expect(CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, &cryptor) == kCCSuccess)
        defer { CCCryptorRelease(cryptor) }
        var out = [UInt8](repeating: 0, count: 32)
        var moved = -1
        #expect(CCCryptorUpdate(cryptor, block, 16, &out, 32, &moved) == kCCSuccess)
        let first = Array(out.prefix(16))
        #expect(CCCryptorFinal(cryptor, &out, 32, &moved) == kCCSuccess)
        #expect(moved == 0)
        #expect(CCCryptorUpdate(cryptor, block, 16, &out, 32, &moved) == kCCCallSequenceError)
        #expect(moved == 0)
        // CCCryptorReset (CBC) with the same IV starts over and gives the same first block.
        #expect(CCCryptorReset(cryptor, iv) == kCCSuccess)
        #expect(CCCryptorUpdate(cryptor, block, 16, &out, 32, &moved) == kCCSuccess)
        #expect(Array(out.prefix(16)) == first)
    }

    @Test("kCCMemoryFailure and kCCUnspecifiedError from the engine; kCCRNGFailure from the random source")
    func engineFailures() {
        var moved = -1
        var out = [UInt8](repeating: 0xee, count: 32)
        Engine.$current.withValue(FailingEngine(CryptoError(.outOfMemory, "test"))) {
            #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, block, 16, &out, 32, &moved) == kCCMemoryFailure)
            var cryptor: CCCryptorRef?
            #expect(CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, &cryptor) == kCCMemoryFailure)
            #expect(cryptor == nil)
        }
        #expect(moved == 0)
        Engine.$current.withValue(FailingEngine(CryptoError(.backendFailure, "test", nativeCode: 5))) {
            #expect(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, block, 16, &out, 32, &moved) == kCCUnspecifiedError)
        }
        #expect(moved == 0)
        #expect(out.allSatisfy { $0 == 0xee })
        var random = [UInt8](repeating: 0, count: 32)
        #expect(CCRandomGenerateBytes(&random, 32) == kCCSuccess)
        #expect(random.contains { $0 != 0 })
        #expect(CCRandomGenerateBytes(nil, 32) == kCCParamError)
        Engine.$random.withValue({ _ in throw CryptoError(.entropyFailure, "test") }) {
            #expect(CCRandomGenerateBytes(&random, 32) == kCCRNGFailure)
        }
    }

    @Test("a NULL IV means zeros; ECB ignores the IV")
    func ivHandling() {
        let zeros = [UInt8](repeating: 0, count: 16)
        let withNull = ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), 0, key: key, iv: nil, block)
        let withZeros = ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), 0, key: key, iv: zeros, block)
        #expect(withNull.status == kCCSuccess)
        #expect(withNull.output == withZeros.output)
        let ecbA = ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), kCCOptionECBMode, key: key, iv: iv, block)
        let ecbB = ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), kCCOptionECBMode, key: key, iv: nil, block)
        #expect(ecbA.output == ecbB.output)
    }

    @Test("CCCryptorGetOutputLength is exact in both directions, for every chunking")
    func outputLength() {
        let data = (0..<100).map { UInt8($0) }
        for (operation, padding) in [(kCCEncrypt, true), (kCCEncrypt, false), (kCCDecrypt, true)] {
            let spec = CipherSpec(.aes128, .cbc, padding: padding ? .pkcs7 : .none)
            let input = operation == kCCEncrypt ? (padding ? data : Array(data.prefix(96))) : ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), kCCOptionPKCS7Padding, key: key, iv: iv, data).output
            for chunk in [1, 5, 16, 17, 33, 100] {
                let result = ccStream(operation, spec, key: key, iv: iv, input, chunk: chunk)
                #expect(result.status == kCCSuccess)
                #expect(result.lengthPromisesKept, "\(operation) padding \(padding) chunk \(chunk)")
            }
        }
    }

    @Test("CCCryptorCreateFromData: Apple's size check, then a working cryptor")
    func fromData() {
        var memory = [UInt8](repeating: 0, count: kCCContextSizeAES128)
        var cryptor: CCCryptorRef?
        var used = 0
        #expect(CCCryptorCreateFromData(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, &memory, 100, &cryptor, &used) == kCCBufferTooSmall)
        #expect(used == kCCContextSizeAES128)
        #expect(cryptor == nil)
        #expect(CCCryptorCreateFromData(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, 16, iv, &memory, memory.count, &cryptor, &used) == kCCSuccess)
        var out = [UInt8](repeating: 0, count: 16)
        var moved = 0
        #expect(CCCryptorUpdate(cryptor, block, 16, &out, 16, &moved) == kCCSuccess)
        #expect(out == ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), 0, key: key, iv: iv, block).output)
        #expect(CCCryptorRelease(cryptor) == kCCSuccess)
    }

    @Test("independent cryptors and one-shots on many threads at once")
    func threads() async throws {
        let expected = ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), kCCOptionPKCS7Padding, key: key, iv: iv, Array(repeating: 9, count: 5000)).output
        var expectedDigest = [UInt8](repeating: 0, count: 20)
        CC_SHA1([UInt8](repeating: 9, count: 5000), 5000, &expectedDigest)
        let referenceDigest = expectedDigest
        let key = self.key, iv = self.iv
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for round in 0..<40 {
                        let data = [UInt8](repeating: 9, count: 5000)
                        let oneShot = ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), kCCOptionPKCS7Padding, key: key, iv: iv, data)
                        let streamed = ccStream(kCCEncrypt, CipherSpec(.aes128, .cbc, padding: .pkcs7), key: key, iv: iv, data, chunk: 97 + worker + round)
                        var digest = [UInt8](repeating: 0, count: 20)
                        CC_SHA1(data, CC_LONG(data.count), &digest)
                        guard oneShot.output == expected, streamed.output == expected, digest == referenceDigest else { return false }
                    }
                    return true
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }
}

/// An engine whose every call fails with one error.
struct FailingEngine: CryptoBackend {
    let error: CryptoError
    init(_ error: CryptoError) { self.error = error }
    let kind = BackendKind(name: "failing")
    func supports(_ operation: CryptoOperation) -> Bool { true }
    func crypt(_ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) throws -> Int { throw error }
    func makeCipherStream(_ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?) throws -> any CipherStream { throw error }
    func digest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) throws { throw error }
    func makeDigestStream(_ algorithm: DigestAlgorithm) throws -> any DigestStream { throw error }
    func hmac(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) throws { throw error }
    func makeHMACStream(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any DigestStream { throw error }
}
