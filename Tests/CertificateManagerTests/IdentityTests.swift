import CertificateManager
import Certificates
import Foundation
import HardwareKeys
import Keychain
import TestVectors
import Testing

@Suite("Client identity", .timeLimit(.minutes(1)))  // an event that never comes fails instead of hanging
struct IdentityTests {
    /// A client leaf (clientAuth) under a root, valid until 2030-01-01.
    static func world() throws -> ManagerWorld {
        let world = try ManagerWorld()
        try world.root()
        try world.ca.issue(
            "client", subject: "/CN=alice.client", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(
                subjectAltName: "email:alice@example.com", extendedKeyUsage: "clientAuth"),
            notAfter: "20300101000000Z")
        return world
    }

    @Test("PKCS#12 with the right password: provisioned with its chain, the key pairs, deleted with its key")
    func pkcs12Lifecycle() async throws {
        let world = try Self.world()
        let root = try world.certificate("root")
        let client = try world.certificate("client")
        let p12 = try world.pkcs12("client", chain: ["root"], password: "right horse")
        let keychain = try world.keychain()
        let manager = CertificateManager(keychain: keychain)
        var events = manager.events.makeAsyncIterator()
        #expect(try manager.clientIdentity == nil)

        try manager.setClientIdentity(pkcs12: p12, password: "right horse")
        let identity = try #require(try manager.clientIdentity)
        #expect(identity.certificate == client)
        #expect(try identity.privateKey.publicKeySHA1() == client.publicKeyHash)
        #expect(try manager.clientIdentityCertificateChain == [client, root])
        #expect(try manager.clientIdentityCertificateInfo?.subjectSummary == "alice.client")
        #expect(await events.next() == .provisioned(CertificateInfo(client)))

        // The key signs, and openssl verifies the signature with the certificate's public key.
        let signature = try identity.privateKey.signature(
            for: Data("hello".utf8), algorithm: .ecdsaX962(.sha256, hashing: true))
        try world.ca.directory.write("message.txt", "hello")
        try Data(signature).write(to: world.ca.url.appendingPathComponent("message.sig"))
        _ = try world.openssl(["x509", "-in", "client.pem", "-pubkey", "-noout", "-out", "client.pub"])
        let verified = try world.openssl(
            ["dgst", "-sha256", "-verify", "client.pub", "-signature", "message.sig", "message.txt"])
        #expect(verified == "Verified OK")

        // The store may hold the identity's root too; deleting the store leaves the identity and its chain.
        try manager.setCertificates([root])
        #expect(try manager.deleteCertStore())
        #expect(try manager.clientIdentityCertificateChain == [client, root])

        // A second manager on the same file sees it; a second provisioning is refused.
        #expect(try CertificateManager(keychain: try world.keychain()).clientIdentity?.certificate == client)
        #expect(throws: CertificateManagerError(.clientIdentityExists, "")) {
            try manager.setClientIdentity(pkcs12: p12, password: "right horse")
        }

