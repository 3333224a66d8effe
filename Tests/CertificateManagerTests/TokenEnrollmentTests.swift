import CertificateManager
import Certificates
import Foundation
import HardwareKeys
import Keychain
import SecurityBase
import TestVectors
import Testing

/// Enrollment whose key is made on a PKCS#11 token: scepserver on loopback issues the certificate, a SoftHSM2 token
/// holds the key and, afterwards, the certificate; pkcs11-tool and openssl check what is on the token and what it
/// signs.
@Suite("Enrollment: SCEP with the key made on a PKCS#11 token (scepserver, SoftHSM2)", .hostOnly, .serialized, .hardwareExclusive)
struct TokenEnrollmentTests {
    let softHSM: SoftHSMToken
    let token: PKCS11Token
    let server: SCEPServer
    let store: EnrollmentKeychain

    init() throws {
        softHSM = try SoftHSMToken()
        let modules = try PKCS11Modules(path: SoftHSMToken.module)
        PKCS11Modules.setShared(modules)
        let label = softHSM.label
        token = try #require(try modules.tokens().first { $0.label == label })
        server = try SCEPServer(challenge: EnrollmentTests.challenge)
        store = try EnrollmentKeychain()
    }

    var pin: SecretBytes { SecretBytes(Array(softHSM.pin.utf8)) }

    func enroll(pin: SecretBytes, challenge: String = EnrollmentTests.challenge) async throws -> EnrollmentResult {
        let ca = try Certificate(pemEncoded: String(decoding: try server.depot.read("depot/ca.pem"), as: UTF8.self))
        return try await store.manager.enroll(
            configuration: EnrollmentConfiguration(
                url: server.url, keyLocation: .token(token, pin: pin), caFingerprint: ca.sha256Fingerprint, timeout: .seconds(10)),
            credentials: CredentialLog().provider("card-holder.example.com", challenge))
    }

    /// What pkcs11-tool lists of the token's objects of `type` (cert, privkey, pubkey).
    func objects(_ type: String) throws -> String {
        String(decoding: try softHSM.tool(["--list-objects", "--type", type]), as: UTF8.self)
    }

    @Test("the key is made on the token and never leaves it; the issued certificate is written beside it; the keychain keeps the certificate and which token holds the key; with the PIN the identity signs there, openssl verifies")
    func enrollsOnTheToken() async throws {
        let result = try await enroll(pin: pin)
        let leaf = result.identity.certificate
        let key = try #require(result.identity.privateKey.heldBy as? PKCS11Key)
        #expect(leaf.commonNames == ["card-holder.example.com"] && leaf.publicKeySizeInBits == 2048)
        try server.depot.write("leaf.pem", leaf.pemEncoded)
        let verify = try OpenSSLCLI.run(["verify", "-CAfile", server.caPath, server.depot.path("leaf.pem")])
        #expect(verify.status == 0, "\(verify.text) \(verify.stderr)")

        // On the token: one private key, sensitive and never extractable, and the issued certificate under its CKA_ID.
        let id = key.id.hex
        #expect(try softHSM.tool(["--read-object", "--type", "cert", "--id", id]) == leaf.derEncoded)
        let privateKeys = try objects("privkey")
        #expect(privateKeys.components(separatedBy: "Private Key Object").count == 2 && privateKeys.contains(id), "\(privateKeys)")
        #expect(privateKeys.contains("never extractable"), "\(privateKeys)")
        // The keychain: the certificate and the chain, no key.
        #expect(try store.count(.key) == 0 && store.count(.certificate) == 1)

        // Read back as the next process would, with the PIN: the key signs on the token; openssl verifies.
        let stored = try #require(try CertificateManager(keychain: store.keychain, tokenPIN: pin).clientIdentity)
        #expect(stored.certificate == leaf)
        #expect((stored.privateKey.heldBy as? PKCS11Key)?.id == key.id)
        #expect(throws: KeyError(.heldElsewhere, "")) { _ = try stored.privateKey.externalRepresentation() }
        try server.expectSignatureVerifies(stored.privateKey, leaf: leaf)

        // Without the PIN the identity is found and its certificate read, but its key cannot sign, and says why.
        let withoutPIN = try #require(try CertificateManager(keychain: store.keychain).clientIdentity)
        let refused = #expect(throws: HardwareKeyError(.interactionNotAllowed, "")) {
            try withoutPIN.privateKey.signature(for: Data("refused".utf8), algorithm: .rsaPKCS1v15(.sha256, hashing: true))
        }
        #expect(refused?.reason.contains("needs its PIN") == true, "\(String(describing: refused))")

        // A second enrollment finds the identity there; deleting it leaves the token's key and certificate, which are
        // the token's.
        await #expect(throws: CertificateManagerError(.clientIdentityExists, "")) { _ = try await enroll(pin: pin) }
        #expect(try store.manager.deleteClientIdentity())
        try store.expectEmpty()
        #expect(try softHSM.tool(["--read-object", "--type", "cert", "--id", id]) == leaf.derEncoded)
    }

    @Test("the enrolled identity authenticates a TLS connection through the manager's configuration, its key signing on the token: openssl s_server -Verify accepts it")
    func tlsWithTheTokenIdentity() async throws {
        _ = try await enroll(pin: pin)
        try await server.expectClientAuthentication(
            CertificateManager(keychain: store.keychain, tokenPIN: pin), commonName: "card-holder.example.com")
    }

    @Test("a token that is gone: the identity's certificate still reads; its key is identityTokenUnavailable, saying which token")
    func tokenGone() async throws {
        let result = try await enroll(pin: pin)
        // The modules of a machine without that token: OpenSC's, with no reader (SoftHSM reads its tokens once per
        // process, so its token cannot be taken away from this one).
        PKCS11Modules.setShared(try PKCS11Modules(path: "/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so"))
        let manager = CertificateManager(keychain: store.keychain, tokenPIN: pin)
        #expect(try manager.clientIdentityCertificateInfo?.sha256Fingerprint == CertificateInfo(result.identity.certificate).sha256Fingerprint)
        let error = #expect(throws: CertificateManagerError(.identityTokenUnavailable, "")) { _ = try manager.clientIdentity }
        #expect(error?.reason.contains(token.tokenID) == true, "\(String(describing: error))")
    }

    @Test("a wrong PIN: enrollmentKeyUnavailable, saying the token refused it; no request is sent, nothing is stored")
    func wrongPIN() async throws {
        let error = await #expect(throws: CertificateManagerError(.enrollmentKeyUnavailable, "")) {
            _ = try await enroll(pin: SecretBytes(Array("000000".utf8)))
        }
        #expect(error?.reason.contains("refused the PIN") == true, "\(String(describing: error))")
        try store.expectEmpty()
        #expect(try !objects("privkey").contains("Private Key Object"))
    }

    @Test("the CA refuses the request: the key made on the token for it is deleted from the token, nothing is stored")
    func refusedRequest() async throws {
        await #expect(throws: CertificateManagerError(.enrollmentBadRequest, "")) {
            _ = try await enroll(pin: pin, challenge: "wrong challenge")
        }
        try store.expectEmpty()
        let left = try objects("privkey") + objects("pubkey") + objects("cert")
        #expect(!left.contains("Object"), "\(left)")
    }
}
