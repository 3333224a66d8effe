import Certificates
import Foundation
import Keychain
import Security
import TestVectors
import Testing

/// Runs the `openssl` CLI in `directory`; its status must be 0.
private func openssl(_ arguments: [String], in directory: URL) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    process.currentDirectoryURL = directory
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw PKCS12Error(.malformed, "openssl \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
}

/// PKCS#12 import and identities, as an Apple client uses them; each test has a default keychain of its own.
@Suite("PKCS#12 and identities", .isolatedKeychain(["com.example.p12"]))
struct PKCS12Tests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("p12-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// A CA, a leaf signed by it with its key, bundled (modern: AES-256 + PBKDF2; legacy: RC2/3DES + SHA-1 MAC).
    func makeBundle(legacy: Bool, name: String = "Alice Example", password: String = "s3cret") throws -> Data {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Test CA", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE"], in: directory)
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=\(name)"], in: directory)
        try openssl(["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "30"], in: directory)
        var arguments = ["pkcs12", "-export", "-in", "leaf.pem", "-inkey", "leaf.key", "-certfile", "ca.pem", "-name", "alice", "-out", "bundle.p12", "-passout", "pass:\(password)"]
        if legacy { arguments += ["-legacy"] } else { arguments += ["-keypbe", "AES-256-CBC", "-certpbe", "AES-256-CBC", "-macalg", "sha256"] }
        try openssl(arguments, in: directory)
        return try Data(contentsOf: directory.appendingPathComponent("bundle.p12"))
    }

    func importItems(_ data: Data, _ passphrase: String) -> (OSStatus, [[String: Any]]) {
        var items: CFArray?
        let status = SecPKCS12Import(data as CFData, [kSecImportExportPassphrase as String: passphrase] as CFDictionary, &items)
        return (status, items as? [[String: Any]] ?? [])
    }

    @Test("modern and legacy files import with identity, chain, label and key ID; the key matches the certificate", arguments: [false, true])
    func importBundle(legacy: Bool) throws {
        let (status, items) = importItems(try makeBundle(legacy: legacy), "s3cret")
        #expect(status == errSecSuccess)
        #expect(items.count == 1)
        let item = try #require(items.first)
        let identity = try #require(item[kSecImportItemIdentity as String] as? SecIdentity)
        let chain = try #require(item[kSecImportItemCertChain as String] as? [SecCertificate])
        #expect(chain.count == 2)
        #expect(item[kSecImportItemLabel as String] as? String == "alice")
        #expect((item[kSecImportItemKeyID as String] as? Data)?.count == 20)
        var certificate: SecCertificate?
        var privateKey: SecKey?
        #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
        #expect(SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess)
        let leaf = try #require(certificate), key = try #require(privateKey)
        #expect(SecCertificateCopySubjectSummary(leaf) as String? == "Alice Example")
        #expect(SecCertificateCopyData(chain[0]) as Data == SecCertificateCopyData(leaf) as Data)
        #expect(SecCertificateCopySubjectSummary(chain[1]) as String? == "Test CA")
        // Signed with the imported private key, verified with the certificate's public key.
        let message = Data("signed by the imported key".utf8)
        var error: Unmanaged<CFError>?
        let signature = try #require(SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, message as CFData, &error))
        let publicKey = try #require(SecCertificateCopyKey(leaf))
        #expect(SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA256, message as CFData, signature, &error))
    }

    @Test("a wrong passphrase is errSecAuthFailed; malformed bytes are errSecDecode; nothing is returned")
    func failures() throws {
        let bundle = try makeBundle(legacy: false)
        let wrong = importItems(bundle, "not it")
        #expect(wrong.0 == errSecAuthFailed && wrong.1.isEmpty)
        #expect(importItems(Data(bundle.prefix(bundle.count / 2)), "s3cret").0 == errSecDecode)
        #expect(importItems(Data("not a pkcs12 file".utf8), "s3cret").0 == errSecDecode)
        #expect(importItems(Data(), "").0 == errSecDecode)
        #expect(importItems(bundle + Data([0]), "s3cret").0 == errSecDecode)
        var items: CFArray?
        #expect(SecPKCS12Import(bundle as CFData, [kSecImportExportPassphrase as String: 42] as CFDictionary, &items) == errSecParam)
        #expect(items == nil)
    }

    @Test("the pinned vector files: every pyca PKCS#12 file with its password imports, or fails as it should")
    func vectorFiles() throws {
        guard let vectors = CertificateFixtures.vectors?.appendingPathComponent("pkcs12") else {
            Issue.record("SECURITYSERVICES_VECTORS is not set (make test sets it)")
            return
        }
        // pyca's passwords (checked with `openssl pkcs12 -legacy -noout -passin`): "cryptography" for the
        // cert-key files, "password" for the name-* files.
        for (name, password) in [
            ("cert-key-aes256cbc.p12", "cryptography"), ("cert-rc2-key-3des.p12", "cryptography"), ("name-1-pwd.p12", "password"),
            ("name-all-pwd.p12", "password"), ("name-unicode-pwd.p12", "password"),
        ] {
            let data = try Data(contentsOf: vectors.appendingPathComponent(name))
            let (status, items) = importItems(data, password)
            #expect(status == errSecSuccess, "\(name)")
            #expect(items.first?[kSecImportItemIdentity as String] is SecIdentity, "\(name)")
            #expect(importItems(data, "wrong").0 == errSecAuthFailed, "\(name)")
        }
        for name in ["name-1-no-pwd.p12", "cert-none-key-none.p12"] {
            let (status, items) = importItems(try Data(contentsOf: vectors.appendingPathComponent(name)), name.contains("no-pwd") ? "" : "cryptography")
            #expect(status == errSecSuccess, "\(name)")
            #expect(items.count == 1, "\(name)")
        }
        // A file with a key but no certificate holds no identity.
        let (status, items) = importItems(try Data(contentsOf: vectors.appendingPathComponent("no-cert-key-aes256cbc.p12")), "cryptography")
        #expect(status == errSecSuccess && items.isEmpty)
    }

    @Test("an identity added with SecItemAdd stores both halves, comes back as a SecIdentity, and deletes both")
    func identityInKeychain() throws {
        let (_, items) = importItems(try makeBundle(legacy: false), "s3cret")
        let identity = try #require(items.first?[kSecImportItemIdentity as String] as? SecIdentity)
        #expect(SecItemAdd([kSecValueRef as String: identity, kSecAttrLabel as String: "Alice's identity"] as CFDictionary, nil) == errSecSuccess)
        #expect(SecItemAdd([kSecValueRef as String: identity] as CFDictionary, nil) == errSecDuplicateItem)
        var result: CFTypeRef?
        let query: [String: Any] = [kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll]
        #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
        let found = try #require((result as? [SecIdentity])?.first)
        var certificate: SecCertificate?
        #expect(SecIdentityCopyCertificate(found, &certificate) == errSecSuccess)
        #expect(SecCertificateCopySubjectSummary(try #require(certificate)) as String? == "Alice Example")
        // Both halves are there as items of their own.
        #expect(SecItemCopyMatching([kSecClass as String: kSecClassCertificate] as CFDictionary, &result) == errSecSuccess)
        #expect(SecItemCopyMatching([kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate] as CFDictionary, &result) == errSecSuccess)
        // By persistent reference, then deleted as one.
        #expect(SecItemCopyMatching([kSecClass as String: kSecClassIdentity, kSecReturnPersistentRef as String: true] as CFDictionary, &result) == errSecSuccess)
        let reference = try #require(result as? Data)
        #expect(SecItemCopyMatching([kSecValuePersistentRef as String: reference, kSecReturnRef as String: true] as CFDictionary, &result) == errSecSuccess)
        #expect(result is SecIdentity)
        #expect(SecItemDelete([kSecClass as String: kSecClassIdentity] as CFDictionary) == errSecSuccess)
        #expect(SecItemCopyMatching([kSecClass as String: kSecClassCertificate] as CFDictionary, &result) == errSecItemNotFound)
        #expect(SecItemCopyMatching([kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate] as CFDictionary, &result) == errSecItemNotFound)
    }
}
