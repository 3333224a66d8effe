import Foundation
import Security
import TestVectors
import Testing

/// The iOS listings of Apple's "Certificate, Key, and Trust Services Programming Guide" (chapter "Certificate,
/// Key, and Trust Services Tasks for iOS"), rewritten in Swift against the `Security` module as an Apple client
/// would write them. The trust listings (2-1's trust half, 2-6, 2-7) are in GuideTrustListingTests.swift.
@Suite("The programming guide's iOS listings", .isolatedKeychain(["com.example.guide"]))
struct GuideListingTests {
    /// A PKCS#12 file as a server would hand one out: an RSA identity under a CA, made by the openssl CLI.
    static func pkcs12Data(password: String, commonName: String) throws -> Data {
        let directory = try TemporaryDirectory("guide")
        func openssl(_ arguments: [String]) throws { try OpenSSLCLI.require(arguments, in: directory.url) }
        try openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-subj",
            "/CN=Guide CA", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
        ])
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "id.key", "-out", "id.csr", "-subj", "/CN=\(commonName)"])
        try openssl([
            "x509", "-req", "-in", "id.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "id.pem",
            "-days", "30",
        ])
        try openssl([
            "pkcs12", "-export", "-in", "id.pem", "-inkey", "id.key", "-certfile", "ca.pem", "-out", "id.p12",
            "-passout", "pass:\(password)",
        ])
        return try directory.read("id.p12")
    }

    /// Listing 2-1, "Extracting identity and trust objects from PKCS #12 data" (the trust half is evaluated by
    /// `GuideTrustListingTests`).
    static func extractIdentityAndTrust(
        _ inPKCS12Data: CFData, _ outIdentity: inout SecIdentity?, _ outTrust: inout SecTrust?
    ) -> OSStatus {
        let optionsDictionary = [kSecImportExportPassphrase as String: "password"] as CFDictionary
        var items: CFArray?
        let securityError = SecPKCS12Import(inPKCS12Data, optionsDictionary, &items)
        if securityError == errSecSuccess, let items = items as? [[String: Any]], let myIdentityAndTrust = items.first {
            // !: the documented types of both entries
            outIdentity = (myIdentityAndTrust[kSecImportItemIdentity as String] as! SecIdentity)
            outTrust = (myIdentityAndTrust[kSecImportItemTrust as String] as! SecTrust)
        }
        return securityError
    }

    /// The identity half of listing 2-1.
    func extractIdentity(_ inPKCS12Data: CFData, _ outIdentity: inout SecIdentity?) -> OSStatus {
        var trust: SecTrust?
        return Self.extractIdentityAndTrust(inPKCS12Data, &outIdentity, &trust)
    }

    @Test("Listings 2-1 to 2-4: import, display the certificate, persistent reference, identity back by reference")
    func identityListings() throws {
        let data = try Self.pkcs12Data(password: "password", commonName: "Guide Example User") as CFData
        var identity: SecIdentity?
        #expect(extractIdentity(data, &identity) == errSecSuccess)
        let myIdentity = try #require(identity)

        // Listing 2-2: displaying information from the certificate.
        var myReturnedCertificate: SecCertificate?
        var status = SecIdentityCopyCertificate(myIdentity, &myReturnedCertificate)
        #expect(status == errSecSuccess)
        let certSummary = SecCertificateCopySubjectSummary(try #require(myReturnedCertificate))
        #expect(certSummary as String? == "Guide Example User")

        // Listing 2-3: getting a persistent reference for an identity.
        var persistentRef: CFTypeRef?
        status = SecItemAdd(
            [kSecReturnPersistentRef as String: kCFBooleanTrue!, kSecValueRef as String: myIdentity] as CFDictionary,
            &persistentRef)
        #expect(status == errSecSuccess)
        let reference = try #require(persistentRef as? Data)

        // Listing 2-4: getting an identity using a persistent reference.
        var identityRef: CFTypeRef?
        status = SecItemCopyMatching(
            [
                kSecClass as String: kSecClassIdentity, kSecReturnRef as String: kCFBooleanTrue!,
                kSecValuePersistentRef as String: reference,
            ] as CFDictionary, &identityRef)
        #expect(status == errSecSuccess)
        let found = try #require(identityRef as? SecIdentity)
        var foundCertificate: SecCertificate?
        #expect(SecIdentityCopyCertificate(found, &foundCertificate) == errSecSuccess)
        #expect(foundCertificate.map { SecCertificateCopyData($0) as Data } == SecCertificateCopyData(myReturnedCertificate!) as Data)
        // The private key comes back too, and it is the imported one: it signs what the certificate's key verifies.
        var privateKey: SecKey?
        #expect(SecIdentityCopyPrivateKey(found, &privateKey) == errSecSuccess)
        let message = Data("guide".utf8) as CFData
        let signature = try #require(
            SecKeyCreateSignature(privateKey!, .rsaSignatureMessagePKCS1v15SHA256, message, nil))
        let publicKey = try #require(SecCertificateCopyKey(foundCertificate!))
        #expect(SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA256, message, signature, nil))

        // A wrong passphrase: errSecAuthFailed, and nothing extracted.
        var items: CFArray?
        #expect(
            SecPKCS12Import(data, [kSecImportExportPassphrase as String: "wrong"] as CFDictionary, &items)
                == errSecAuthFailed)
        #expect(items == nil)
    }

    @Test("Listing 2-5: finding a certificate in the keychain by its label")
    func findCertificate() throws {
        let data = try Self.pkcs12Data(password: "password", commonName: "Listing Five") as CFData
        var identity: SecIdentity?
        #expect(extractIdentity(data, &identity) == errSecSuccess)
        var certificate: SecCertificate?
        #expect(SecIdentityCopyCertificate(identity!, &certificate) == errSecSuccess)
        #expect(SecItemAdd([kSecValueRef as String: certificate!] as CFDictionary, nil) == errSecSuccess)

        let certLabelString = "Listing Five" as CFString
        let query: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: certLabelString,
            kSecReturnRef as String: kCFBooleanTrue!,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        #expect(status == errSecSuccess)
        let found = try #require(item as? SecCertificate)
        #expect(SecCertificateCopyData(found) as Data == SecCertificateCopyData(certificate!) as Data)
        var missing: CFTypeRef?
        #expect(
            SecItemCopyMatching(
                [kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "Nobody", kSecReturnRef as String: true]
                    as CFDictionary, &missing) == errSecItemNotFound)
    }

    static let publicKeyIdentifier = Data("com.apple.sample.publickey".utf8)
    static let privateKeyIdentifier = Data("com.apple.sample.privatekey".utf8)

    /// Listing 2-8, "Generating a key pair".
    func generateKeyPairPlease() -> OSStatus {
        let privateKeyAttr: [String: Any] = [
            kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: Self.privateKeyIdentifier,
        ]
        let publicKeyAttr: [String: Any] = [
            kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: Self.publicKeyIdentifier,
        ]
        let keyPairAttr: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 1024,
            kSecPrivateKeyAttrs as String: privateKeyAttr, kSecPublicKeyAttrs as String: publicKeyAttr,
        ]
        var publicKey: SecKey?
        var privateKey: SecKey?
        return SecKeyGeneratePair(keyPairAttr as CFDictionary, &publicKey, &privateKey)
    }

    /// Finds a permanent key by its application tag (the query listings 2-9 and 2-10 open with).
    func key(tagged tag: Data) -> SecKey? {
        let queryKey: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecReturnRef as String: true,
        ]
        var keyRef: CFTypeRef?
        guard SecItemCopyMatching(queryKey as CFDictionary, &keyRef) == errSecSuccess else { return nil }
        return keyRef as! SecKey?  // !: kSecReturnRef on kSecClassKey returns a SecKey
    }

    @Test("Listings 2-8 to 2-10: generate a permanent pair, encrypt with the public key found by tag, decrypt with the private one")
    func keyListings() throws {
        #expect(generateKeyPairPlease() == errSecSuccess)

        // Listing 2-9: encrypting data with a public key.
        let dataToEncrypt = Array("the quick brown fox jumps over the lazy dog\0".utf8)
        let publicKey = try #require(key(tagged: Self.publicKeyIdentifier))
        var cipherBufferSize = SecKeyGetBlockSize(publicKey)
        #expect(cipherBufferSize == 128)
        var cipherBuffer = [UInt8](repeating: 0, count: cipherBufferSize)
        #expect(cipherBufferSize - 11 >= dataToEncrypt.count)  // PKCS#1's limit, as the listing checks
        var status = SecKeyEncrypt(
            publicKey, kSecPaddingPKCS1, dataToEncrypt, dataToEncrypt.count, &cipherBuffer, &cipherBufferSize)
        #expect(status == errSecSuccess)
        #expect(cipherBufferSize == 128)

        // Listing 2-10: decrypting with a private key.
        let privateKey = try #require(key(tagged: Self.privateKeyIdentifier))
        var plainBufferSize = SecKeyGetBlockSize(privateKey)
        var plainBuffer = [UInt8](repeating: 0, count: plainBufferSize)
        status = SecKeyDecrypt(privateKey, kSecPaddingPKCS1, cipherBuffer, cipherBufferSize, &plainBuffer, &plainBufferSize)
        #expect(status == errSecSuccess)
        #expect(Array(plainBuffer.prefix(plainBufferSize)) == dataToEncrypt)

        // The listings' failure paths: a buffer too small, and a ciphertext changed in flight.
        var small = 16
        var tiny = [UInt8](repeating: 0, count: small)
        #expect(SecKeyDecrypt(privateKey, kSecPaddingPKCS1, cipherBuffer, cipherBufferSize, &tiny, &small) == errSecParam)
        cipherBuffer[5] ^= 0xFF
        plainBufferSize = plainBuffer.count
        #expect(
            SecKeyDecrypt(privateKey, kSecPaddingPKCS1, cipherBuffer, cipherBufferSize, &plainBuffer, &plainBufferSize)
                != errSecSuccess)
        // And a second generation with the same tags adds a second pair, as on iOS (keys are unique by their
        // application label, which differs).
        #expect(generateKeyPairPlease() == errSecSuccess)
    }
}
