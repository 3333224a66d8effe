import CryptoContract
import Cryptography
import Foundation
import Testing
import TestVectors

/// The idiomatic Swift API: the same engine as CommonCrypto, on `Data`.
@Suite("Cryptography (Swift API)")
struct CryptographyTests {
    @Test("Cipher encrypts and decrypts NIST vectors, one-shot and streamed")
    func cipher() throws {
        for vector in try CipherVectors.aes(.cbc).prefix(30) {
            let cipher = Cipher(vector.spec.algorithm, .cbc)
            #expect(try cipher.encrypt(vector.plaintext, key: vector.key, iv: vector.iv) == Data(vector.ciphertext))
            #expect(try cipher.decrypt(vector.ciphertext, key: vector.key, iv: vector.iv) == Data(vector.plaintext))
            let stream = try cipher.stream(.encrypt, key: vector.key, iv: vector.iv)
            var out = Data()
            for piece in vector.plaintext.chunked(7) { out += try stream.update(piece) }
            out += try stream.finish()
            #expect(out == Data(vector.ciphertext))
        }
        let padded = Cipher(.aes256, .cbc, padding: .pkcs7)
        let key = Data(repeating: 1, count: 32), iv = Data(repeating: 2, count: 16)
        let message = Data("a message that is not a multiple of sixteen".utf8)
        #expect(try padded.decrypt(padded.encrypt(message, key: key, iv: iv), key: key, iv: iv) == message)
        #expect(throws: CryptoError(.invalidIVSize, "")) { try padded.encrypt(message, key: key) }
    }

    @Test("Digest and HMAC match the published vectors")
    func digestAndHMAC() throws {
        for vector in try DigestVectors.cases(.sha256).prefix(20) {
            #expect(try Digest.hash(.sha256, vector.message) == Data(vector.digest))
            var digest = try Digest(.sha256)
            for piece in vector.message.chunked(5) { try digest.update(piece) }
            #expect(try digest.finalize() == Data(vector.digest))
        }
        for vector in try HMACVectors.cases(.sha1) {
            let mac = try HMAC.authenticationCode(.sha1, key: vector.key, vector.message)
            #expect(HMAC.isEqual(mac.prefix(vector.mac.count), vector.mac))
            #expect(!HMAC.isEqual(mac, Data(repeating: 0, count: mac.count)))
        }
    }

    @Test("scrypt: RFC 7914 §12's vectors, parameters out of range refused, calibration within its bounds")
    func scrypt() throws {
        let vectors: [(password: String, salt: String, parameters: Scrypt.Parameters, derived: String)] = [
            ("", "", Scrypt.Parameters(costLog2: 4, blockSize: 1, parallelism: 1),
             "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"),
            ("password", "NaCl", Scrypt.Parameters(costLog2: 10, blockSize: 8, parallelism: 16),
             "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"),
            ("pleaseletmein", "SodiumChloride", Scrypt.Parameters(costLog2: 14, blockSize: 8, parallelism: 1),
             "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"),
        ]
        for vector in vectors {
            var output = [UInt8](repeating: 0, count: 64)
            try Array(vector.password.utf8).withUnsafeBytes { password in
                try Array(vector.salt.utf8).withUnsafeBytes { salt in
                    try output.withUnsafeMutableBytes {
                        try Scrypt.deriveKey(password: password, salt: salt, parameters: vector.parameters, into: $0)
                    }
                }
            }
            #expect(output == hexBytes(vector.derived), "N 2^\(vector.parameters.costLog2)")
        }
        for bad in [Scrypt.Parameters(costLog2: 0), Scrypt.Parameters(costLog2: 23), Scrypt.Parameters(costLog2: 10, blockSize: 0),
                    Scrypt.Parameters(costLog2: 10, parallelism: 0), Scrypt.Parameters(costLog2: 10, blockSize: 1 << 15, parallelism: 1 << 15)] {
            var output = [UInt8](repeating: 7, count: 32)
            #expect(throws: CryptoError(.invalidParameter, "")) {
                try [UInt8]([1]).withUnsafeBytes { one in try output.withUnsafeMutableBytes { try Scrypt.deriveKey(password: one, salt: one, parameters: bad, into: $0) } }
            }
            #expect(output == [UInt8](repeating: 7, count: 32), "nothing written for refused parameters")
        }
        let calibrated = try Scrypt.calibrate(milliseconds: 100)
        #expect((15...20).contains(calibrated.costLog2) && calibrated.blockSize == 8 && calibrated.parallelism == 1)
    }

    @Test("PBKDF2 (RFC 6070) and AES key wrap (RFC 3394 §4.1)")
    func kdfAndKeyWrap() throws {
        for vector in try PBKDF2Case.rfc6070() {
            #expect(try PBKDF2.deriveKey(password: vector.password, salt: vector.salt, prf: .sha1, rounds: vector.rounds, length: vector.derived.count) == Data(vector.derived))
        }
        #expect(throws: CryptoError(.invalidParameter, "")) { try PBKDF2.deriveKey(password: [1], salt: [2], prf: .sha1, rounds: 0, length: 16) }
        // RFC 3394 §4.1: 128 bits of key data with a 128-bit KEK.
        let kek = hexBytes("000102030405060708090A0B0C0D0E0F")
        let keyData = hexBytes("00112233445566778899AABBCCDDEEFF")
        let wrapped = try AESKeyWrap.wrap(keyData, kek: kek)
        #expect(wrapped == Data(hexBytes("1FA68B0A8112B447AEF34BD8FB5A7B829D3E862371D2CFE5")))
        #expect(try AESKeyWrap.unwrap(wrapped, kek: kek) == Data(keyData))
        var tampered = wrapped
        tampered[3] ^= 1
        #expect(throws: CryptoError(.integrity, "")) { try AESKeyWrap.unwrap(tampered, kek: kek) }
    }

    @Test("SecureRandom gives fresh bytes")
    func random() throws {
        let a = try SecureRandom.bytes(count: 32), b = try SecureRandom.bytes(count: 32)
        #expect(a.count == 32 && a != b)
    }
}
