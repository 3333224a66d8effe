import CertificateManager
import Certificates
import Foundation
import Keychain
import KeychainItems
import Security
import Synchronization
import TestVectors
import Testing

/// Counts how often the credential provider was asked.
final class CredentialLog: Sendable {
    private let asked = Mutex<[EnrollmentContext]>([])
    var contexts: [EnrollmentContext] { asked.withLock { $0 } }
    func provider(_ commonName: String, _ password: String?) -> ClosureCredentialProvider {
        ClosureCredentialProvider { context in
            self.asked.withLock { $0.append(context) }
            return EnrollmentCredentials(commonName: commonName, challengePassword: password)
        }
    }
}

/// A keychain of its own for one enrollment, and what is in it.
final class EnrollmentKeychain {
    let directory: TemporaryDirectory
    let keychain: KeychainStore
    let manager: CertificateManager

    init() throws {
        directory = try TemporaryDirectory("enroll-keychain")
        keychain = try KeychainStore(path: directory.path("keychain.db"), accessGroups: ["com.example.app"])
        manager = CertificateManager(keychain: keychain)
    }

    /// How many items of `itemClass` the keychain holds (any label).
    func count(_ itemClass: ItemClass) throws -> Int {
        do { return try keychain.find(ItemQuery(itemClass, limit: .all)).count } catch let error as KeychainError
            where error.code == .itemNotFound
        { return 0 }
    }

    /// Nothing half-provisioned: no identity, no key, no certificate.
    func expectEmpty(sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try manager.clientIdentity == nil, sourceLocation: sourceLocation)
        #expect(try count(.key) == 0, "a generated key was left behind", sourceLocation: sourceLocation)
        #expect(try count(.certificate) == 0, sourceLocation: sourceLocation)
    }
}

/// Enrollment against Debian's real scepserver (micromdm scep 2.1.0) on loopback, each test with its own CA.
@Suite("Enrollment: SCEP against scepserver", .hostOnly, .serialized, .timeLimit(.minutes(2)))
struct EnrollmentTests {
    static let challenge = "correct horse battery staple"

    func configuration(_ server: SCEPServer, _ changes: (inout EnrollmentConfiguration) -> Void = { _ in })
        -> EnrollmentConfiguration
    {
        var configuration = EnrollmentConfiguration(url: server.url, timeout: .seconds(10))
        changes(&configuration)
        return configuration
    }

    @Test("success: the identity is stored, its key is the generated one, scepserver's CA issued it, openssl verifies")
    func success() async throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let ca = try Certificate(pemEncoded: String(decoding: try server.depot.read("depot/ca.pem"), as: UTF8.self))
        let store = try EnrollmentKeychain()
        var events = store.manager.events.makeAsyncIterator()
        let log = CredentialLog()

        let result = try await store.manager.enroll(
            configuration: configuration(server) { $0.caFingerprint = ca.sha256Fingerprint },
            credentials: log.provider("device-42.example.com", Self.challenge))

        // The provider was asked once, told the server and its CA.
        #expect(log.contexts.count == 1)
        #expect(log.contexts.first?.url == server.url)
        #expect(log.contexts.first?.certificateAuthority == CertificateInfo(ca))

        let leaf = result.identity.certificate
        #expect(leaf.commonNames == ["device-42.example.com"])
        #expect(leaf.issuer == ca.subject)
        #expect(leaf.publicKeySizeInBits == 2048)
        #expect(try result.identity.privateKey.publicKeySHA1() == leaf.publicKeyHash)
        #expect(result.certificateChain == [leaf, ca])
        #expect(result.polls == 0)

        // Stored as the client identity: certificate + key in the keychain, nothing else left.
        let stored = try #require(try store.manager.clientIdentity)
        #expect(stored.certificate == leaf)
        #expect(try stored.privateKey.externalRepresentation() == result.identity.privateKey.externalRepresentation())
        #expect(try store.manager.clientIdentityCertificateChain == [leaf, ca])
        #expect(try store.count(.key) == 1)
        #expect(try store.count(.certificate) == 1)
        #expect(await events.next() == .provisioned(CertificateInfo(leaf)))

        // openssl agrees that scepserver's CA issued it.
        try server.depot.write("leaf.pem", leaf.pemEncoded)
        let verify = try OpenSSLCLI.run(["verify", "-CAfile", server.caPath, server.depot.path("leaf.pem")])
        #expect(verify.status == 0, "\(verify.text) \(verify.stderr)")

