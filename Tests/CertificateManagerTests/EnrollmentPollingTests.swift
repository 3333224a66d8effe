import CertificateManager
import Certificates
import Foundation
import NetworkFetch
import Synchronization
import TestVectors
import Testing

/// The waits an enrollment asked for, returned at once.
final class RecordedSleep: Sendable {
    private let waits = Mutex<[Duration]>([])
    var durations: [Duration] { waits.withLock { $0 } }
    var sleep: @Sendable (Duration) async throws -> Void { { duration in self.waits.withLock { $0.append(duration) } } }
}

/// PENDING, CertPoll and the CertRep checks, against ``FakeSCEPResponder`` (scepserver never answers PENDING).
@Suite("Enrollment: polling and CertRep checks (fake SCEP responder)", .hostOnly, .timeLimit(.minutes(2)))
struct EnrollmentPollingTests {
    static func configuration(_ responder: FakeSCEPResponder, polls: Int = 10, sleep: RecordedSleep)
        -> EnrollmentConfiguration
    {
        EnrollmentConfiguration(
            url: responder.url, timeout: .seconds(10), pollingInterval: .seconds(42), maximumPollAttempts: polls,
            sleep: sleep.sleep)
    }

    func enroll(
        _ responder: FakeSCEPResponder, polls: Int = 10, sleep: RecordedSleep = RecordedSleep(),
        store: EnrollmentKeychain
    ) async throws -> EnrollmentResult {
        try await store.manager.enroll(
            configuration: Self.configuration(responder, polls: polls, sleep: sleep),
            credentials: CredentialLog().provider("polled-device", "pending secret"))
    }

    /// X.690 §8.1.3: the short form below 128, else 0x80 | the count of length bytes and the fewest big-endian bytes
    /// (its example: 201 is `81 C9`).
    @Test("DER lengths as X.690 writes them", arguments: [
        (0, [0x00]), (127, [0x7F]), (128, [0x81, 0x80]), (201, [0x81, 0xC9]), (255, [0x81, 0xFF]), (256, [0x82, 0x01, 0x00]),
        (65_536, [0x83, 0x01, 0x00, 0x00]),
    ] as [(Int, [UInt8])])
    func derLength(_ count: Int, _ encoded: [UInt8]) {
        #expect(DERWriter.length(count) == encoded)
        let body = [UInt8](repeating: 0x05, count: count)
        #expect(DERWriter.sequence(body) == [0x30] + encoded + body)
    }

    @Test("PENDING three times, then SUCCESS: three CertPolls of the same transaction, the configured wait before each")
    func pendingThenSuccess() async throws {
        let responder = try FakeSCEPResponder(.init(pending: 3))
        let store = try EnrollmentKeychain()
        let sleep = RecordedSleep()
        let result = try await enroll(responder, sleep: sleep, store: store)

        #expect(result.polls == 3)
        #expect(sleep.durations == [.seconds(42), .seconds(42), .seconds(42)])
        let received = responder.received
        #expect(received.map(\.messageType) == [19, 20, 20, 20])
        #expect(received.allSatisfy { $0.method == "POST" })
        #expect(Set(received.map(\.transactionID)).count == 1)
        // PKCSReq carries the CSR with the challenge password; each CertPoll the CA's name and the subject.
        let request = try #require(received.first?.content)
        #expect(request.range(of: Data("pending secret".utf8)) != nil)
        for poll in received.dropFirst() {
            #expect(poll.content.range(of: Data("Fake SCEP CA".utf8)) != nil)
            #expect(poll.content.range(of: Data("polled-device".utf8)) != nil)
            #expect(poll.content.range(of: Data("pending secret".utf8)) == nil)
        }
        // IssuerAndSubject is DER written in Swift: OpenSSL's parser reads it as SEQUENCE { Name, Name } and nothing
        // after it.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("poll-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try received[1].content.write(to: folder.appendingPathComponent("poll.der"))
        let parsed = try OpenSSLCLI.require(["asn1parse", "-inform", "DER", "-in", "poll.der"], in: folder).text
        let structure = parsed.split(separator: "\n").filter { $0.contains("d=0") || $0.contains("d=1") }
        #expect(structure.count == 3 && structure.allSatisfy { $0.contains("SEQUENCE") }, "\(parsed)")
        #expect(parsed.contains("Fake SCEP CA") && parsed.contains("polled-device"))
        // The transactionID is the SHA-256 of the key's SubjectPublicKeyInfo, in hex.
        let leaf = result.identity.certificate
        #expect(received.first?.transactionID == hex(try sha256(leaf.subjectPublicKeyInfo)))

        #expect(leaf.issuer == responder.ca.subject)
        #expect(try store.manager.clientIdentity?.certificate == leaf)
        #expect(try store.manager.clientIdentityCertificateChain == [leaf, responder.ca])
        #expect(try store.count(.key) == 1)
    }

