import Foundation
import Security
import Testing

/// SecKey as an Apple-platform client uses it: dictionaries, `as CFDictionary`, CFError out-parameters, statuses.
@Suite("Keys: SecKey API")
struct KeySecKeyTests {
    static func generate(_ type: CFString, _ bits: Any) -> (SecKey?, CFError?) {
        let parameters: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits]
        var error: Unmanaged<CFError>?
        let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error)
        return (key, error?.takeRetainedValue())
    }

    static let rsa = generate(kSecAttrKeyTypeRSA, 2048).0!  // !: generation of a valid size cannot fail
    static let ec = generate(kSecAttrKeyTypeECSECPrimeRandom, 256).0!  // !: as above

    /// The status a failed call reported.
    static func status(_ error: CFError?) -> Int? {
        guard let error else { return nil }
        #expect(error.domain == NSOSStatusErrorDomain)
        return error.code
    }

    @Test("algorithm identifiers are Apple's strings")
    func identifiers() {
        #expect(SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256.rawValue as String == "algid:sign:RSA:message-PKCS1v15:SHA256")
        #expect(SecKeyAlgorithm.rsaSignatureDigestPKCS1v15Raw.rawValue as String == "algid:sign:RSA:digest-PKCS1v15")
        #expect(SecKeyAlgorithm.rsaSignatureDigestPSSSHA256.rawValue as String == "algid:sign:RSA:digest-PSS:SHA256:SHA256:32")
        #expect(SecKeyAlgorithm.rsaSignatureMessagePSSSHA224.rawValue as String == "algid:sign:RSA:message-PSS:SHA224:SHA224:24")
        #expect(SecKeyAlgorithm.ecdsaSignatureMessageX962SHA384.rawValue as String == "algid:sign:ECDSA:message-X962:SHA384")
        #expect(SecKeyAlgorithm.ecdsaSignatureRFC4754.rawValue as String == "algid:sign:ECDSA:RFC4754")
        #expect(SecKeyAlgorithm.rsaEncryptionOAEPSHA512.rawValue as String == "algid:encrypt:RSA:OAEP:SHA512")
        #expect(SecKeyAlgorithm.rsaEncryptionPKCS1.rawValue as String == "algid:encrypt:RSA:PKCS1")
        #expect(SecKeyAlgorithm.rsaEncryptionRaw.rawValue as String == "algid:encrypt:RSA:raw")
        #expect(SecKeyAlgorithm(rawValue: "algid:sign:RSA:raw" as CFString) == .rsaSignatureRaw)
    }

    @Test("generation: RSA sizes as numbers or strings, EC curves; attributes and block sizes as Apple gives them")
    func generation() throws {
        for (type, bits, block, typeCode) in [
            (kSecAttrKeyTypeRSA, 1024 as Any, 128, "42"), (kSecAttrKeyTypeRSA, "2048" as Any, 256, "42"),
            (kSecAttrKeyTypeEC, 256 as Any, 32, "73"), (kSecAttrKeyTypeECSECPrimeRandom, "384" as Any, 48, "73"),
            (kSecAttrKeyTypeECSECPrimeRandom, 521 as Any, 66, "73"),
        ] {
            let (key, error) = Self.generate(type, bits)
            let privateKey = try #require(key, "\(error.map { "\($0)" } ?? "")")
            #expect(SecKeyGetBlockSize(privateKey) == block)
            let attributes = try #require(SecKeyCopyAttributes(privateKey) as? [String: Any])
            #expect(attributes[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassPrivate as String)
            #expect(attributes[kSecAttrKeyType as String] as? String == typeCode)
            #expect((attributes[kSecAttrKeySizeInBits as String] as? NSNumber)?.intValue == (block == 66 ? 521 : block * 8))
            #expect((attributes[kSecAttrApplicationLabel as String] as? Data)?.count == 20)
            #expect((attributes[kSecAttrCanSign as String] as? NSNumber)?.boolValue == true)
            let publicKey = try #require(SecKeyCopyPublicKey(privateKey))
            let publicAttributes = try #require(SecKeyCopyAttributes(publicKey) as? [String: Any])
            #expect(publicAttributes[kSecAttrKeyClass as String] as? String == "0")
            #expect((publicAttributes[kSecAttrCanVerify as String] as? NSNumber)?.boolValue == true)
            #expect(publicAttributes[kSecAttrApplicationLabel as String] as? Data == attributes[kSecAttrApplicationLabel as String] as? Data)
        }
    }

    @Test("generation errors are errSecParam: no type, an unknown type, RSA 512 and 1000, EC 224, a size that is not a number")
    func generationErrors() {
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateRandomKey([kSecAttrKeySizeInBits as String: 2048] as CFDictionary, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        for (type, bits) in [(kSecAttrKeyTypeRSA, 512 as Any), (kSecAttrKeyTypeRSA, 1000 as Any), (kSecAttrKeyTypeEC, 224 as Any),
            (kSecAttrKeyTypeRSA, "big" as Any), (kSecAttrKeyTypeDSA, 1024 as Any), (kSecAttrKeyTypeRSA, 8192 as Any)]
        {
            let (key, failure) = Self.generate(type, bits)
            #expect(key == nil)
            #expect(Self.status(failure) == Int(errSecParam), "\(type) \(bits)")
        }
        // No error pointer: nil, no crash.
        #expect(SecKeyCreateRandomKey([:] as CFDictionary, nil) == nil)
    }

    @Test("sign and verify with every supported algorithm; IsAlgorithmSupported agrees")
    func signVerify() throws {
        let message = Data("message to sign".utf8) as CFData
        let rsaAlgorithms: [SecKeyAlgorithm] = [
            .rsaSignatureMessagePKCS1v15SHA1, .rsaSignatureMessagePKCS1v15SHA224, .rsaSignatureMessagePKCS1v15SHA256,
            .rsaSignatureMessagePKCS1v15SHA384, .rsaSignatureMessagePKCS1v15SHA512, .rsaSignatureMessagePSSSHA1,
            .rsaSignatureMessagePSSSHA224, .rsaSignatureMessagePSSSHA256, .rsaSignatureMessagePSSSHA384,
            .rsaSignatureMessagePSSSHA512, .rsaSignatureDigestPKCS1v15Raw,
        ]
        let ecAlgorithms: [SecKeyAlgorithm] = [
            .ecdsaSignatureMessageX962SHA1, .ecdsaSignatureMessageX962SHA224, .ecdsaSignatureMessageX962SHA256,
            .ecdsaSignatureMessageX962SHA384, .ecdsaSignatureMessageX962SHA512, .ecdsaSignatureDigestX962,
            .ecdsaSignatureRFC4754, .ecdsaSignatureDigestRFC4754, .ecdsaSignatureMessageRFC4754SHA256,
            .ecdsaSignatureMessageRFC4754SHA512,
        ]
        for (key, algorithms) in [(Self.rsa, rsaAlgorithms), (Self.ec, ecAlgorithms)] {
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            for algorithm in algorithms {
                #expect(SecKeyIsAlgorithmSupported(key, .sign, algorithm))
                #expect(!SecKeyIsAlgorithmSupported(publicKey, .sign, algorithm))
                #expect(SecKeyIsAlgorithmSupported(publicKey, .verify, algorithm))
                var error: Unmanaged<CFError>?
                let signature = try #require(SecKeyCreateSignature(key, algorithm, message, &error), "\(algorithm.rawValue)")
                #expect(SecKeyVerifySignature(publicKey, algorithm, message, signature, &error))
                #expect(error == nil)
                var bad = signature as Data
                bad[bad.count - 1] ^= 0x01
                #expect(!SecKeyVerifySignature(publicKey, algorithm, message, bad as CFData, &error))
                #expect(Self.status(error?.takeRetainedValue()) == Int(errSecVerifyFailed))
            }
        }
        let digests: [(SecKeyAlgorithm, Int)] = [
            (.rsaSignatureDigestPKCS1v15SHA1, 20), (.rsaSignatureDigestPKCS1v15SHA256, 32), (.rsaSignatureDigestPSSSHA512, 64),
        ]
        for (algorithm, size) in digests {
            var error: Unmanaged<CFError>?
            let digest = Data(repeating: 7, count: size) as CFData
            let signature = try #require(SecKeyCreateSignature(Self.rsa, algorithm, digest, &error))
            #expect(SecKeyVerifySignature(Self.rsa, algorithm, digest, signature, &error))
            #expect(SecKeyCreateSignature(Self.rsa, algorithm, Data(count: size + 1) as CFData, &error) == nil)
            #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        }
    }

    @Test("operation errors: a public key signing, an algorithm of the other key type, EC encryption: errSecParam, as Apple's \"algorithm not supported by the key\"")
    func unsupported() throws {
        let publicKey = try #require(SecKeyCopyPublicKey(Self.rsa))
        let message = Data("x".utf8) as CFData
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateSignature(publicKey, .rsaSignatureMessagePKCS1v15SHA256, message, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        #expect(SecKeyCreateSignature(Self.rsa, .ecdsaSignatureMessageX962SHA256, message, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        #expect(SecKeyCreateSignature(Self.rsa, SecKeyAlgorithm(rawValue: "algid:sign:RSA:nonsense" as CFString), message, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        #expect(SecKeyCreateEncryptedData(Self.ec, .rsaEncryptionOAEPSHA256, message, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        #expect(SecKeyCreateDecryptedData(publicKey, .rsaEncryptionOAEPSHA256, message, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        #expect(!SecKeyIsAlgorithmSupported(Self.ec, .encrypt, .rsaEncryptionPKCS1))
        #expect(!SecKeyIsAlgorithmSupported(Self.rsa, .keyExchange, .rsaEncryptionPKCS1))
    }

    @Test("encrypt and decrypt: PKCS#1, OAEP SHA-1/SHA-2, raw; too long and wrong-length input are errSecParam")
    func encryption() throws {
        let publicKey = try #require(SecKeyCopyPublicKey(Self.rsa))
        let plaintext = Data("attack at dawn".utf8) as CFData
        for algorithm in [SecKeyAlgorithm.rsaEncryptionPKCS1, .rsaEncryptionOAEPSHA1, .rsaEncryptionOAEPSHA224,
            .rsaEncryptionOAEPSHA256, .rsaEncryptionOAEPSHA384, .rsaEncryptionOAEPSHA512]
        {
            var error: Unmanaged<CFError>?
            let ciphertext = try #require(SecKeyCreateEncryptedData(publicKey, algorithm, plaintext, &error))
            #expect((ciphertext as Data).count == 256)
            #expect(SecKeyCreateDecryptedData(Self.rsa, algorithm, ciphertext, &error) as Data? == plaintext as Data)
            #expect(SecKeyCreateDecryptedData(Self.rsa, algorithm, (ciphertext as Data).dropLast() as CFData, &error) == nil)
            #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        }
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateEncryptedData(publicKey, .rsaEncryptionPKCS1, Data(count: 246) as CFData, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        #expect(SecKeyCreateEncryptedData(publicKey, .rsaEncryptionOAEPSHA256, Data(count: 191) as CFData, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        #expect(SecKeyCreateEncryptedData(publicKey, .rsaEncryptionOAEPSHA256, Data(count: 190) as CFData, &error) != nil)
    }

    @Test("external representations round-trip through SecKeyCreateWithData; bad data and attributes are errSecParam, as Apple's")
    func externalRepresentation() throws {
        for (key, type) in [(Self.rsa, kSecAttrKeyTypeRSA), (Self.ec, kSecAttrKeyTypeECSECPrimeRandom)] {
            var error: Unmanaged<CFError>?
            let privateData = try #require(SecKeyCopyExternalRepresentation(key, &error))
            let publicData = try #require(SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(key)!, &error))
            let privateAttributes: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate]
            let publicAttributes: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeyClass as String: kSecAttrKeyClassPublic]
            let again = try #require(SecKeyCreateWithData(privateData, privateAttributes as CFDictionary, &error))
            #expect(again == key && again.hashValue == key.hashValue && again != SecKeyCopyPublicKey(key))
            #expect(SecKeyCopyExternalRepresentation(again, &error) as Data? == privateData as Data)
            let publicAgain = try #require(SecKeyCreateWithData(publicData, publicAttributes as CFDictionary, &error))
            #expect(SecKeyCopyExternalRepresentation(publicAgain, &error) as Data? == publicData as Data)
            #expect(SecKeyCreateWithData(Data([1, 2, 3]) as CFData, publicAttributes as CFDictionary, &error) == nil)
            #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
            #expect(SecKeyCreateWithData(publicData, [kSecAttrKeyType as String: type] as CFDictionary, &error) == nil)
            #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
            #expect(SecKeyCreateWithData(publicData, [kSecAttrKeyClass as String: kSecAttrKeyClassPublic] as CFDictionary, &error) == nil)
            #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
        }
        var symmetric: Unmanaged<CFError>?
        let symmetricAttributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeyClass as String: kSecAttrKeyClassSymmetric]
        #expect(SecKeyCreateWithData(Data([1]) as CFData, symmetricAttributes as CFDictionary, &symmetric) == nil)
        #expect(Self.status(symmetric?.takeRetainedValue()) == Int(errSecUnimplemented))
        // X9.63 for EC: 65 bytes public, 97 private on P-256.
        var error: Unmanaged<CFError>?
        #expect((SecKeyCopyExternalRepresentation(Self.ec, &error) as Data?)?.count == 97)
        #expect((SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(Self.ec)!, &error) as Data?)?.count == 65)
        // A point off the curve.
        var point = SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(Self.ec)!, &error)! as Data
        point[40] ^= 0x10
        let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeEC, kSecAttrKeyClass as String: kSecAttrKeyClassPublic]
        #expect(SecKeyCreateWithData(point as CFData, attributes as CFDictionary, &error) == nil)
        #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
    }

    @Test("random bytes as key data, signatures and ciphertexts never crash and always give a status")
    func randomInput() throws {
        func random(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: 0...255) }) }
        let types = [kSecAttrKeyTypeRSA, kSecAttrKeyTypeEC]
        let classes = [kSecAttrKeyClassPublic, kSecAttrKeyClassPrivate]
        for round in 0..<200 {
            let length = [0, 1, 64, 65, 97, 133, 199, 256, 270, 600, 1200][round % 11]
            var bytes = random(length)
            if length > 0, round % 2 == 0 { bytes[0] = round % 4 == 0 ? 0x04 : 0x30 }
            let attributes: [String: Any] = [kSecAttrKeyType as String: types[round % 2], kSecAttrKeyClass as String: classes[(round / 2) % 2]]
            var error: Unmanaged<CFError>?
            if SecKeyCreateWithData(bytes as CFData, attributes as CFDictionary, &error) == nil {
                #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
            }
            for (key, algorithm) in [(Self.rsa, SecKeyAlgorithm.rsaSignatureMessagePSSSHA256), (Self.ec, .ecdsaSignatureMessageX962SHA256),
                (Self.ec, .ecdsaSignatureRFC4754), (Self.rsa, .rsaSignatureRaw)]
            {
                #expect(!SecKeyVerifySignature(key, algorithm, bytes as CFData, random(length) as CFData, &error))
                #expect([Int(errSecVerifyFailed), Int(errSecParam)].contains(Self.status(error?.takeRetainedValue()) ?? 0))
            }
            for algorithm in [SecKeyAlgorithm.rsaEncryptionOAEPSHA1, .rsaEncryptionPKCS1, .rsaEncryptionRaw] {
                if SecKeyCreateDecryptedData(Self.rsa, algorithm, bytes as CFData, &error) == nil {
                    #expect(Self.status(error?.takeRetainedValue()) == Int(errSecParam))
                }
            }
        }
    }

    // MARK: The 2009 API

    @Test("SecKeyGeneratePair, SecKeyEncrypt/Decrypt with every padding, and their buffer and size statuses")
    func legacyEncryption() throws {
        var publicKey: SecKey?, privateKey: SecKey?
        let parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 1024]
        #expect(SecKeyGeneratePair(parameters as CFDictionary, &publicKey, &privateKey) == errSecSuccess)
        let pub = try #require(publicKey), priv = try #require(privateKey)
        #expect(SecKeyGetBlockSize(pub) == 128)
        let plain = [UInt8]("hello 2009".utf8)
        for padding in [SecPadding.PKCS1, .OAEP, kSecPaddingNone] {
            var cipher = [UInt8](repeating: 0, count: 128), cipherLength = 128
            #expect(SecKeyEncrypt(pub, padding, plain, plain.count, &cipher, &cipherLength) == errSecSuccess)
            #expect(cipherLength == 128)
            var out = [UInt8](repeating: 0, count: 128), outLength = 128
            #expect(SecKeyDecrypt(priv, padding, cipher, cipherLength, &out, &outLength) == errSecSuccess)
            #expect(Array(out.prefix(outLength)) == plain)
            var small = [UInt8](repeating: 0, count: 127), smallLength = 127
            #expect(SecKeyEncrypt(pub, padding, plain, plain.count, &small, &smallLength) == errSecParam)
        }
        var cipher = [UInt8](repeating: 0, count: 128), cipherLength = 128
        let tooLong = [UInt8](repeating: 1, count: 118)  // PKCS#1 allows 128 - 11 = 117
        #expect(SecKeyEncrypt(pub, .PKCS1, tooLong, tooLong.count, &cipher, &cipherLength) == errSecParam)
        let tooLongOAEP = [UInt8](repeating: 1, count: 87)  // OAEP SHA-1 allows 128 - 42 = 86
        #expect(SecKeyEncrypt(pub, .OAEP, tooLongOAEP, tooLongOAEP.count, &cipher, &cipherLength) == errSecParam)
        #expect(SecKeyEncrypt(pub, .PKCS1SHA256, plain, plain.count, &cipher, &cipherLength) == errSecParam)
        // Decrypting something that is not a ciphertext of this key.
        var out = [UInt8](repeating: 0, count: 128), outLength = 128
        #expect(SecKeyDecrypt(priv, .OAEP, [UInt8](repeating: 3, count: 128), 128, &out, &outLength) == errSecParam)
        #expect(SecKeyDecrypt(priv, .OAEP, [UInt8](repeating: 3, count: 64), 64, &out, &outLength) == errSecParam)
        // Wrong padding for the key type: EC keys do not encrypt.
        var ecPublic: SecKey?, ecPrivate: SecKey?
        let ecParameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits as String: 256]
        #expect(SecKeyGeneratePair(ecParameters as CFDictionary, &ecPublic, &ecPrivate) == errSecSuccess)
        #expect(SecKeyEncrypt(ecPublic!, .OAEP, plain, plain.count, &cipher, &cipherLength) == errSecParam)
        #expect(SecKeyGeneratePair([kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 100] as CFDictionary, &publicKey, &privateKey) == errSecParam)
        #expect(publicKey == nil && privateKey == nil)
    }

    @Test("SecKeyRawSign/RawVerify: PKCS#1 with DigestInfo per SHA, raw PKCS#1, EC X9.62 and sigRaw; legacy statuses")
    func legacySignatures() throws {
        let pub = try #require(SecKeyCopyPublicKey(Self.rsa))
        for (padding, size) in [(SecPadding.PKCS1SHA1, 20), (.PKCS1SHA224, 28), (.PKCS1SHA256, 32), (.PKCS1SHA384, 48), (.PKCS1SHA512, 64), (.PKCS1, 35)] {
            let digest = [UInt8](repeating: 0x3c, count: size)
            var signature = [UInt8](repeating: 0, count: 256), length = 256
            #expect(SecKeyRawSign(Self.rsa, padding, digest, digest.count, &signature, &length) == errSecSuccess)
            #expect(length == 256)
            #expect(SecKeyRawVerify(pub, padding, digest, digest.count, signature, length) == errSecSuccess)
            signature[0] ^= 0x80
            #expect(SecKeyRawVerify(pub, padding, digest, digest.count, signature, length) == -9809)  // errSSLCrypto
            var small = [UInt8](repeating: 0, count: 255), smallLength = 255
            #expect(SecKeyRawSign(Self.rsa, padding, digest, digest.count, &small, &smallLength) == errSecParam)
        }
        // A digest of the wrong length for the padding, sigRaw on RSA, a public key signing.
        var signature = [UInt8](repeating: 0, count: 256), length = 256
        #expect(SecKeyRawSign(Self.rsa, .PKCS1SHA256, [UInt8](repeating: 1, count: 20), 20, &signature, &length) == errSecParam)
        #expect(SecKeyRawSign(Self.rsa, .sigRaw, [UInt8](repeating: 1, count: 20), 20, &signature, &length) == errSecParam)
        #expect(SecKeyRawSign(Self.rsa, .PKCS1MD5, [UInt8](repeating: 1, count: 16), 16, &signature, &length) == errSecParam)
        #expect(SecKeyRawSign(pub, .PKCS1SHA1, [UInt8](repeating: 1, count: 20), 20, &signature, &length) == errSecParam)
        // EC: PKCS1 means X9.62 DER over the digest; sigRaw means r||s.
        let ecPublic = try #require(SecKeyCopyPublicKey(Self.ec))
        let digest = [UInt8](repeating: 9, count: 32)
        var der = [UInt8](repeating: 0, count: 80), derLength = 80
        #expect(SecKeyRawSign(Self.ec, .PKCS1, digest, 32, &der, &derLength) == errSecSuccess)
        #expect(der[0] == 0x30)
        #expect(SecKeyRawVerify(ecPublic, .PKCS1, digest, 32, der, derLength) == errSecSuccess)
        var raw = [UInt8](repeating: 0, count: 64), rawLength = 64
        #expect(SecKeyRawSign(Self.ec, .sigRaw, digest, 32, &raw, &rawLength) == errSecSuccess)
        #expect(rawLength == 64)
        #expect(SecKeyRawVerify(ecPublic, .sigRaw, digest, 32, raw, rawLength) == errSecSuccess)
        raw[5] ^= 1
        #expect(SecKeyRawVerify(ecPublic, .sigRaw, digest, 32, raw, rawLength) == -9809)
    }
}