        // A second enrollment is refused before the server is asked.
        let again = CredentialLog()
        await #expect(throws: CertificateManagerError(.clientIdentityExists, "")) {
            try await store.manager.enroll(
                configuration: configuration(server), credentials: again.provider("other", Self.challenge))
        }
        #expect(again.contexts.isEmpty)
    }

    @Test("wrong challenge password: enrollmentBadRequest, no key and no identity left, the password in no error")
    func wrongChallenge() async throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let store = try EnrollmentKeychain()
        // The key of an enrollment whose process died: the next enrollment removes it.
        let stale = try KeyItemAttributes(
            try AsymmetricKey.generateEC(curve: .p256), label: CertificateManager.enrollmentKeyLabel)
        var attributes = stale.attributes
        attributes[.accessGroup] = .string("com.example.app")
        try store.keychain.add(.key, attributes: attributes, data: stale.data)
        #expect(try store.count(.key) == 1)
        let secret = "not the password 7f3a"
        let error = await #expect(throws: CertificateManagerError(.enrollmentBadRequest, "")) {
            try await store.manager.enroll(
                configuration: configuration(server), credentials: CredentialLog().provider("device", secret))
        }
        #expect(error.map { String(describing: $0).contains(secret) } == false)
        #expect(error?.reason.contains("badRequest") == true)
        try store.expectEmpty()
    }

    @Test("unreachable server (a closed port): enrollmentServerUnreachable at once, nothing left, nobody asked")
    func unreachable() async throws {
        let store = try EnrollmentKeychain()
        let log = CredentialLog()
        let port = try SCEPServer.freePort()
        let error = await #expect(throws: CertificateManagerError(.enrollmentServerUnreachable, "")) {
            try await store.manager.enroll(
                configuration: EnrollmentConfiguration(url: "http://127.0.0.1:\(port)/scep", timeout: .seconds(60)),
                credentials: log.provider("device", Self.challenge))
        }
        // Refused, not timed out: the refusal ended the enrollment, not its 60 s deadline. (No clock: under the full
        // suite this task has been seen to resume 33 s late.)
        #expect(error?.reason.contains("refused") == true)
        #expect(log.contexts.isEmpty)
        try store.expectEmpty()
    }

    @Test("request refused by the CA's policy (a CSR verifier that exits 1): enrollmentBadRequest, nothing left")
    func rejected() async throws {
        // The verifier records that it ran, so the refusal is its own and not the challenge's.
        let marker = try TemporaryDirectory("scep-verifier")
        let server = try SCEPServer(
            challenge: Self.challenge, csrVerifier: "cat > '\(marker.path("csr"))'\nexit 1")
        let store = try EnrollmentKeychain()
        await #expect(throws: CertificateManagerError(.enrollmentBadRequest, "")) {
            try await store.manager.enroll(
                configuration: configuration(server), credentials: CredentialLog().provider("device", Self.challenge))
        }
        #expect(FileManager.default.fileExists(atPath: marker.path("csr")), "the CSR verifier did not run")
        try store.expectEmpty()

        // The same server with a verifier that accepts grants the same request.
        let accepting = try SCEPServer(challenge: Self.challenge, csrVerifier: "cat > /dev/null\nexit 0")
        let granted = try await store.manager.enroll(
            configuration: configuration(accepting), credentials: CredentialLog().provider("device", Self.challenge))
        #expect(granted.identity.certificate.commonNames == ["device"])
    }

    @Test("a CA that is not the pinned one is refused before the credentials are asked for")
    func pinnedCA() async throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let store = try EnrollmentKeychain()
        let log = CredentialLog()
        await #expect(throws: CertificateManagerError(.enrollmentUntrustedCA, "")) {
            try await store.manager.enroll(
                configuration: configuration(server) { $0.caFingerprint = Data(repeating: 0xA5, count: 32) },
                credentials: log.provider("device", Self.challenge))
        }
        #expect(log.contexts.isEmpty)
        try store.expectEmpty()
    }

    @Test("a 3072-bit key, and a bad configuration refused before any exchange")
    func keySizeAndConfiguration() async throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let store = try EnrollmentKeychain()
        let result = try await store.manager.enroll(
            configuration: configuration(server) { $0.keySize = 3072 },
            credentials: CredentialLog().provider("big-key", Self.challenge))
        #expect(result.identity.certificate.publicKeySizeInBits == 3072)
        #expect(result.identity.privateKey.sizeInBits == 3072)

        let other = try EnrollmentKeychain()
        for bad in [
            EnrollmentConfiguration(url: server.url, keySize: 1024),
            EnrollmentConfiguration(url: "https://127.0.0.1:\(server.port)/scep"),
            EnrollmentConfiguration(url: server.url, caFingerprint: Data([1, 2, 3])),
        ] {
            await #expect(throws: CertificateManagerError(.invalidEnrollmentRequest, "")) {
                try await other.manager.enroll(
                    configuration: bad, credentials: CredentialLog().provider("device", Self.challenge))
            }
        }
        // An empty common name and a provider that throws.
        await #expect(throws: CertificateManagerError(.invalidEnrollmentRequest, "")) {
            try await other.manager.enroll(
                configuration: configuration(server), credentials: CredentialLog().provider("", Self.challenge))
        }
        struct Cancelled: Error {}
        await #expect(throws: CertificateManagerError(.enrollmentCredentialsUnavailable, "")) {
            try await other.manager.enroll(configuration: configuration(server)) { _ in throw Cancelled() }
        }
        try other.expectEmpty()
    }
}
