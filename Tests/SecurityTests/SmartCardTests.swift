import Certificates
import Foundation
import HardwareKeys
import LocalAuthentication
import Security
import Testing
import TestVectors

/// A PKCS#11 token (SoftHSM2, keys and a certificate written by pkcs11-tool) through Apple's API, as CryptoTokenKit
/// presents a smart card: its identity found by SecItemCopyMatching, its key signing on the card after the PIN.
@Suite("Security: PKCS#11 tokens as smart cards (SoftHSM2)", .serialized, .hardwareExclusive, .isolatedKeychain(["com.example.app"]))
struct SmartCardTests {
    let token: SoftHSMToken
    let tokenID: String

    init() throws {
        token = try SoftHSMToken()
        let directory = try TemporaryDirectory("smartcard")
        try token.tool(["--keypairgen", "--key-type", "EC:prime256v1", "--id", "01", "--label", "card-key", "--usage-sign", "--usage-derive"])
        try token.writeCertificate(forKey: "01", label: "card-key", subject: "/CN=card.example", in: directory.url)
        // Loaded after the token exists: SoftHSM reads its tokens when initialised.
        let modules = try PKCS11Modules(path: SoftHSMToken.module)
        PKCS11Modules.setShared(modules)
        let label = token.label
        tokenID = try #require(try modules.tokens().first { $0.label == label }).tokenID
    }

    func context(_ pin: String) -> LAContext {
        let context = LAContext()
        context.setCredential(Data(pin.utf8), type: .applicationPassword)
        return context
    }

