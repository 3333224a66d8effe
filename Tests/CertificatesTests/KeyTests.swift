import Certificates
import Foundation
import Testing

/// The idiomatic key API: generation, external representations and their validation, operations, typed errors.
@Suite("Keys: AsymmetricKey")
struct KeyTests {
    static let rsa2048 = Result { try AsymmetricKey.generateRSA(bits: 2048) }
    static let curves: [EllipticCurve] = [.p256, .p384, .p521]

    @Test("RSA sizes: 1024...4096 in whole bytes generate; others are unsupportedKeySize", arguments: [512, 1000, 1023, 4097, 8192, 0, -1])
    func rsaSizes(_ bits: Int) throws {
        #expect(throws: KeyError(.unsupportedKeySize, "")) { try AsymmetricKey.generateRSA(bits: bits) }
    }

    @Test("RSA 1024 and 3072 generate with the size asked for")
    func rsaGenerate() throws {
        for bits in [1024, 3072] {
            let key = try AsymmetricKey.generateRSA(bits: bits)
            #expect(key.sizeInBits == bits && key.blockSize == bits / 8 && key.isPrivate && key.type == .rsa)
        }
    }

    @Test("EC keys: sizes, block size, external representation lengths, round trip", arguments: curves)
    func ecRoundTrip(_ curve: EllipticCurve) throws {
        let key = try AsymmetricKey.generateEC(curve: curve)
        #expect(key.sizeInBits == curve.bits && key.blockSize == curve.fieldBytes && key.curve == curve)
        let external = try key.externalRepresentation()
        #expect(external.count == 1 + 3 * curve.fieldBytes && external.first == 0x04)
        let publicKey = try key.publicKey()
        let point = try publicKey.externalRepresentation()
        #expect(point == external.prefix(1 + 2 * curve.fieldBytes))
        let again = try AsymmetricKey(externalRepresentation: external, type: .ellipticCurve, isPrivate: true)
        #expect(try again.externalRepresentation() == external)
        let message = Data("message".utf8)
        let signature = try again.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
        #expect(try publicKey.isValidSignature(signature, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
        let raw = try key.signature(for: message, algorithm: .ecdsaRFC4754(.sha384, hashing: true))
        #expect(raw.count == 2 * curve.fieldBytes)
        #expect(try publicKey.isValidSignature(raw, for: message, algorithm: .ecdsaRFC4754(.sha384, hashing: true)))
        #expect(try !publicKey.isValidSignature(raw, for: Data("other".utf8), algorithm: .ecdsaRFC4754(.sha384, hashing: true)))
    }

