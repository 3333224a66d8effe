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
        try server.expectSignatureVerifies(stored.privateKey, leaf: leaf)

        // The identity authenticates a TLS connection through the manager's configuration, signing in the TPM.
        try await server.expectClientAuthentication(CertificateManager(keychain: store.keychain), commonName: "tpm-device.example.com")
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