    @Test("the card's identity is found in the token access group with its token ID; its key signs on the card with the context's PIN; the certificate verifies the signature")
    func identity() throws {
        var result: CFTypeRef?
        let query: [String: Any] = [
            kSecClass as String: kSecClassIdentity, kSecAttrAccessGroup as String: kSecAttrAccessGroupToken, kSecReturnRef as String: true,
            kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
            kSecUseAuthenticationContext as String: context(token.pin),
        ]
        #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
        let found = try #require((result as? [[String: Any]])?.first { $0[kSecAttrTokenID as String] as? String == tokenID })
        #expect(found[kSecAttrLabel as String] as? String == "card-key")
        let identity = found[kSecValueRef as String] as! SecIdentity
        var privateKey: SecKey?
        var certificate: SecCertificate?
        #expect(SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess)
        #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
        let message = Data("signed on the card".utf8) as CFData
        var error: Unmanaged<CFError>?
        let key = try #require(privateKey)
        let signature = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message, &error))
        let cardCertificate = try #require(certificate)
        let publicKey = try #require(SecCertificateCopyKey(cardCertificate))
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, &error))
        #expect(SecKeyCopyExternalRepresentation(key, &error) == nil)
        #expect(CFErrorGetCode(error!.takeRetainedValue()) == Int(errSecUnimplemented))
    }

    @Test("keys by token ID: the private one signs only with the PIN (none: errSecInteractionNotAllowed; a wrong one: errSecAuthFailed); the public one is data")
    func keys() throws {
        func privateKey(_ context: LAContext?) throws -> SecKey {
            var query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrTokenID as String: tokenID, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecReturnRef as String: true,
            ]
            if let context { query[kSecUseAuthenticationContext as String] = context }
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            return result as! SecKey
        }
        let message = Data("pin".utf8) as CFData
        for (context, status) in [(nil, errSecInteractionNotAllowed), (self.context("000000"), errSecAuthFailed)] {
            var error: Unmanaged<CFError>?
            #expect(SecKeyCreateSignature(try privateKey(context), .ecdsaSignatureMessageX962SHA256, message, &error) == nil)
            #expect(CFErrorGetCode(error!.takeRetainedValue()) == Int(status))
        }
        #expect(SecKeyCreateSignature(try privateKey(context(token.pin)), .ecdsaSignatureMessageX962SHA256, message, nil) != nil)
        // The card keeps its key: the keychain takes no copy of it.
        #expect(SecItemAdd([kSecClass as String: kSecClassKey, kSecValueRef as String: try privateKey(nil)] as CFDictionary, nil) == errSecParam)
        var publicData: CFTypeRef?
        let publicQuery: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrTokenID as String: tokenID, kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
            kSecReturnData as String: true,
        ]
        #expect(SecItemCopyMatching(publicQuery as CFDictionary, &publicData) == errSecSuccess)
        #expect((publicData as? Data)?.count == 65)
        var none: CFTypeRef?
        let unknown: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrTokenID as String: "pkcs11:serial=none", kSecReturnRef as String: true]
        #expect(SecItemCopyMatching(unknown as CFDictionary, &none) == errSecItemNotFound)
    }

    @Test("SecKeyCreateRandomKey with the token's ID makes a P-256 key on the card (pkcs11-tool lists it) that signs; without the PIN: errSecInteractionNotAllowed")
    func generation() throws {
        let parameters: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256, kSecAttrTokenID as String: tokenID,
            kSecPrivateKeyAttrs as String: [kSecAttrLabel as String: "made-by-apple-api"], kSecUseAuthenticationContext as String: context(token.pin),
        ]
        var error: Unmanaged<CFError>?
        let key = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, &error))
        #expect(String(decoding: try token.tool(["--list-objects", "--type", "privkey"]), as: UTF8.self).contains("made-by-apple-api"))
        let message = Data("made on the card".utf8) as CFData
        let signature = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message, &error))
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, &error))
        var withoutPIN = parameters
        withoutPIN[kSecUseAuthenticationContext as String] = nil
        #expect(SecKeyCreateRandomKey(withoutPIN as CFDictionary, &error) == nil)
        #expect(CFErrorGetCode(error!.takeRetainedValue()) == Int(errSecInteractionNotAllowed))
    }

    @Test("SecKeyCreateRandomKey with the token's ID makes an RSA-2048 key on the card: it signs PKCS#1 v1.5 and PSS there (openssl verifies with the exported public key) and decrypts OAEP; 1024 bits: errSecParam")
    func rsaGeneration() throws {
        var parameters: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 2048, kSecAttrTokenID as String: tokenID,
            kSecPrivateKeyAttrs as String: [kSecAttrLabel as String: "rsa-by-apple-api"], kSecUseAuthenticationContext as String: context(token.pin),
        ]
        var error: Unmanaged<CFError>?
        let key = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, &error))
        #expect(String(decoding: try token.tool(["--list-objects", "--type", "privkey"]), as: UTF8.self).contains("rsa-by-apple-api"))
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        let exported = try #require(SecKeyCopyExternalRepresentation(publicKey, &error)) as Data
        let directory = try TemporaryDirectory("token-rsa")
        try exported.write(to: directory.url.appendingPathComponent("pub.der"))
        let message = Data("signed on the card with RSA".utf8)
        try message.write(to: directory.url.appendingPathComponent("msg"))
        for (algorithm, options) in [
            (SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256, [String]()),
            (.rsaSignatureMessagePSSSHA256, ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]),
        ] {
            let signature = try #require(SecKeyCreateSignature(key, algorithm, message as CFData, &error)) as Data
            try signature.write(to: directory.url.appendingPathComponent("sig"))
            let verified = try OpenSSLCLI.run(
                ["dgst", "-sha256", "-keyform", "DER", "-verify", "pub.der"] + options + ["-signature", "sig", "msg"], in: directory.url)
            #expect(verified.text.contains("Verified OK"), "\(algorithm.rawValue): \(verified.stderr)")
        }
        let secret = Data("a content key".utf8) as CFData
        let sealed = try #require(SecKeyCreateEncryptedData(publicKey, .rsaEncryptionOAEPSHA1, secret, &error))
        #expect(SecKeyCreateDecryptedData(key, .rsaEncryptionOAEPSHA1, sealed, &error) as Data? == secret as Data)
        parameters[kSecAttrKeySizeInBits as String] = 1024
        #expect(SecKeyCreateRandomKey(parameters as CFDictionary, &error) == nil)
        #expect(CFErrorGetCode(error!.takeRetainedValue()) == Int(errSecParam))
    }
}
