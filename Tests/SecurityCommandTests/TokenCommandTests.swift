import Foundation
import TestVectors
import Testing

/// Keys on a token through the `security` command, each step its own process, as a script runs them: the TPM
/// (swtpm on loopback) as Apple's Secure Enclave token.
@Suite("security command: keys held in a TPM (list-smartcards, create-keypair --token, create-csr, find-identity)")
struct TokenCommandTests {
    @Test("list-smartcards names the TPM when it answers and nothing without one; a key made on it signs a request openssl verifies, and with its certificate is an identity")
    func tpmKeys() throws {
        let sandbox = try Sandbox()
        let swtpm = try SoftwareTPM()
        let tpm = ["SECURITYSERVICES_TPM_TCTI": swtpm.configuration]
        #expect(try sandbox.run(["list-smartcards"], environment: tpm) == Sandbox.Run(status: 0, stdout: "com.apple.setoken\n", stderr: ""))
        let none = ["SECURITYSERVICES_TPM_TCTI": "device:/dev/tpmrm-absent"]
        #expect(try sandbox.run(["list-smartcards"], environment: none) == Sandbox.Run(status: 0, stdout: "", stderr: ""))
        // Neither a TPM nor a PKCS#11 module that loads: no token, and no complaint.
        let nothing = none.merging(["SECURITYSERVICES_PKCS11_MODULE": "/usr/lib/absent-pkcs11.so"]) { $1 }
        #expect(try sandbox.run(["list-smartcards"], environment: nothing) == Sandbox.Run(status: 0, stdout: "", stderr: ""))

        let created = try sandbox.run(["create-keypair", "-a", "ec", "--token", "com.apple.setoken", "tpm-key", sandbox.keychain], environment: tpm)
        #expect(created == Sandbox.Run(status: 0, stdout: "", stderr: ""))
        // No TPM: errSecUnimplemented (-4), whose low byte is the exit status; RSA on the enclave token: errSecParam.
        let absent = try sandbox.run(["create-keypair", "-a", "ec", "--token", "com.apple.setoken", "other", sandbox.keychain], environment: none)
        #expect(absent.status == 252 && absent.stderr.contains("no TPM here"), "\(absent)")
        let rsa = try sandbox.run(["create-keypair", "-a", "rsa", "--token", "com.apple.setoken", "other", sandbox.keychain], environment: tpm)
        #expect(rsa.status == 206, "\(rsa)")

        let csr = try sandbox.run(["create-csr", "tpm-key", "-s", "/CN=tpm.example.com", sandbox.keychain], environment: tpm)
        #expect(csr.status == 0 && csr.stdout.hasPrefix("-----BEGIN CERTIFICATE REQUEST-----\n"), "\(csr)")
        try Data(csr.stdout.utf8).write(to: sandbox.directory.appendingPathComponent("tpm.csr"))
        let verified = try OpenSSLCLI.run(["req", "-in", "tpm.csr", "-verify", "-noout"], in: sandbox.directory)
        #expect(verified.status == 0 && verified.stderr.contains("verify OK"), "\(verified.stderr)")
        try OpenSSLCLI.require(
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-subj", "/CN=Token CA", "-days", "30"], in: sandbox.directory)
        try OpenSSLCLI.require(
            ["x509", "-req", "-in", "tpm.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "10", "-out", "tpm.pem"],
            in: sandbox.directory)
        let imported = try sandbox.run(["import", sandbox.directory.appendingPathComponent("tpm.pem").path, sandbox.keychain], environment: tpm)
        #expect(imported == Sandbox.Run(status: 0, stdout: "1 certificate imported.\n", stderr: ""))
        let identities = try sandbox.run(["find-identity", sandbox.keychain], environment: tpm)
        #expect(identities.status == 0 && identities.stdout.contains("\"tpm.example.com\"") && identities.stdout.contains("1 identities found"), "\(identities)")
    }

    @Test("a smart card (SoftHSM2): list-smartcards names it by its PKCS#11 URI, find-identity lists its identity, create-keypair --token makes a key on it with the PIN from standard input")
    func smartCard() throws {
        let sandbox = try Sandbox()
        let token = try SoftHSMToken(configuration: sandbox.softHSMConfiguration)
        try token.tool(["--keypairgen", "--key-type", "EC:prime256v1", "--id", "01", "--label", "card-key", "--usage-sign"])
        try token.writeCertificate(forKey: "01", label: "card-key", subject: "/CN=card.example", in: sandbox.directory)
        let noTPM = ["SECURITYSERVICES_TPM_TCTI": "device:/dev/tpmrm-absent"]

        let listed = try sandbox.run(["list-smartcards"], environment: noTPM)
        let uri = listed.stdout.split(separator: "\n").map(String.init).first { $0.hasSuffix(";token=\(token.label)") }
        #expect(listed.status == 0 && uri?.hasPrefix("pkcs11:model=SoftHSM%20v2;serial=") == true, "\(listed)")

        let tokenURI = try #require(uri)
        let made = try sandbox.run(["create-keypair", "-a", "ec", "--token", tokenURI, "card-made", sandbox.keychain], input: "\(token.pin)\n", environment: noTPM)
        #expect(made == Sandbox.Run(status: 0, stdout: "", stderr: ""))
        #expect(String(decoding: try token.tool(["--list-objects", "--type", "privkey"]), as: UTF8.self).contains("card-made"))
        // The card's identity beside the keychain's (none: the keychain holds only what create-keypair made on the card).
        let identities = try sandbox.run(["find-identity", sandbox.keychain], environment: noTPM)
        #expect(identities.status == 0 && identities.stdout.contains("\"card.example\"") && identities.stdout.contains("1 identities found"), "\(identities)")
        let wrong = try sandbox.run(["create-keypair", "-a", "ec", "--token", tokenURI, "card-wrong", sandbox.keychain], input: "000000\n", environment: noTPM)
        #expect(wrong.status == Int32(UInt8(truncatingIfNeeded: errSecAuthFailedStatus)), "\(wrong)")
    }
}

/// errSecAuthFailed (-25293), whose low byte is the command's exit status.
private let errSecAuthFailedStatus: Int32 = -25293