        #expect(try manager.deleteClientIdentity())
        #expect(await events.next() == .removed)
        #expect(try manager.clientIdentity == nil)
        #expect(try manager.clientIdentityCertificateChain.isEmpty)
        for itemClass in [ItemClass.certificate, .key, .genericPassword] {
            #expect(throws: KeychainError(.itemNotFound, "")) { try keychain.find(ItemQuery(itemClass, limit: .all)) }
        }
        #expect(try manager.deleteClientIdentity() == false)
    }

    @Test("PKCS#12 with the wrong password: a typed error without the password, nothing stored")
    func wrongPassword() throws {
        let world = try Self.world()
        let p12 = try world.pkcs12("client", chain: ["root"], password: "right horse")
        let keychain = try world.keychain()
        let manager = CertificateManager(keychain: keychain)
        let error = #expect(throws: CertificateManagerError(.wrongPassword, "")) {
            try manager.setClientIdentity(pkcs12: p12, password: "battery staple")
        }
        #expect(error.map { !"\($0)".contains("battery") && !"\($0)".contains("horse") } == true)
        #expect(try manager.clientIdentity == nil)
        #expect(throws: KeychainError(.itemNotFound, "")) { try keychain.find(ItemQuery(.key, limit: .all)) }
        #expect(throws: CertificateManagerError(.malformedPKCS12, "")) {
            try manager.setClientIdentity(pkcs12: Data("not a pfx".utf8), password: "x")
        }
    }

    @Test("a key that is not the certificate's is refused")
    func keyMismatch() throws {
        let world = try Self.world()
        let client = try world.certificate("client")
        let manager = CertificateManager(keychain: try world.keychain())
        let stranger = try AsymmetricKey.generateEC(curve: .p256)
        #expect(throws: CertificateManagerError(.keyMismatch, "")) {
            try manager.setClientIdentity(ClientIdentity(certificate: client, privateKey: stranger))
        }
        #expect(try manager.clientIdentity == nil)
    }

    @Test("expiry events by the injected clock")
    func expiry() async throws {
        let world = try Self.world()
        let client = try world.certificate("client")
        let p12 = try world.pkcs12("client", chain: [], password: "pw")
        let clock = TestClock(utc("20290101000000Z"))
        let manager = CertificateManager(
            keychain: try world.keychain(), expiryWarningWindow: 30 * 86_400, clock: clock.read)
        #expect(try manager.checkClientIdentityExpiry() == nil)  // no identity
        try manager.setClientIdentity(pkcs12: p12, password: "pw")
        var events = manager.events.makeAsyncIterator()
        #expect(await events.next() == .provisioned(CertificateInfo(client)))

        #expect(try manager.checkClientIdentityExpiry() == nil)  // a year left
        clock.set(utc("20291201000000Z"))  // 31 days left
        #expect(try manager.checkClientIdentityExpiry() == nil)
        clock.set(utc("20291215000000Z"))
        let soon = CertificateManagerEvent.expiringSoon(CertificateInfo(client), expires: utc("20300101000000Z"))
        #expect(try manager.checkClientIdentityExpiry() == soon)
        #expect(await events.next() == soon)
        clock.set(utc("20300101000001Z"))
        #expect(try manager.checkClientIdentityExpiry() == .expired(CertificateInfo(client)))
        #expect(await events.next() == .expired(CertificateInfo(client)))
    }
}

/// Without the client identity suite's time limit: the test waits its turn for the process's TPM.
@Suite("Client identity with its key in the TPM (swtpm)", .hardwareExclusive)
struct TPMIdentityTests {
    @Test("stored as the TPM's blob, read back as a key that signs in the TPM")
    func tpmKey() throws {
        let swtpm = try SoftwareTPM()
        TrustedPlatformModule.shared = TrustedPlatformModule(configuration: swtpm.configuration)
        let world = try ManagerWorld()
        try world.root()
        let key = try TPMKey.generate()
        let request = try CertificateSigningRequest(subject: [.init("CN", "tpm.client")], privateKey: try key.privateKey())
        try world.ca.issue(
            "tpm-client", request: request.pemEncoded, issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "email:tpm@example.com", extendedKeyUsage: "clientAuth"))
        let certificate = try world.certificate("tpm-client")
        let manager = CertificateManager(keychain: try world.keychain())
        try manager.setClientIdentity(ClientIdentity(certificate: certificate, privateKey: try key.privateKey()))
        // Another manager on the same keychain, as the next process would open it.
        let identity = try #require(try CertificateManager(keychain: try world.keychain()).clientIdentity)
        #expect(identity.certificate == certificate)
        #expect(identity.privateKey.heldBy is TPMKey)
        let message = Data("the client identity signs in the TPM".utf8)
        let signature = try identity.privateKey.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
        #expect(try certificate.publicKey().isValidSignature(signature, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
    }
}
