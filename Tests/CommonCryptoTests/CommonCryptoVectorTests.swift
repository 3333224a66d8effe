import CommonCrypto
import CryptoContract
import Foundation
import Testing
import TestVectors

/// Published vectors through the Apple-compatible C API.
@Suite("CommonCrypto: published vectors through the C API")
struct CommonCryptoVectorTests {
    static let cipherSets: [(String, [CipherMode])] = [
        ("aes", [.ecb, .cbc, .cfb, .cfb8, .ofb, .ctr]), ("3des", [.ecb, .cbc, .cfb, .cfb8, .ofb]),
        ("des", [.ecb, .cbc, .cfb, .cfb8, .ofb]), ("blowfish", [.ecb, .cbc, .cfb, .ofb]),
        ("cast5", [.ecb, .cbc, .cfb, .ofb, .ctr]), ("rc2", [.ecb, .cbc]), ("rc4", [.stream]),
    ]

    static func cases(_ family: String, _ mode: CipherMode) throws -> [CipherCase] {
        switch family {
        case "aes": try CipherVectors.aes(mode)
        case "3des": try CipherVectors.tripleDES(mode)
        case "des": try CipherVectors.des(mode)
        case "blowfish": try CipherVectors.blowfish(mode)
        case "cast5": try CipherVectors.cast5(mode)
        case "rc2": try CipherVectors.rc2(mode)
        default: try CipherVectors.rc4()
        }
    }

    @Test("every cipher and mode: CCCryptorCreateWithMode, in odd chunks, both directions",
          arguments: cipherSets.flatMap { family, modes in modes.map { (family, $0) } })
    func ciphers(family: String, mode: CipherMode) throws {
        let cases = try Self.cases(family, mode)
        #expect(!cases.isEmpty)
        var failures: [String] = []
        for vector in cases {
            let plaintext = [UInt8](repeating: 0, count: vector.offset) + vector.plaintext
            for chunk in [plaintext.count, 1, 7, 13] where chunk > 0 {
                let encrypted = ccStream(kCCEncrypt, vector.spec, key: vector.key, iv: vector.iv, plaintext, chunk: chunk)
                if encrypted.status != kCCSuccess || Array(encrypted.output.suffix(vector.ciphertext.count)) != vector.ciphertext
                    || !encrypted.lengthPromisesKept
                {
                    failures.append("\(vector) encrypt/\(chunk): status \(encrypted.status)")
                    break
                }
                let decrypted = ccStream(kCCDecrypt, vector.spec, key: vector.key, iv: vector.iv, encrypted.output, chunk: chunk)
                if decrypted.status != kCCSuccess || decrypted.output != plaintext || !decrypted.lengthPromisesKept {
                    failures.append("\(vector) decrypt/\(chunk): status \(decrypted.status)")
                }
            }
        }
        #expect(failures == [])
    }

    @Test("CCCrypt one-shot: ECB, CBC and RC4 through the options word",
          arguments: [("aes", CipherMode.ecb), ("aes", .cbc), ("3des", .cbc), ("des", .ecb), ("blowfish", .cbc), ("cast5", .ecb), ("rc2", .cbc), ("rc4", .stream)])
    func ccCryptOneShot(family: String, mode: CipherMode) throws {
        var failures: [String] = []
        for vector in try Self.cases(family, mode) {
            let names = commonCryptoNames(vector.spec)
            let options = mode == .ecb ? kCCOptionECBMode : 0
            let plaintext = [UInt8](repeating: 0, count: vector.offset) + vector.plaintext
            let encrypted = ccCrypt(kCCEncrypt, names.algorithm, options, key: vector.key, iv: vector.iv, plaintext)
            guard encrypted.status == kCCSuccess, Array(encrypted.output.suffix(vector.ciphertext.count)) == vector.ciphertext else {
                failures.append("\(vector): \(encrypted.status)")
                continue
            }
            let decrypted = ccCrypt(kCCDecrypt, names.algorithm, options, key: vector.key, iv: vector.iv, encrypted.output)
            if decrypted.status != kCCSuccess || decrypted.output != plaintext { failures.append("\(vector) decrypt") }
        }
        #expect(failures == [])
    }

