import CertificateManager
import Certificates
import Foundation
import HardwareKeys
import Keychain
import TestVectors
import Testing

/// Enrollment whose key is made in the TPM: scepserver on loopback issues the certificate, swtpm holds the key.
/// Without the enrollment suite's time limit: the test waits its turn for the process's TPM.
@Suite("Enrollment: SCEP with the key made in the TPM (scepserver, swtpm)", .hostOnly, .hardwareExclusive)
struct TPMEnrollmentTests {
    @Test("the key is made in the TPM and never leaves it: the request, SCEP's messages and the answer's decryption run there; the identity reads back as a TPM key; openssl verifies the certificate and what the key signs; s_server -Verify accepts it through the manager's TLS configuration")
    func enrollsWithTheTPM() async throws {
        let swtpm = try SoftwareTPM()
        TrustedPlatformModule.shared = TrustedPlatformModule(configuration: swtpm.configuration)
        let server = try SCEPServer(challenge: EnrollmentTests.challenge)
        let ca = try Certificate(pemEncoded: String(decoding: try server.depot.read("depot/ca.pem"), as: UTF8.self))
        let store = try EnrollmentKeychain()
        let result = try await store.manager.enroll(
            configuration: EnrollmentConfiguration(
                url: server.url, keyLocation: .tpm, caFingerprint: ca.sha256Fingerprint, timeout: .seconds(10)),
            credentials: CredentialLog().provider("tpm-device.example.com", EnrollmentTests.challenge))

        let leaf = result.identity.certificate
        #expect(leaf.commonNames == ["tpm-device.example.com"] && leaf.issuer == ca.subject && leaf.publicKeySizeInBits == 2048)
        #expect(result.identity.privateKey.heldBy is TPMKey)
        try server.depot.write("leaf.pem", leaf.pemEncoded)
        let verify = try OpenSSLCLI.run(["verify", "-CAfile", server.caPath, server.depot.path("leaf.pem")])
        #expect(verify.status == 0, "\(verify.text) \(verify.stderr)")

        // Read back as the next process would: the keychain keeps the TPM's blob, no private key; the key signs in
        // the TPM, and openssl verifies the signature with the issued certificate.
        let stored = try #require(try CertificateManager(keychain: store.keychain).clientIdentity)
        #expect(stored.certificate == leaf)
        let key = try #require(stored.privateKey.heldBy as? TPMKey)
        #expect(throws: KeyError(.heldElsewhere, "")) { _ = try stored.privateKey.externalRepresentation() }
        let item = try #require(try store.keychain.find(ItemQuery(.key, returning: [.data, .attributes])).first)
        #expect(item.data == key.blob)
        #expect(try store.count(.key) == 1 && store.count(.certificate) == 1)
        let message = Data("signed in the TPM by the enrolled identity".utf8)
        try message.write(to: server.depot.url.appendingPathComponent("msg"))
        try stored.privateKey.signature(for: message, algorithm: .rsaPKCS1v15(.sha256, hashing: true))
            .write(to: server.depot.url.appendingPathComponent("sig"))
        try OpenSSLCLI.require(["x509", "-in", server.depot.path("leaf.pem"), "-pubkey", "-noout", "-out", server.depot.path("pub.pem")])
        let verified = try OpenSSLCLI.run([
            "dgst", "-sha256", "-verify", server.depot.path("pub.pem"), "-signature", server.depot.path("sig"), server.depot.path("msg"),
        ])
        #expect(verified.text.contains("Verified OK"), "\(verified.stderr)")

        // The identity authenticates a TLS connection through the manager's configuration, signing in the TPM.
        let world = try TLSConfigurationTests.world()
        let verifying = try OpenSSLServer(
            in: world.ca.url, arguments: ["-cert", "server.pem", "-key", "server.key", "-Verify", "1", "-CAfile", server.caPath])
        let manager = CertificateManager(keychain: store.keychain)
        try manager.setCertificates([try world.certificate("root")])
        let (_, page) = try await TLSConfigurationTests.fetch(verifying, try manager.tlsConfiguration(hostname: "www.example.com"))
        #expect(page.contains("tpm-device.example.com"), "s_server's page names the client certificate: \(page.prefix(300))")
    }

    @Test("no TPM: enrollmentKeyUnavailable, saying so; nothing is stored")
    func noTPM() async throws {
        TrustedPlatformModule.shared = TrustedPlatformModule(configuration: "device:/dev/tpmrm-absent")
        let server = try SCEPServer(challenge: EnrollmentTests.challenge)
        let store = try EnrollmentKeychain()
        let error = await #expect(throws: CertificateManagerError(.enrollmentKeyUnavailable, "")) {
            try await store.manager.enroll(
                configuration: EnrollmentConfiguration(url: server.url, keyLocation: .tpm, timeout: .seconds(10)),
                credentials: CredentialLog().provider("tpm-device.example.com", EnrollmentTests.challenge))
        }
        #expect(error?.reason.contains("no TPM here") == true, "\(String(describing: error))")
        try store.expectEmpty()
    }
}
