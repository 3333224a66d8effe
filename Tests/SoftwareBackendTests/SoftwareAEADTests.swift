import CryptoContract
import SoftwareBackend
import Testing
import TestVectors

/// AES-GCM on the software backend against NIST CAVP GCMVS.
@Suite("Software backend: AES-GCM (NIST CAVP GCMVS)")
struct SoftwareAEADTests {
    let backend = SoftwareBackend()

    @Test("encryption: ciphertext and tag for every key, nonce, AAD and tag length")
    func encrypt() throws {
        let cases = try AEADCase.nist(decrypt: false)
        #expect(cases.count > 1000)
        var failures: [String] = []
        for vector in cases {
            guard let plaintext = vector.plaintext else { continue }
            let sealed = try backend.seal(.aesGCM, key: vector.key, nonce: vector.nonce, aad: vector.aad, plaintext, tagLength: vector.tag.count)
            if sealed.ciphertext != vector.ciphertext || sealed.tag != vector.tag { failures.append("\(vector)") }
        }
        #expect(failures == [])
    }

    @Test("decryption: the plaintext, or an integrity error with nothing left behind")
    func decrypt() throws {
        let cases = try AEADCase.nist(decrypt: true)
        #expect(cases.contains { $0.plaintext == nil })
        var failures: [String] = []
        for vector in cases {
            do {
                let plaintext = try backend.open(.aesGCM, key: vector.key, nonce: vector.nonce, aad: vector.aad, vector.ciphertext, tag: vector.tag)
                if plaintext != vector.plaintext { failures.append("\(vector): accepted or wrong") }
            } catch let error as CryptoError where error.code == .integrity && vector.plaintext == nil {
                continue
            } catch {
                failures.append("\(vector): \(error)")
            }
        }
        #expect(failures == [])
    }

    @Test("bad input: key, nonce and tag sizes, a tampered tag")
    func badInput() throws {
        let key = [UInt8](repeating: 1, count: 32), nonce = [UInt8](repeating: 2, count: 12)
        #expect(throws: CryptoError(.invalidKeySize, "")) { try backend.seal(.aesGCM, key: [1, 2], nonce: nonce, [1]) }
        #expect(throws: CryptoError(.invalidIVSize, "")) { try backend.seal(.aesGCM, key: key, nonce: [], [1]) }
        #expect(throws: CryptoError(.invalidParameter, "")) { try backend.seal(.aesGCM, key: key, nonce: nonce, [1], tagLength: 17) }
        let sealed = try backend.seal(.aesGCM, key: key, nonce: nonce, aad: [9], Array("secret".utf8))
        var tag = sealed.tag
        tag[0] ^= 1
        #expect(throws: CryptoError(.integrity, "")) { try backend.open(.aesGCM, key: key, nonce: nonce, aad: [9], sealed.ciphertext, tag: tag) }
        #expect(throws: CryptoError(.integrity, "")) { try backend.open(.aesGCM, key: key, nonce: nonce, aad: [8], sealed.ciphertext, tag: sealed.tag) }
        #expect(try backend.open(.aesGCM, key: key, nonce: nonce, aad: [9], sealed.ciphertext, tag: sealed.tag) == Array("secret".utf8))
    }
}