    typealias OneShot = (UnsafeRawPointer?, CC_LONG, UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>?

    /// One-shot and Init/Update/Final for one digest, in the given chunk size.
    func checkDigest<Context>(
        _ algorithm: DigestAlgorithm, _ oneShot: OneShot, _ context: Context,
        _ initialise: (UnsafeMutablePointer<Context>) -> Int32,
        _ update: (UnsafeMutablePointer<Context>, UnsafeRawPointer?, CC_LONG) -> Int32,
        _ final: (UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Context>) -> Int32
    ) throws -> [String] {
        var failures: [String] = []
        for vector in try DigestVectors.cases(algorithm) {
            var md = [UInt8](repeating: 0, count: algorithm.outputSize)
            let returned = vector.message.withUnsafeBytes { oneShot($0.baseAddress, CC_LONG($0.count), &md) }
            if md != vector.digest || returned == nil { failures.append("\(vector) one-shot") }
            for chunk in [1, 13, 64, 1000] {
                var context = context
                _ = initialise(&context)
                for piece in vector.message.chunked(chunk) { _ = piece.withUnsafeBytes { update(&context, $0.baseAddress, CC_LONG($0.count)) } }
                var streamed = [UInt8](repeating: 0, count: algorithm.outputSize)
                _ = final(&streamed, &context)
                if streamed != vector.digest { failures.append("\(vector) in \(chunk)-byte pieces") }
            }
        }
        return failures
    }

    @Test("every digest: CC_X one-shot and CC_X_Init/Update/Final with Apple's context structs")
    func digests() throws {
        #expect(try checkDigest(.md2, CC_MD2, CC_MD2_CTX(), CC_MD2_Init, CC_MD2_Update, CC_MD2_Final) == [])
        #expect(try checkDigest(.md4, CC_MD4, CC_MD4_CTX(), CC_MD4_Init, CC_MD4_Update, CC_MD4_Final) == [])
        #expect(try checkDigest(.md5, CC_MD5, CC_MD5_CTX(), CC_MD5_Init, CC_MD5_Update, CC_MD5_Final) == [])
        #expect(try checkDigest(.sha1, CC_SHA1, CC_SHA1_CTX(), CC_SHA1_Init, CC_SHA1_Update, CC_SHA1_Final) == [])
        #expect(try checkDigest(.sha224, CC_SHA224, CC_SHA256_CTX(), CC_SHA224_Init, CC_SHA224_Update, CC_SHA224_Final) == [])
        #expect(try checkDigest(.sha256, CC_SHA256, CC_SHA256_CTX(), CC_SHA256_Init, CC_SHA256_Update, CC_SHA256_Final) == [])
        #expect(try checkDigest(.sha384, CC_SHA384, CC_SHA512_CTX(), CC_SHA384_Init, CC_SHA384_Update, CC_SHA384_Final) == [])
        #expect(try checkDigest(.sha512, CC_SHA512, CC_SHA512_CTX(), CC_SHA512_Init, CC_SHA512_Update, CC_SHA512_Final) == [])
        // A NULL md computes nothing and returns NULL.
        #expect(CC_SHA1("abc", 3, nil) == nil)
    }

    @Test("Apple's context sizes")
    func contextSizes() {
        #expect(MemoryLayout<CC_SHA1_CTX>.size == 96)
        #expect(MemoryLayout<CC_SHA256_CTX>.size == 104)
        #expect(MemoryLayout<CC_SHA512_CTX>.size == 208)
        #expect(MemoryLayout<CC_MD5_CTX>.size == 92)
        #expect(MemoryLayout<CC_MD2_CTX>.size == 148)
        #expect(MemoryLayout<CCHmacContext>.size == 384)
    }

    @Test("HMAC: CCHmac and CCHmacInit/Update/Final (RFC 2202, RFC 4231)")
    func hmac() throws {
        let algorithms: [(DigestAlgorithm, Int)] = [
            (.md5, kCCHmacAlgMD5), (.sha1, kCCHmacAlgSHA1), (.sha224, kCCHmacAlgSHA224), (.sha256, kCCHmacAlgSHA256),
            (.sha384, kCCHmacAlgSHA384), (.sha512, kCCHmacAlgSHA512),
        ]
        var failures: [String] = []
        for (digest, algorithm) in algorithms {
            for vector in try HMACVectors.cases(digest) {
                var mac = [UInt8](repeating: 0, count: digest.outputSize)
                CCHmac(CCHmacAlgorithm(algorithm), vector.key, vector.key.count, vector.message, vector.message.count, &mac)
                if Array(mac.prefix(vector.mac.count)) != vector.mac { failures.append("\(vector) one-shot") }
                for chunk in [1, 17, 200] {
                    var context = CCHmacContext()
                    CCHmacInit(&context, CCHmacAlgorithm(algorithm), vector.key, vector.key.count)
                    for piece in vector.message.chunked(chunk) { CCHmacUpdate(&context, piece, piece.count) }
                    var streamed = [UInt8](repeating: 0, count: digest.outputSize)
                    CCHmacFinal(&context, &streamed)
                    if streamed != mac { failures.append("\(vector) in \(chunk)-byte pieces") }
                    // The key-derived state is wiped at Final.
                    if withUnsafeBytes(of: &context, { $0.contains { $0 != 0 } }) { failures.append("\(vector) context not wiped") }
                }
            }
        }
        #expect(failures == [])
    }

    @Test("PBKDF2: RFC 6070 (SHA-1), and SHA-2 against `openssl kdf`")
    func pbkdf2() throws {
        let cases = try PBKDF2Case.rfc6070()
        #expect(cases.count == 5)
        for vector in cases {
            var derived = [UInt8](repeating: 0, count: vector.derived.count)
            let status = vector.password.withUnsafeBufferPointer { password in
                password.withMemoryRebound(to: CChar.self) { password in
                    CCKeyDerivationPBKDF(
                        CCPBKDFAlgorithm(kCCPBKDF2), password.baseAddress, password.count, vector.salt, vector.salt.count,
                        CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA1), UInt32(vector.rounds), &derived, derived.count)
                }
            }
            #expect(status == kCCSuccess)
            #expect(derived == vector.derived, "\(vector)")
        }
        for (prf, name) in [(kCCPRFHmacAlgSHA224, "SHA224"), (kCCPRFHmacAlgSHA256, "SHA256"), (kCCPRFHmacAlgSHA384, "SHA384"), (kCCPRFHmacAlgSHA512, "SHA512")] {
            guard let expected = opensslPBKDF2(digest: name, password: "passwd", salt: "NaCl", rounds: 1000, length: 70) else {
                Issue.record("the openssl command is needed for the SHA-2 cross-check")
                return
            }
            var derived = [UInt8](repeating: 0, count: 70)
            let status = CCKeyDerivationPBKDF(
                CCPBKDFAlgorithm(kCCPBKDF2), "passwd", 6, Array("NaCl".utf8), 4, CCPseudoRandomAlgorithm(prf), 1000, &derived, 70)
            #expect(status == kCCSuccess)
            #expect(derived == expected, "PBKDF2-HMAC-\(name)")
        }
        let rounds = CCCalibratePBKDF(CCPBKDFAlgorithm(kCCPBKDF2), 8, 16, CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA256), 32, 20)
        #expect(rounds >= 10_000)
    }

    @Test("AES key wrap: NIST SP 800-38F KW vectors (wrap and unwrap, including must-fail cases)")
    func keyWrap() throws {
        var failures: [String] = []
        for vector in try KeyWrapCase.nist("AE") {
            guard let plaintext = vector.plaintext else { continue }
            var wrapped = [UInt8](repeating: 0, count: CCSymmetricWrappedSize(CCWrappingAlgorithm(kCCWRAPAES), plaintext.count))
            var length = wrapped.count
            let status = CCSymmetricKeyWrap(
                CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, vector.kek, vector.kek.count, plaintext,
                plaintext.count, &wrapped, &length)
            if status != kCCSuccess || wrapped != vector.wrapped || length != wrapped.count { failures.append("\(vector) wrap") }
        }
        var mustFail = 0
        for vector in try KeyWrapCase.nist("AD") {
            var raw = [UInt8](repeating: 0xee, count: CCSymmetricUnwrappedSize(CCWrappingAlgorithm(kCCWRAPAES), vector.wrapped.count))
            var length = raw.count
            let status = CCSymmetricKeyUnwrap(
                CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, vector.kek, vector.kek.count, vector.wrapped,
                vector.wrapped.count, &raw, &length)
            if vector.mustFail {
                mustFail += 1
                if status != kCCDecodeError || raw.contains(where: { $0 != 0xee }) { failures.append("\(vector) accepted or wrote") }
            } else if status != kCCSuccess || raw != vector.plaintext {
                failures.append("\(vector) unwrap")
            }
        }
        #expect(mustFail > 10)
        #expect(failures == [])
    }
}

/// `openssl kdf` as the independent implementation for PBKDF2 with SHA-2.
func opensslPBKDF2(digest: String, password: String, salt: String, rounds: Int, length: Int) -> [UInt8]? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = [
        "kdf", "-keylen", "\(length)", "-kdfopt", "digest:\(digest)", "-kdfopt", "pass:\(password)", "-kdfopt",
        "salt:\(salt)", "-kdfopt", "iter:\(rounds)", "PBKDF2",
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return nil }
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return hexBytes(output.replacingOccurrences(of: ":", with: ""))
}