    @Test("still PENDING after the last poll: enrollmentPending, nothing left")
    func pendingExhausted() async throws {
        let responder = try FakeSCEPResponder(.init(pending: 100))
        let store = try EnrollmentKeychain()
        let sleep = RecordedSleep()
        await #expect(throws: CertificateManagerError(.enrollmentPending, "")) {
            try await enroll(responder, polls: 2, sleep: sleep, store: store)
        }
        #expect(responder.received.map(\.messageType) == [19, 20, 20])
        #expect(sleep.durations.count == 2)
        try store.expectEmpty()
    }

    @Test("a CA without POSTPKIOperation is asked by GET with the message in the query")
    func getTransport() async throws {
        let responder = try FakeSCEPResponder(.init(capabilities: "SHA-256\nAES\n", pending: 1))
        let store = try EnrollmentKeychain()
        let result = try await enroll(responder, store: store)
        #expect(result.polls == 1)
        #expect(responder.received.map(\.method) == ["GET", "GET"])
        #expect(responder.received.map(\.messageType) == [19, 20])
    }

    @Test("a CA with an RA: the request is encrypted to the RA, the RA-signed CertRep is accepted, the CA is the chain")
    func registrationAuthority() async throws {
        let responder = try FakeSCEPResponder(.init(pending: 1, registrationAuthority: true))
        let store = try EnrollmentKeychain()
        let result = try await enroll(responder, store: store)
        #expect(result.polls == 1)
        #expect(result.identity.certificate.issuer == responder.ca.subject)
        #expect(result.certificateChain == [result.identity.certificate, responder.ca])
        #expect(try store.manager.clientIdentityCertificateChain == [result.identity.certificate, responder.ca])
    }

    /// A responder whose RA certificate (issued by the CA, digitalSignature and keyEncipherment) has the extended key
    /// usage `extendedKeyUsage`.
    static func registrationAuthority(extendedKeyUsage: String) -> FakeSCEPResponder.Options {
        var options = FakeSCEPResponder.Options()
        options.registrationAuthority = true
        options.registrationAuthorityExtensions =
            "basicConstraints = critical, CA:FALSE\nkeyUsage = digitalSignature, keyEncipherment\nextendedKeyUsage = \(extendedKeyUsage)\n"
        return options
    }

    /// A man in the middle appends to GetCACert an end-entity certificate the CA once issued him: the client must not
    /// encrypt its request (the challenge password) to it, nor take his CertRep signature.
    @Test("an end-entity certificate the CA issued for another role is no RA: the request goes to the CA, the man in the middle reads nothing")
    func registrationAuthoritySubstitution() async throws {
        let options = Self.registrationAuthority(extendedKeyUsage: "clientAuth")
        let responder = try FakeSCEPResponder(options)
        let store = try EnrollmentKeychain()
        var configuration = Self.configuration(responder, sleep: RecordedSleep())
        configuration.caFingerprint = responder.ca.sha256Fingerprint
        await #expect(throws: CertificateManagerError.self) {
            try await store.manager.enroll(configuration: configuration, credentials: CredentialLog().provider("device", "secret"))
        }
        #expect(responder.received.isEmpty, "the man in the middle decrypted a request")
        try store.expectEmpty()

        // The same certificate pinned by the configuration is the RA: the control that the attack above reached the
        // responder and only the choice of recipient kept it out.
        let pinned = try FakeSCEPResponder(options)
        let pinnedStore = try EnrollmentKeychain()
        var trusting = Self.configuration(pinned, sleep: RecordedSleep())
        trusting.raFingerprint = pinned.recipientCertificate.sha256Fingerprint
        _ = try await pinnedStore.manager.enroll(configuration: trusting, credentials: CredentialLog().provider("device", "secret"))
        #expect(pinned.received.map(\.messageType) == [19])
    }

    @Test("an RA certificate with the RA extended key usage (id-kp-cmcRA) receives the request and signs the answer")
    func registrationAuthorityUsage() async throws {
        let responder = try FakeSCEPResponder(Self.registrationAuthority(extendedKeyUsage: "1.3.6.1.5.5.7.3.28"))
        let store = try EnrollmentKeychain()
        let result = try await enroll(responder, store: store)
        #expect(result.identity.certificate.issuer == responder.ca.subject)
        #expect(responder.received.map(\.messageType) == [19])
    }

    @Test("a sleep that throws (the task cancelled) ends the enrollment, nothing left")
    func cancelledWhilePending() async throws {
        let responder = try FakeSCEPResponder(.init(pending: 5))
        let store = try EnrollmentKeychain()
        var configuration = Self.configuration(responder, sleep: RecordedSleep())
        configuration.sleep = { _ in throw CancellationError() }
        await #expect(throws: CancellationError.self) {
            try await store.manager.enroll(
                configuration: configuration, credentials: CredentialLog().provider("device", "secret"))
        }
        try store.expectEmpty()
    }

    @Test(
        "tampered or failing answers: each its typed error, nothing left",
        arguments: [
            ("recipientNonce not ours", CertificateManagerError.Code.enrollmentMalformedResponse),
            ("signed by another key", .enrollmentBadSignature),
            ("FAILURE badMessageCheck", .enrollmentRejected),
            ("FAILURE badRequest", .enrollmentBadRequest),
            ("GetCACert answers garbage", .enrollmentMalformedResponse),
            // A signedData without content (d.sign NULL in OpenSSL) must not crash the client's certs-only reader.
            ("GetCACert answers a signedData without content", .enrollmentMalformedResponse),
            ("PKIOperation answers HTTP 500", .enrollmentServerError),
        ])
    func failures(_ name: String, _ code: CertificateManagerError.Code) async throws {
        var options = FakeSCEPResponder.Options()
        options.pending = 1  // the checks apply to the PENDING answer already
        switch name {
        case "recipientNonce not ours": options.tamper = .wrongRecipientNonce
        case "signed by another key": options.tamper = .foreignSigner
        case "FAILURE badMessageCheck": options.failInfo = "1"
        case "FAILURE badRequest": options.failInfo = "2"
        case "GetCACert answers garbage": options.caAnswer = Data("not a certificate".utf8)
        case "GetCACert answers a signedData without content":
            options.caAnswer = Data([0x30, 0x0b, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02])
        default: options.operationStatus = 500
        }
        let responder = try FakeSCEPResponder(options)
        let store = try EnrollmentKeychain()
        let error = await #expect(throws: CertificateManagerError(code, "")) {
            try await enroll(responder, store: store)
        }
        if name == "FAILURE badMessageCheck" { #expect(error?.reason.contains("badMessageCheck") == true) }
        if name == "PKIOperation answers HTTP 500" { #expect(error?.reason.contains("HTTP 500") == true) }
        try store.expectEmpty()
    }

    @Test(
        "a man in the middle (his CA appended to GetCACert, the CA pinned): his CertRep signature and his certificate are refused",
        arguments: ["signs the CertRep", "issues the certificate"])
    func manInTheMiddle(_ what: String) async throws {
        var options = FakeSCEPResponder.Options()
        options.appendForeignCA = true
        if what == "signs the CertRep" { options.tamper = .foreignSigner } else { options.issuedByForeignCA = true }
        let responder = try FakeSCEPResponder(options)
        let store = try EnrollmentKeychain()
        var configuration = Self.configuration(responder, sleep: RecordedSleep())
        configuration.caFingerprint = responder.ca.sha256Fingerprint
        let expected: CertificateManagerError.Code = what == "signs the CertRep" ? .enrollmentBadSignature : .enrollmentUntrustedCA
        await #expect(throws: CertificateManagerError(expected, "")) {
            try await store.manager.enroll(
                configuration: configuration, credentials: CredentialLog().provider("device", "secret"))
        }
        try store.expectEmpty()
    }

    @Test("an injected fetcher carries every SCEP exchange (GETs of GetCACaps and GetCACert, POSTed pkiMessages); its failures are the manager's errors")
    func injectedFetcher() async throws {
        let responder = try FakeSCEPResponder(.init(pending: 1))
        let store = try EnrollmentKeychain()
        let recorder = RecordingFetcher()
        var configuration = Self.configuration(responder, sleep: RecordedSleep())
        configuration.network = recorder
        _ = try await store.manager.enroll(configuration: configuration, credentials: CredentialLog().provider("device", "secret"))
        let seen = recorder.requests.map { request in
            (request.url.replacingOccurrences(of: responder.url, with: ""), request.body == nil ? "GET" : "POST")
        }
        #expect(seen.map(\.0) == ["?operation=GetCACaps", "?operation=GetCACert", "?operation=PKIOperation", "?operation=PKIOperation"])
        #expect(seen.map(\.1) == ["GET", "GET", "POST", "POST"])
        #expect(recorder.requests.allSatisfy { $0.timeout == configuration.timeout })

        for (failure, code) in [(FetchError(.unresolved), CertificateManagerError.Code.enrollmentServerUnreachable), (FetchError(.tooLarge), .enrollmentMalformedResponse)] {
            let other = try EnrollmentKeychain()
            configuration.network = RecordingFetcher(failing: failure)
            await #expect(throws: CertificateManagerError(code, "")) {
                try await other.manager.enroll(configuration: configuration, credentials: CredentialLog().provider("device", "secret"))
            }
            try other.expectEmpty()
        }
        configuration.network = RecordingFetcher(failing: FetchError(.cancelled))
        let cancelled = try EnrollmentKeychain()
        await #expect(throws: CancellationError.self) {
            try await cancelled.manager.enroll(configuration: configuration, credentials: CredentialLog().provider("device", "secret"))
        }
    }

    private func sha256(_ data: Data) throws -> Data {
        try #require(OpenSSLCLI.hexBytes(try digestHex(data)))
    }

    private func digestHex(_ data: Data) throws -> String {
        let directory = try TemporaryDirectory("spki")
        try data.write(to: directory.url.appendingPathComponent("spki.der"))
        let text = try OpenSSLCLI.require(["dgst", "-sha256", "-r", "spki.der"], in: directory.url).text
        return String(text.prefix { $0 != " " })
    }

    private func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }
}
