import CertificateManager
import Certificates
import Foundation
import Keychain
import TestVectors
import Testing

/// A PKI made by `openssl ca` at test time: a root, an intermediate under it and a client leaf under that.
private final class CommandPKI {
    let ca: OpenSSLCA
    var directory: String { ca.url.path }

    init() throws {
        ca = try OpenSSLCA("command-manager-pki")
        try ca.issue(
            "root", subject: "/O=Example/CN=Example Root CA", issuer: nil,
            extensions: OpenSSLCA.caExtensions(selfSigned: true))
        try ca.issue(
            "int", subject: "/O=Example/CN=Example Issuing CA", issuer: "root",
            extensions: OpenSSLCA.caExtensions(pathLength: 0))
        try ca.issue(
            "alice", subject: "/CN=alice.example.com", issuer: "int",
            extensions: OpenSSLCA.leafExtensions(
                subjectAltName: "DNS:alice.example.com, email:alice@example.com", extendedKeyUsage: "clientAuth"))
    }

    func path(_ name: String) -> String { ca.directory.path(name) }

    /// `openssl x509 -noout` with `option` (`-serial`, `-fingerprint -sha256`): the value after "=".
    func field(_ name: String, _ option: [String]) throws -> String {
        let line = try OpenSSLCLI.require(["x509", "-in", "\(name).pem", "-noout"] + option, in: ca.url).text
        return String(line.split(separator: "=", maxSplits: 1).last ?? "").trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// The `show` block of `name.pem`, its serial and fingerprints from openssl.
    func block(
        _ name: String, subject: String, summary: String, issuer: String, ca isCA: Bool, names: String? = nil,
        usage: String
    ) throws -> String {
        var text = """
                Subject Name:          \(subject)
                Summary:               \(summary)
                Issuer Name:           \(issuer)
                Serial Number:         \(try field(name, ["-serial"]))
                Not Valid Before:      2020-01-01 00:00:00 GMT
                Not Valid After:       2040-01-01 00:00:00 GMT
                SHA-256:               \(try field(name, ["-fingerprint", "-sha256"]))
                SHA-1:                 \(try field(name, ["-fingerprint", "-sha1"]))
                Certificate Authority: \(isCA ? "Yes" : "No")
                Public Key:            EC 256 bits

            """
        if let names { text += "    Alternative Names:     \(names)\n" }
        return text + "    Key Usage:             \(usage)\n"
    }

    func rootBlock() throws -> String {
        try block(
            "root", subject: "O=Example, CN=Example Root CA", summary: "Example Root CA",
            issuer: "O=Example, CN=Example Root CA", ca: true, usage: "keyCertSign, cRLSign")
    }

    func intermediateBlock() throws -> String {
        try block(
            "int", subject: "O=Example, CN=Example Issuing CA", summary: "Example Issuing CA",
            issuer: "O=Example, CN=Example Root CA", ca: true, usage: "keyCertSign, cRLSign")
    }
}

@Suite("security trust-store and client-identity")
struct CertificateManagerCommandTests {
    @Test("trust-store: show none, set from PEM and DER, immutable, non-CA refused, delete")
    func trustStoreLifecycle() throws {
        let sandbox = try Sandbox()
        let pki = try CommandPKI()
        try pki.ca.der("root")
        let kc = sandbox.keychain
        let none = "security: trust-store show: no private trust store in access group \"security\"\n"

        #expect(try sandbox.run(["trust-store", "show", "--keychain", kc]).status == 50)  // no keychain yet
        // A non-CA anywhere in the list: refused by name, nothing stored.
        let both = pki.path("both.pem")
        try Data((try pki.ca.pem("int") + pki.ca.pem("alice")).utf8).write(to: URL(fileURLWithPath: both))
        #expect(
            try sandbox.run(["trust-store", "set", pki.path("root.der"), both, "--keychain", kc])
                == Sandbox.Run(
                    status: 1, stdout: "",
                    stderr:
                        "security: trust-store set: only CA certificates can be trusted anchors (\"alice.example.com\")\n"
                ))
        #expect(try sandbox.security("trust-store", "show") == Sandbox.Run(status: 44, stdout: "", stderr: none))
        // Unreadable and non-certificate files.
        #expect(
            try sandbox.run(["trust-store", "set", pki.path("missing.pem"), "--keychain", kc])
                == Sandbox.Run(
                    status: 1, stdout: "", stderr: "security: \(pki.path("missing.pem")): cannot read the file\n"))
        #expect(
            try sandbox.run(["trust-store", "set", pki.path("alice.key"), "--keychain", kc])
                == Sandbox.Run(
                    status: 1, stdout: "", stderr: "security: \(pki.path("alice.key")): not a DER or PEM certificate\n")
        )
        #expect(try sandbox.run(["trust-store", "set", "--keychain", kc]).status == 64)

        // A DER root and a PEM file holding the intermediate twice over (duplicates collapse).
        let chain = pki.path("chain.pem")
        try Data((try pki.ca.pem("int") + pki.ca.pem("int")).utf8).write(to: URL(fileURLWithPath: chain))
        #expect(
            try sandbox.run(["trust-store", "set", pki.path("root.der"), chain, "--keychain", kc])
                == Sandbox.Run(status: 0, stdout: "Private trust store created: 2 certificates.\n", stderr: ""))
        let shown = """
            Private trust store (access group "security"): 2 certificates

            Certificate 1
            \(try pki.rootBlock())
            Certificate 2
            \(try pki.intermediateBlock())
            """
        #expect(try sandbox.security("trust-store", "show") == Sandbox.Run(status: 0, stdout: shown, stderr: ""))

        // Created once: a second set fails, whatever it holds, and changes nothing.
        let exists = "security: trust-store set: the private trust store exists; delete it before setting another\n"
        #expect(
            try sandbox.run(["trust-store", "set", pki.path("int.pem"), "--keychain", kc])
                == Sandbox.Run(status: 45, stdout: "", stderr: exists))
        #expect(try sandbox.security("trust-store", "show").stdout == shown)

        // Another access group has no store.
        #expect(try sandbox.security("trust-store", "show", "--access-group", "other").status == 44)

        #expect(
            try sandbox.security("trust-store", "delete")
                == Sandbox.Run(status: 0, stdout: "Private trust store deleted.\n", stderr: ""))
        #expect(
            try sandbox.security("trust-store", "delete")
                == Sandbox.Run(
                    status: 44, stdout: "",
                    stderr: "security: trust-store delete: no private trust store in access group \"security\"\n"))
        #expect(try sandbox.security("trust-store", "show") == Sandbox.Run(status: 44, stdout: "", stderr: none))
        // Recreated.
        #expect(try sandbox.run(["trust-store", "set", pki.path("int.pem"), "--keychain", kc]).status == 0)
    }

    @Test("client-identity: PKCS#12 with the wrong and the right password, certificate and key, show, delete")
    func clientIdentityLifecycle() throws {
        let sandbox = try Sandbox()
        let pki = try CommandPKI()
        try OpenSSLCLI.require(
            [
                "pkcs12", "-export", "-inkey", "alice.key", "-in", "alice.pem", "-certfile", "int.pem", "-passout",
                "pass:s3cret pass", "-out", "alice.p12",
            ], in: pki.ca.url)
        let p12 = pki.path("alice.p12")
        let none = "security: client-identity show: no client identity in access group \"security\"\n"
        let wrong = Sandbox.Run(
            status: 51, stdout: "", stderr: "security: client-identity set: the PKCS#12 password is wrong\n")

        // A wrong password, given or on standard input: nothing stored, and never echoed.
        #expect(try sandbox.security("client-identity", "set", "--pkcs12", p12, "-P", "wrong guess") == wrong)
        #expect(
            try sandbox.run(["client-identity", "set", "--pkcs12", p12, sandbox.keychain], input: "nope\n") == wrong)
        #expect(try sandbox.security("client-identity", "show") == Sandbox.Run(status: 44, stdout: "", stderr: none))
        // No password at all on standard input.
        #expect(
            try sandbox.security("client-identity", "set", "--pkcs12", p12)
                == Sandbox.Run(status: 1, stdout: "", stderr: "security: no password was entered\n"))
        #expect(
            try sandbox.security("client-identity", "set", "--pkcs12", p12, "--key", pki.path("alice.key")).status == 64
        )

        let provisioned = Sandbox.Run(
            status: 0, stdout: "Client identity provisioned: \"alice.example.com\".\n", stderr: "")
        #expect(
            try sandbox.run(["client-identity", "set", "--pkcs12", p12, sandbox.keychain], input: "s3cret pass\n")
                == provisioned)
        let leaf = try pki.block(
            "alice", subject: "CN=alice.example.com", summary: "alice.example.com",
            issuer: "O=Example, CN=Example Issuing CA", ca: false,
            names: "DNS:alice.example.com, email:alice@example.com",
            usage: "digitalSignature")
        let shown = """
            Client identity (access group "security")
            \(leaf)
            Certificate chain: 1 above the identity's certificate
              1) "Example Issuing CA" issued by "Example Root CA"
                 SHA-256: \(try pki.field("int", ["-fingerprint", "-sha256"]))

            """
        #expect(try sandbox.security("client-identity", "show") == Sandbox.Run(status: 0, stdout: shown, stderr: ""))
        #expect(
            try sandbox.security("client-identity", "set", "--pkcs12", p12, "-P", "s3cret pass")
                == Sandbox.Run(
                    status: 45, stdout: "",
                    stderr:
                        "security: client-identity set: a client identity is provisioned; delete it first (\"alice.example.com\")\n"
                ))
        #expect(
            try sandbox.security("client-identity", "delete")
                == Sandbox.Run(status: 0, stdout: "Client identity deleted.\n", stderr: ""))
        #expect(try sandbox.security("client-identity", "delete").status == 44)
        #expect(try sandbox.security("client-identity", "show") == Sandbox.Run(status: 44, stdout: "", stderr: none))

        // From a certificate and a key: a key that is not the certificate's is refused.
        try OpenSSLCLI.require(
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "other.key"], in: pki.ca.url)
        #expect(
            try sandbox.security(
                "client-identity", "set", "--certificate", pki.path("alice.pem"), "--key", pki.path("other.key"))
                == Sandbox.Run(
                    status: 1, stdout: "",
                    stderr:
                        "security: client-identity set: the private key is not the certificate's (\"alice.example.com\")\n"
                ))
        #expect(
            try sandbox.security(
                "client-identity", "set", "--certificate", pki.path("alice.pem"), "--key", pki.path("alice.pem"))
                == Sandbox.Run(
                    status: 1, stdout: "",
                    stderr: "security: \(pki.path("alice.pem")): not an unencrypted private key (DER or PEM)\n"))
        #expect(
            try sandbox.security(
                "client-identity", "set", "--certificate", pki.path("alice.pem"), "--key", pki.path("alice.key"),
                "--chain", pki.path("int.pem")) == provisioned)
        #expect(try sandbox.security("client-identity", "show") == Sandbox.Run(status: 0, stdout: shown, stderr: ""))
    }

    @Test("persistence across processes: this process creates, the command reads and deletes, this process sees it")
    func persistenceAcrossProcesses() throws {
        let sandbox = try Sandbox()
        let pki = try CommandPKI()
        let group = "com.example.app"
        let manager = CertificateManager(keychain: try KeychainStore(path: sandbox.keychain, accessGroups: [group]))
        try manager.setCertificates([try Certificate(pemEncoded: pki.ca.pem("root"))])
        try OpenSSLCLI.require(
            [
                "pkcs12", "-export", "-inkey", "alice.key", "-in", "alice.pem", "-certfile", "int.pem", "-passout",
                "pass:pw", "-out", "alice.p12",
            ], in: pki.ca.url)
        try manager.setClientIdentity(pkcs12: try pki.ca.directory.read("alice.p12"), password: "pw")

        // A second process, the same keychain file and group: it sees both.
        let store = try sandbox.security("trust-store", "show", "--access-group", group)
        let rootBlock = try pki.rootBlock()
        #expect(store.status == 0 && store.stdout.contains(rootBlock), "\(store)")
        let identity = try sandbox.security("client-identity", "show", "--access-group", group)
        #expect(
            identity.status == 0 && identity.stdout.contains("Summary:               alice.example.com"), "\(identity)")
        // Another group sees neither.
        #expect(try sandbox.security("trust-store", "show", "--access-group", "com.example.other").status == 44)
        #expect(try sandbox.security("client-identity", "show", "--access-group", "com.example.other").status == 44)

        // The second process deletes them; the first sees the deletion.
        #expect(try sandbox.security("trust-store", "delete", "--access-group", group).status == 0)
        #expect(try sandbox.security("client-identity", "delete", "--access-group", group).status == 0)
        #expect(try manager.isCertificateStoreInUse == false)
        #expect(try manager.clientIdentity == nil)
        #expect(try manager.clientIdentityCertificateChain.isEmpty)

        // And the other way: the command creates, this process reads.
        #expect(
            try sandbox.run([
                "trust-store", "set", pki.path("int.pem"), "--keychain", sandbox.keychain, "--access-group", group,
            ])
            .status == 0)
        #expect(try manager.certificates == [try Certificate(pemEncoded: pki.ca.pem("int"))])
    }

    @Test("processes racing to create the store: exactly one wins, the store is exactly its certificates")
    func processRace() throws {
        let sandbox = try Sandbox()
        let ca = try OpenSSLCA("command-race-pki")
        let contenders = 6
        // Each contender sets two CAs of its own (a root and an intermediate, one PEM file).
        for index in 0..<contenders {
            try ca.issue(
                "root\(index)", subject: "/CN=Race Root \(index)", issuer: nil,
                extensions: OpenSSLCA.caExtensions(selfSigned: true))
            try ca.issue(
                "int\(index)", subject: "/CN=Race Issuing CA \(index)", issuer: "root\(index)",
                extensions: OpenSSLCA.caExtensions(pathLength: 0))
            try ca.directory.write("set\(index).pem", try ca.pem("root\(index)") + ca.pem("int\(index)"))
        }
        // The keychain exists before the race, so the race is over the store, not over creating the file.
        _ = try KeychainStore(path: sandbox.keychain, accessGroups: ["security"])
        for round in 0..<3 {
            let started = try (0..<contenders).map { index in
                try sandbox.start([
                    "trust-store", "set", ca.directory.path("set\(index).pem"), "--keychain", sandbox.keychain,
                ])
            }
            let runs = try started.map { try $0.wait() }
            let winners = runs.indices.filter { runs[$0].status == 0 }
            #expect(winners.count == 1, "round \(round): \(runs)")
            for run in runs where run.status != 0 {
                #expect(
                    run
                        == Sandbox.Run(
                            status: 45, stdout: "",
                            stderr:
                                "security: trust-store set: the private trust store exists; delete it before setting another\n"
                        ))
            }
            let manager = CertificateManager(
                keychain: try KeychainStore(path: sandbox.keychain, accessGroups: ["security"]))
            if let winner = winners.first {
                let expected = try Certificate.certificates(
                    pemEncoded: ca.pem("root\(winner)") + ca.pem("int\(winner)"))
                #expect(Set(try manager.certificates) == Set(expected), "round \(round)")
                #expect(try manager.certificates.count == 2)
            }
            #expect(try manager.deleteCertStore())
        }
    }
}
