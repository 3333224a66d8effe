import Foundation
import Keychain
import Security
import TestVectors
import Testing

/// Keys in the keychain as an Apple-platform client stores them: permanent generation, kSecValueRef, lookups by
/// tag, kSecReturnRef. Each test gets a default keychain of its own (`.isolatedKeychain`).
@Suite("Keys: keychain", .isolatedKeychain(["com.example.keys"]))
struct KeyKeychainTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("seckey-\(UUID().uuidString)")
    }

    @Test("the guide's flow: generate a permanent RSA key with a tag, find it by tag and type, and sign with it")
    func permanentKeyByTag() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let tag = Data("com.example.keys.signing".utf8)
        let attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
            kSecAttrKeySizeInBits as String: 2048,
            kSecPrivateKeyAttrs as String: [
                kSecAttrIsPermanent as String: true,
                kSecAttrApplicationTag as String: tag,
                kSecAttrLabel as String: "signing key",
            ],
        ]
        var error: Unmanaged<CFError>?
        let privateKey = try #require(SecKeyCreateRandomKey(attributes as CFDictionary, &error))
        let publicKey = try #require(SecKeyCopyPublicKey(privateKey))

        let query: [String: Any] = [
            kSecClass as String: kSecClassKey,
            kSecAttrApplicationTag as String: tag,
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
            kSecReturnRef as String: true,
        ]
        var item: CFTypeRef?
        #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
        let found = try #require(item as? SecKey)
        let message = Data("sign me".utf8) as CFData
        let signature = try #require(SecKeyCreateSignature(found, .rsaSignatureMessagePKCS1v15SHA256, message, &error))
        #expect(SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA256, message, signature, &error))
        if IsolatedKeychain.serviceMode {
            // The keychain service generated and holds the key: it signed above, and neither the key returned nor
            // the one found comes out (Apple's status for a key bound to a token); its public half is the generated key's.
            #expect(SecKeyCopyExternalRepresentation(privateKey, nil) == nil)
            var exportError: Unmanaged<CFError>?
            #expect(SecKeyCopyExternalRepresentation(found, &exportError) == nil)
            #expect((exportError?.takeRetainedValue() as NSError?)?.code == Int(errSecUnimplemented))
            #expect(SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(found)!, nil) as Data? == SecKeyCopyExternalRepresentation(publicKey, nil) as Data?)
            var dataResult: CFTypeRef?
            var dataQuery = query
            dataQuery[kSecReturnRef as String] = nil
            dataQuery[kSecReturnData as String] = true
            #expect(SecItemCopyMatching(dataQuery as CFDictionary, &dataResult) == errSecSuccess)
            #expect(dataResult as? Data == SecKeyCopyExternalRepresentation(publicKey, nil) as Data?, "a held key's data is its public key's")
        } else {
            #expect(SecKeyCopyExternalRepresentation(found, nil) as Data? == SecKeyCopyExternalRepresentation(privateKey, nil) as Data?)
        }

        // The stored attributes are Apple's derived ones.
        var attributesResult: CFTypeRef?
        var attributesQuery = query
        attributesQuery[kSecReturnRef as String] = nil
        attributesQuery[kSecReturnAttributes as String] = true
        #expect(SecItemCopyMatching(attributesQuery as CFDictionary, &attributesResult) == errSecSuccess)
        let stored = try #require(attributesResult as? [String: Any])
        #expect((stored[kSecAttrKeyClass as String] as? NSNumber)?.intValue == 1)
        #expect((stored[kSecAttrKeyType as String] as? NSNumber)?.intValue == 42)
        #expect((stored[kSecAttrKeySizeInBits as String] as? NSNumber)?.intValue == 2048)
        #expect((stored[kSecAttrEffectiveKeySize as String] as? NSNumber)?.intValue == 2048)
        #expect((stored[kSecAttrCanSign as String] as? NSNumber)?.boolValue == true)
        #expect((stored[kSecAttrCanVerify as String] as? NSNumber)?.boolValue == false)
        #expect((stored[kSecAttrIsPermanent as String] as? NSNumber)?.boolValue == true)
        #expect(stored[kSecAttrLabel as String] as? String == "signing key")
        #expect(stored[kSecAttrApplicationTag as String] as? Data == tag)
        let label = try #require(stored[kSecAttrApplicationLabel as String] as? Data)
        #expect(label == (SecKeyCopyAttributes(publicKey) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        #expect(label.count == 20)

        // Another tag finds nothing; a non-permanent key is not stored.
        var missing = query
        missing[kSecAttrApplicationTag as String] = Data("other".utf8)
        #expect(SecItemCopyMatching(missing as CFDictionary, &item) == errSecItemNotFound)
        let transient: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits as String: 256]
        #expect(SecKeyCreateRandomKey(transient as CFDictionary, &error) != nil)
        var all: CFTypeRef?
        let every: [String: Any] = [kSecClass as String: kSecClassKey, kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true]
        #expect(SecItemCopyMatching(every as CFDictionary, &all) == errSecSuccess)
        #expect((all as? [Any])?.count == 1)
    }

    @Test("kSecValueRef: a key added by reference, found by reference, a duplicate refused, deleted by reference")
    func valueRef() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 384]
        let privateKey = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, nil))
        let publicKey = try #require(SecKeyCopyPublicKey(privateKey))
        for key in [privateKey, publicKey] {
            let add: [String: Any] = [kSecClass as String: kSecClassKey, kSecValueRef as String: key, kSecAttrApplicationTag as String: Data("ec".utf8)]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecDuplicateItem)
        }
        // Private and public are two items with one application label; the class tells them apart.
        var result: CFTypeRef?
        let byClass: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
            kSecAttrApplicationTag as String: Data("ec".utf8), kSecReturnRef as String: true,
        ]
        #expect(SecItemCopyMatching(byClass as CFDictionary, &result) == errSecSuccess)
        let foundPublic = try #require(result as? SecKey)
        #expect(SecKeyCopyExternalRepresentation(foundPublic, nil) as Data? == SecKeyCopyExternalRepresentation(publicKey, nil) as Data?)
        #expect((SecKeyCopyAttributes(foundPublic) as? [String: Any])?[kSecAttrKeyClass as String] as? String == "0")

        let byRef: [String: Any] = [kSecValueRef as String: privateKey, kSecReturnRef as String: true]
        #expect(SecItemCopyMatching(byRef as CFDictionary, &result) == errSecSuccess)
        let foundPrivate = try #require(result as? SecKey)
        let message = Data("by reference".utf8) as CFData
        var error: Unmanaged<CFError>?
        let signature = try #require(SecKeyCreateSignature(foundPrivate, .ecdsaSignatureMessageX962SHA256, message, &error))
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, &error))

        #expect(SecItemDelete([kSecValueRef as String: privateKey] as CFDictionary) == errSecSuccess)
        #expect(SecItemCopyMatching([kSecValueRef as String: privateKey] as CFDictionary, nil) == errSecItemNotFound)
        #expect(SecItemCopyMatching([kSecValueRef as String: publicKey] as CFDictionary, nil) == errSecSuccess)
    }

    @Test("SecKeyGeneratePair with a top-level kSecAttrIsPermanent stores both halves under the tag")
    func permanentPair() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let parameters: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: "1024",
            kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: Data("pair".utf8),
        ]
        var publicKey: SecKey?, privateKey: SecKey?
        #expect(SecKeyGeneratePair(parameters as CFDictionary, &publicKey, &privateKey) == errSecSuccess)
        var all: CFTypeRef?
        let query: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("pair".utf8),
            kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
        ]
        #expect(SecItemCopyMatching(query as CFDictionary, &all) == errSecSuccess)
        let classes = ((all as? [[String: Any]]) ?? []).compactMap { ($0[kSecAttrKeyClass as String] as? NSNumber)?.intValue }.sorted()
        #expect(classes == [0, 1])
        // A second pair with the same tag is a different key (different application label): it is stored too.
        #expect(SecKeyGeneratePair(parameters as CFDictionary, &publicKey, &privateKey) == errSecSuccess)
    }
}
