import Foundation
import TestVectors
import Testing

/// `security enroll` run as a subprocess against Debian's scepserver on loopback.
@Suite("security enroll", .hostOnly, .serialized, .timeLimit(.minutes(2)))
struct EnrollCommandTests {
    static let challenge = "enroll-command secret"

    @Test("enroll with the challenge on stdin: the summary, the identity in the keychain, openssl verifies it")
    func enroll() throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let sandbox = try Sandbox()
        let fingerprint = try OpenSSLCLI.require(["x509", "-in", server.caPath, "-noout", "-fingerprint", "-sha256"])
            .text.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        let run = try sandbox.run(
            [
                "enroll", "--url", server.url, "--common-name", "cli-device.example", "--challenge-stdin",
                "--ca-fingerprint", fingerprint, "--keychain", sandbox.keychain,
            ], input: Self.challenge + "\n")
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr == "")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "enrolled: \"cli-device.example\"")
        #expect(lines.contains("    subject: CN=cli-device.example"))
        #expect(lines.contains { $0.hasPrefix("    issuer: ") && $0.contains("SecurityServices Tests") })
        #expect(lines.contains("    key: RSA 2048"))
        #expect(lines.contains("    polls: 0"))
        #expect(lines.last == "keychain: \"\(sandbox.keychain)\"")
        #expect(!run.stdout.contains(Self.challenge))

        // The identity is in the keychain (as find-identity sees it), and openssl verifies its certificate.
        let identities = try sandbox.security("find-identity")
        #expect(identities.stdout.contains("cli-device.example"), "\(identities)")
        let exported = try sandbox.run(["find-certificate", "-c", "cli-device.example", "-p", sandbox.keychain])
        #expect(exported.status == 0, "\(exported)")
        let pem = sandbox.directory.appendingPathComponent("leaf.pem")
        try Data(exported.stdout.utf8).write(to: pem)
        let verify = try OpenSSLCLI.run(["verify", "-CAfile", server.caPath, pem.path])
        #expect(verify.status == 0, "\(verify.text) \(verify.stderr)")
    }

    @Test("enroll --tpm: the key made in the TPM signs a request openssl verifies in the next process; no TPM fails with the code, nothing stored")
    func enrollInTheTPM() throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let sandbox = try Sandbox()
        let swtpm = try SoftwareTPM()
        let tpm = ["SECURITYSERVICES_TPM_TCTI": swtpm.configuration]
        let arguments = [
            "enroll", "--tpm", "--url", server.url, "--common-name", "tpm-cli.example", "--challenge-stdin", "--keychain", sandbox.keychain,
        ]
        let absent = try sandbox.run(arguments, input: Self.challenge + "\n", environment: ["SECURITYSERVICES_TPM_TCTI": "device:/dev/tpmrm-absent"])
        #expect(absent.status == 1 && absent.stderr.contains("enrollmentKeyUnavailable") && absent.stderr.contains("no TPM here"), "\(absent)")
        #expect(try !sandbox.security("find-identity").stdout.contains("tpm-cli.example"))
        let run = try sandbox.run(arguments, input: Self.challenge + "\n", environment: tpm)
        #expect(run.status == 0 && run.stdout.contains("    key: RSA 2048"), "\(run)")
        // The next process finds the identity, its key in the TPM: a request signed with it verifies.
        let csr = try sandbox.run(
            ["create-csr", "SecurityServices.CertificateManager.client-identity", "-s", "/CN=tpm-cli.example", sandbox.keychain], environment: tpm)
        #expect(csr.status == 0 && csr.stdout.hasPrefix("-----BEGIN CERTIFICATE REQUEST-----\n"), "\(csr)")
        try Data(csr.stdout.utf8).write(to: sandbox.directory.appendingPathComponent("again.csr"))
        let verified = try OpenSSLCLI.run(["req", "-in", "again.csr", "-verify", "-noout"], in: sandbox.directory)
        #expect(verified.status == 0 && verified.stderr.contains("verify OK"), "\(verified.stderr)")
    }

    @Test("enroll --token: the key made on a smart card (SoftHSM2), the PIN on standard input's next line; the certificate lands on the card, find-identity lists the card's identity; a wrong PIN fails with the code, nothing stored")
    func enrollOnAToken() throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let sandbox = try Sandbox()
        let card = try SoftHSMToken(configuration: sandbox.softHSMConfiguration)
        let noTPM = ["SECURITYSERVICES_TPM_TCTI": "device:/dev/tpmrm-absent"]
        let listed = try sandbox.run(["list-smartcards"], environment: noTPM)
        let uri = try #require(listed.stdout.split(separator: "\n").map(String.init).first { $0.hasSuffix(";token=\(card.label)") }, "\(listed)")
        let arguments = [
            "enroll", "--token", uri, "--url", server.url, "--common-name", "card-cli.example", "--challenge-stdin", "--keychain", sandbox.keychain,
        ]
        let wrong = try sandbox.run(arguments, input: Self.challenge + "\n000000\n", environment: noTPM)
        #expect(wrong.status == 1 && wrong.stderr.contains("enrollmentKeyUnavailable") && wrong.stderr.contains("refused the PIN"), "\(wrong)")
        #expect(!wrong.stderr.contains("000000") && !wrong.stderr.contains(Self.challenge))
        #expect(try !sandbox.security("find-identity").stdout.contains("card-cli.example"))

        let run = try sandbox.run(arguments, input: Self.challenge + "\n\(card.pin)\n", environment: noTPM)
        #expect(run.status == 0 && run.stdout.contains("    key: RSA 2048"), "\(run)")
        let certificates = String(decoding: try card.tool(["--list-objects", "--type", "cert"]), as: UTF8.self)
        #expect(certificates.contains("card-cli.example"), "\(certificates)")
        // The card's identity, as find-identity shows smart cards' (the keychain itself holds no key).
        let identities = try sandbox.run(["find-identity", sandbox.keychain], environment: noTPM)
        #expect(identities.status == 0 && identities.stdout.contains("\"card-cli.example\""), "\(identities)")
    }

    @Test("a wrong challenge fails with the error code, exit 1, no password echoed, nothing stored")
    func wrongChallenge() throws {
        let server = try SCEPServer(challenge: Self.challenge)
        let sandbox = try Sandbox()
        let run = try sandbox.run(
            ["enroll", "--url", server.url, "--common-name", "cli-device", "--challenge-stdin", sandbox.keychain],
            input: "guessed-wrong\n")
        #expect(run.status == 1)
        #expect(run.stdout == "")
        #expect(run.stderr.hasPrefix("security: enroll: enrollmentBadRequest: "), "\(run)")
        #expect(!run.stderr.contains("guessed-wrong"))
        #expect(try sandbox.security("find-identity").stdout.contains("cli-device") == false)
    }

    @Test("an unreachable server, and a usage error")
    func unreachableAndUsage() throws {
        let sandbox = try Sandbox()
        let port = try SCEPServer.freePort()
        let run = try sandbox.run(
            [
                "enroll", "--url", "http://127.0.0.1:\(port)/scep", "--common-name", "x", "--no-challenge",
                "--timeout", "5", sandbox.keychain,
            ])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("security: enroll: enrollmentServerUnreachable: GetCACaps to "), "\(run)")
        let usage = try sandbox.run(["enroll", "--url", "http://x/", "--common-name", "x", "--ca-fingerprint", "00"])
        #expect(usage.status == 64)
    }
}