    @Test("EC import rejects wrong lengths, a wrong prefix, a point off the curve, a scalar that does not match, garbage")
    func ecImportErrors() throws {
        let key = try AsymmetricKey.generateEC(curve: .p256)
        let external = try key.externalRepresentation()
        let point = external.prefix(65)
        let invalid = KeyError(.invalidKeyData, "")
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: point.dropLast(), type: .ellipticCurve, isPrivate: false) }
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: Data(), type: .ellipticCurve, isPrivate: false) }
        var compressed = Data(point)
        compressed[0] = 0x02
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: compressed, type: .ellipticCurve, isPrivate: false) }
        var offCurve = Data(point)
        offCurve[64] ^= 0x01
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: offCurve, type: .ellipticCurve, isPrivate: false) }
        var wrongScalar = Data(external)
        wrongScalar[wrongScalar.count - 1] ^= 0x01
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: wrongScalar, type: .ellipticCurve, isPrivate: true) }
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: Data(repeating: 0x04, count: 97), type: .ellipticCurve, isPrivate: true) }
        // A P-256 private key is 97 bytes, as is a P-384 public key: the class decides.
        let asP384 = try? AsymmetricKey(externalRepresentation: external, type: .ellipticCurve, isPrivate: false)
        #expect(asP384 == nil)
    }

    @Test("RSA import: round trip of PKCS#1 DER; garbage, truncation, trailing bytes and an inconsistent key are invalidKeyData")
    func rsaImport() throws {
        let key = try Self.rsa2048.get()
        let external = try key.externalRepresentation()
        let again = try AsymmetricKey(externalRepresentation: external, type: .rsa, isPrivate: true)
        #expect(try again.externalRepresentation() == external)
        let publicDER = try key.publicKey().externalRepresentation()
        #expect(try AsymmetricKey(externalRepresentation: publicDER, type: .rsa, isPrivate: false).sizeInBits == 2048)
        let invalid = KeyError(.invalidKeyData, "")
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: Data([0x30, 0x03, 0x02, 0x01]), type: .rsa, isPrivate: false) }
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: publicDER.dropLast(), type: .rsa, isPrivate: false) }
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: publicDER + Data([0]), type: .rsa, isPrivate: false) }
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: publicDER, type: .rsa, isPrivate: true) }
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: Data(), type: .rsa, isPrivate: true) }
        var corrupted = Data(external)
        corrupted[corrupted.count / 2] ^= 0x55
        #expect(throws: invalid) { try AsymmetricKey(externalRepresentation: corrupted, type: .rsa, isPrivate: true) }
        // Random bytes never crash.
        for length in [1, 2, 16, 65, 97, 133, 270, 1200] {
            var bytes = [UInt8](repeating: 0, count: length)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
            for type in [KeyType.rsa, .ellipticCurve] {
                for isPrivate in [false, true] {
                    _ = try? AsymmetricKey(externalRepresentation: Data(bytes), type: type, isPrivate: isPrivate)
                }
            }
        }
    }

    @Test("RSA signatures: PKCS#1 v1.5 and PSS over messages and digests, raw PKCS#1 and raw RSA")
    func rsaSignatures() throws {
        let key = try Self.rsa2048.get()
        let publicKey = try key.publicKey()
        let message = Data("the quick brown fox".utf8)
        for digest in KeyDigest.all {
            for algorithm in [SignatureAlgorithm.rsaPKCS1v15(digest, hashing: true), .rsaPSS(digest, hashing: true)] {
                let signature = try key.signature(for: message, algorithm: algorithm)
                #expect(signature.count == 256)
                #expect(try publicKey.isValidSignature(signature, for: message, algorithm: algorithm))
                var bad = signature
                bad[10] ^= 1
                #expect(try !publicKey.isValidSignature(bad, for: message, algorithm: algorithm))
                #expect(try !publicKey.isValidSignature(signature.dropLast(), for: message, algorithm: algorithm))
            }
            let digestInput = Data(repeating: 0xab, count: digest.size)
            let signature = try key.signature(for: digestInput, algorithm: .rsaPKCS1v15(digest, hashing: false))
            #expect(try publicKey.isValidSignature(signature, for: digestInput, algorithm: .rsaPKCS1v15(digest, hashing: false)))
            #expect(throws: KeyError(.invalidInput, "")) {
                try key.signature(for: digestInput.dropLast(), algorithm: .rsaPKCS1v15(digest, hashing: false))
            }
        }
        let rawPKCS1 = try key.signature(for: message, algorithm: .rsaPKCS1v15Raw)
        #expect(try publicKey.isValidSignature(rawPKCS1, for: message, algorithm: .rsaPKCS1v15Raw))
        let block = Data([0x00]) + Data(repeating: 0x42, count: 255)
        let raw = try key.signature(for: block, algorithm: .rsaRaw)
        #expect(try publicKey.isValidSignature(raw, for: block, algorithm: .rsaRaw))
        #expect(throws: KeyError(.invalidInput, "")) { try key.signature(for: Data(count: 257), algorithm: .rsaRaw) }
        #expect(throws: KeyError(.invalidInput, "")) { try key.signature(for: Data(repeating: 0xff, count: 256), algorithm: .rsaRaw) }
        #expect(throws: KeyError(.unsupportedAlgorithm, "")) { try publicKey.signature(for: message, algorithm: .rsaPSS(.sha256, hashing: true)) }
        #expect(throws: KeyError(.unsupportedAlgorithm, "")) { try key.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true)) }
    }

    @Test("RSA encryption: PKCS#1, OAEP (SHA-1, SHA-2), raw; size limits; bad ciphertext")
    func rsaEncryption() throws {
        let key = try Self.rsa2048.get()
        let publicKey = try key.publicKey()
        for algorithm in [EncryptionAlgorithm.rsaPKCS1] + KeyDigest.all.map(EncryptionAlgorithm.rsaOAEP) {
            let maximum = algorithm.maximumPlaintextSize(modulusBytes: 256)
            let plaintext = Data(repeating: 0x5a, count: maximum)
            let ciphertext = try publicKey.encrypt(plaintext, algorithm: algorithm)
            #expect(ciphertext.count == 256)
            #expect(try key.decrypt(ciphertext, algorithm: algorithm) == plaintext)
            #expect(throws: KeyError(.invalidInput, "")) { try publicKey.encrypt(plaintext + Data([1]), algorithm: algorithm) }
            var bad = ciphertext
            bad[0] ^= 0x01
            #expect(throws: KeyError(.decryptionFailed, "")) { try key.decrypt(bad, algorithm: algorithm) }
            #expect(throws: KeyError(.invalidInput, "")) { try key.decrypt(ciphertext.dropFirst(), algorithm: algorithm) }
        }
        let raw = try publicKey.encrypt(Data("short".utf8), algorithm: .rsaRaw)
        #expect(try key.decrypt(raw, algorithm: .rsaRaw).suffix(5) == Data("short".utf8))
        #expect(throws: KeyError(.invalidInput, "")) { try publicKey.encrypt(Data(repeating: 0xff, count: 256), algorithm: .rsaRaw) }
        #expect(throws: KeyError(.unsupportedAlgorithm, "")) { try publicKey.decrypt(raw, algorithm: .rsaRaw) }
        let ec = try AsymmetricKey.generateEC(curve: .p256)
        #expect(throws: KeyError(.unsupportedAlgorithm, "")) { try ec.encrypt(Data([1]), algorithm: .rsaPKCS1) }
    }

    @Test("one key signs, verifies, encrypts and decrypts from many tasks at once")
    func concurrentUse() async throws {
        let key = try AsymmetricKey.generateEC(curve: .p256)
        let rsa = try Self.rsa2048.get()
        let publicKey = try key.publicKey()
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<32 {
                group.addTask {
                    let message = Data("message \(index)".utf8)
                    let signature = try key.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
                    let ciphertext = try rsa.encrypt(message, algorithm: .rsaOAEP(.sha256))
                    return try publicKey.isValidSignature(signature, for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
                        && rsa.decrypt(ciphertext, algorithm: .rsaOAEP(.sha256)) == message
                }
            }
            var all: [Bool] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 32 && results.allSatisfy { $0 })
    }

    @Test("the application label is SHA-1 of the public key's external representation, the same for both halves")
    func applicationLabel() throws {
        let key = try AsymmetricKey.generateEC(curve: .p256)
        #expect(try key.publicKeySHA1() == key.publicKey().publicKeySHA1())
        #expect(try key.publicKeySHA1().count == 20)
    }
}
