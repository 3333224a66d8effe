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
