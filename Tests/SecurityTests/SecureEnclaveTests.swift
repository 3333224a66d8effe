import Certificates
import Foundation
import HardwareKeys
import Security
import Testing
import TestVectors

/// Apple's Secure Enclave snippet, unchanged, against a software TPM standing in for the enclave.
@Suite("Security: kSecAttrTokenIDSecureEnclave keys held in a TPM (swtpm)", .serialized, .hardwareExclusive, .isolatedKeychain(["com.example.app"]))
struct SecureEnclaveTests {
    let swtpm: SoftwareTPM

    init() throws {
        swtpm = try SoftwareTPM()
        TrustedPlatformModule.shared = TrustedPlatformModule(configuration: swtpm.configuration)
    }

    /// As Apple's "Protecting keys with the Secure Enclave" writes it.
    static func makeEnclaveKey(tag: Data, permanent: Bool = true) throws -> SecKey {
        let access = try #require(SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .privateKeyUsage, nil))
        let attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeySizeInBits as String: 256,
            kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
            kSecPrivateKeyAttrs as String: [
                kSecAttrIsPermanent as String: permanent,
                kSecAttrApplicationTag as String: tag,
                kSecAttrAccessControl as String: access,
            ],
        ]
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as any Error
        }
        return key
    }

    @Test("an enclave key signs and verifies and agrees by ECDH; its private key does not export (errSecUnimplemented)")
    func useKey() throws {
        let privateKey = try Self.makeEnclaveKey(tag: Data("com.example.keys.signing".utf8), permanent: false)
        let publicKey = try #require(SecKeyCopyPublicKey(privateKey))
        let message = Data("hello from the enclave".utf8) as CFData
        var error: Unmanaged<CFError>?
        let signature = try #require(SecKeyCreateSignature(privateKey, .ecdsaSignatureMessageX962SHA256, message, &error))
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, &error))
        // Key exchange and ECIES, against a software key.
        let peer = try #require(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary, nil))
        let peerPublic = try #require(SecKeyCopyPublicKey(peer))
        let ours = try #require(SecKeyCopyKeyExchangeResult(privateKey, .ecdhKeyExchangeStandard, peerPublic, [:] as CFDictionary, &error))
        let theirs = try #require(SecKeyCopyKeyExchangeResult(peer, .ecdhKeyExchangeStandard, publicKey, [:] as CFDictionary, &error))
        #expect(ours as Data == theirs as Data)
        #expect(SecKeyCopyExternalRepresentation(privateKey, &error) == nil)
        #expect(CFErrorGetCode(error!.takeRetainedValue()) == Int(errSecUnimplemented))
        #expect(SecKeyCopyExternalRepresentation(publicKey, nil) != nil)
    }

    @Test("a permanent enclave key is a keychain item with kSecAttrTokenID, whose data is the TPM's blob, not the key; found again, it signs")
    func permanentKey() throws {
        let tag = Data("com.example.keys.permanent".utf8)
        let created = try Self.makeEnclaveKey(tag: tag)
        let publicKey = try #require(SecKeyCopyPublicKey(created))
        var result: CFTypeRef?
        let query: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
            kSecReturnRef as String: true, kSecReturnAttributes as String: true, kSecReturnData as String: true,
        ]
        #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
        let item = try #require(result as? [String: Any])
        #expect(item[kSecAttrTokenID as String] as? String == kSecAttrTokenIDSecureEnclave as String)
        let data = try #require(item[kSecValueData as String] as? Data)
        #expect(throws: (any Error).self) { _ = try AsymmetricKeyCheck.privateKey(data) }
        let found = item[kSecValueRef as String] as! SecKey
        let message = Data("found again".utf8) as CFData
        let signature = try #require(SecKeyCreateSignature(found, .ecdsaSignatureMessageX962SHA256, message, nil))
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, nil))
    }

    @Test("an identity whose private key is in the enclave: its certificate added beside the key pairs into a SecIdentity whose key signs in the TPM")
    func identity() throws {
        let tag = Data("com.example.keys.identity".utf8)
        _ = try Self.makeEnclaveKey(tag: tag)
        var result: CFTypeRef?
        let query: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
            kSecReturnData as String: true,
        ]
        #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
        // The blob stands for the key: a certificate request signed in the TPM, issued by a CA.
        let key = try TPMKey(blob: try #require(result as? Data))
        let request = try CertificateSigningRequest(subject: [.init("CN", "enclave.example")], privateKey: try key.privateKey())
        let ca = try OpenSSLCA("enclave")
        try ca.issue("root", subject: "/CN=Enclave Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
        try ca.issue("leaf", request: request.pemEncoded, issuer: "root", extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:enclave.example"))
        let certificate = try #require(SecCertificateCreateWithData(nil, try ca.der("leaf") as CFData))
        #expect(SecItemAdd([kSecClass as String: kSecClassCertificate, kSecValueRef as String: certificate] as CFDictionary, nil) == errSecSuccess)
        var found: CFTypeRef?
        let identities: [String: Any] = [kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll]
        #expect(SecItemCopyMatching(identities as CFDictionary, &found) == errSecSuccess)
        let identity = try #require((found as? [SecIdentity])?.first)
        var privateKey: SecKey?
        #expect(SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess)
        let message = Data("an identity in the enclave".utf8) as CFData
        let identityKey = try #require(privateKey)
        let signature = try #require(SecKeyCreateSignature(identityKey, .ecdsaSignatureMessageX962SHA256, message, nil))
        let publicKey = try #require(SecCertificateCopyKey(certificate))
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, nil))
    }

    @Test("without a TPM: errSecUnimplemented, saying so; an RSA or P-384 enclave key and an unknown token: errSecParam")
    func refusals() throws {
        let saved = TrustedPlatformModule.shared
        defer { TrustedPlatformModule.shared = saved }
        TrustedPlatformModule.shared = TrustedPlatformModule(configuration: "device:/dev/tpmrm-absent")
        var error: Unmanaged<CFError>?
        let attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
            kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
        ]
        #expect(SecKeyCreateRandomKey(attributes as CFDictionary, &error) == nil)
        let failure = error!.takeRetainedValue()
        #expect(CFErrorGetCode(failure) == Int(errSecUnimplemented))
        #expect((failure as any Error).localizedDescription.contains("no TPM here"))
        TrustedPlatformModule.shared = saved
        for (key, value) in [(kSecAttrKeySizeInBits as String, 384 as Any), (kSecAttrKeyType as String, kSecAttrKeyTypeRSA as Any), (kSecAttrTokenID as String, "com.example.token" as Any)] {
            var changed = attributes
            changed[key] = value
            #expect(SecKeyCreateRandomKey(changed as CFDictionary, &error) == nil)
            #expect(CFErrorGetCode(error!.takeRetainedValue()) == Int(errSecParam), "\(key)")
        }
    }
}

/// Whether bytes decode as an EC private key (the keychain item of an enclave key must not hold one).
enum AsymmetricKeyCheck {
    static func privateKey(_ data: Data) throws -> SecKey {
        var error: Unmanaged<CFError>?
        let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate]
        guard let key = SecKeyCreateWithData(data as CFData, attributes as CFDictionary, &error) else { throw error!.takeRetainedValue() as any Error }
        return key
    }
}
