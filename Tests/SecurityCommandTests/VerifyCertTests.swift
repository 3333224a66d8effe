import Foundation
import TestVectors
import Testing

/// `security verify-cert` as a user runs it, on chains made by `openssl`, with `openssl verify` as the
/// independent truth where its answer is the same question's.
@Suite("security verify-cert")
struct VerifyCertTests {
    /// root -> intermediate -> leaves (www.example.com; expired; revoked), a CRL of the intermediate listing the
    /// revoked one, and DER copies.
    final class Chain {
        let sandbox: Sandbox
        var dir: String { sandbox.directory.path }

        init() throws {
            sandbox = try Sandbox()
            let ca = try OpenSSLCA("verify-cert")
            let leaf = OpenSSLCA.leafExtensions(selfSigned: false)
            try ca.issue("root", subject: "/CN=Verify Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
            try ca.issue("inter", subject: "/CN=inter", issuer: "root", extensions: OpenSSLCA.caExtensions(pathLength: 0))
            try ca.issue("leaf", subject: "/CN=leaf", issuer: "inter", extensions: leaf)
            try ca.issue("expired", subject: "/CN=expired", issuer: "inter", extensions: leaf, notAfter: "20210101000000Z")
            try ca.issue("revoked", subject: "/CN=revoked", issuer: "inter", extensions: leaf)
            try ca.issue(
                "sip", subject: "/CN=sip", issuer: "inter",
                extensions: OpenSSLCA.leafExtensions(
                    subjectAltName: "URI:sip:example.com, URI:sip:alice@other.example, DNS:www.example.com"))
            try ca.revoke("revoked", issuer: "inter")
            try ca.generateCRL("inter")
            // The root's CRL (listing nothing): with CRLs given, every certificate below the anchor needs one.
            try ca.generateCRL("root")
            try ca.crlWithoutNextUpdate("inter")
            try ca.der("leaf")
            // The files the tests name, in the sandbox.
            for file in [
                "root.pem", "inter.pem", "leaf.pem", "expired.pem", "revoked.pem", "sip.pem", "inter.crl", "inter.crl.der",
                "root.crl", "leaf.der", "index.txt", "leaf.key", "inter-without-next.crl",
            ] {
                try FileManager.default.copyItem(
                    at: ca.url.appendingPathComponent(file), to: sandbox.directory.appendingPathComponent(file))
            }
        }

        func verify(_ arguments: [String], environment: [String: String] = [:]) throws -> Sandbox.Run {
            try sandbox.run(["verify-cert"] + arguments, environment: environment)
        }

        /// `openssl verify` with the root trusted and the intermediate untrusted.
        func opensslAgrees(_ leaf: String, _ extra: [String] = []) throws -> Bool {
            try OpenSSLCLI.run(
                ["verify", "-CAfile", "root.pem", "-untrusted", "inter.pem"] + extra + ["\(leaf).pem"],
                in: sandbox.directory
            ).status == 0
        }
    }

    static let success = Sandbox.Run(status: 0, stdout: "...certificate verification successful.\n", stderr: "")

    @Test("--connect: the chain an openssl s_server presents is evaluated as a file's would be, the probe closed with close_notify; a wrong name, no root, a closed port fail")
    func connect() throws {
        let chain = try Chain()
        let server = try OpenSSLServer(
            in: chain.sandbox.directory, arguments: ["-cert", "leaf.pem", "-key", "leaf.key", "-cert_chain", "inter.pem", "-msg"],
            keepingLog: true)
        let address = "127.0.0.1:\(server.port)"
        let named = try chain.verify(["--connect", address, "-r", "\(chain.dir)/root.pem", "-p", "ssl", "-n", "www.example.com"])
        #expect(named == Self.success, "\(named)")
        // The server received from this client close_notify and no fatal alert (the alert it sent the readiness
        // probe, which connected without TLS, is not the client's).
        for _ in 0..<40 where !server.log.contains("close_notify") { usleep(50_000) }
        let alerts = server.log.split(separator: "\n").filter { $0.contains("Alert") }
        let received = alerts.filter { $0.hasPrefix("<<<") }
        #expect(received.contains { $0.contains("close_notify") } && !received.contains { $0.contains("fatal") }, "\(alerts)")
        #expect(try chain.verify(["--connect", address, "-r", "\(chain.dir)/root.pem"]) == Self.success)
        let wrongName = try chain.verify(["--connect", address, "-r", "\(chain.dir)/root.pem", "-p", "ssl", "-n", "other.example"])
        #expect(wrongName.status == 1 && wrongName.stderr.contains("certificate 0 \"leaf\": hostnameMismatch"), "\(wrongName)")
        // The system's anchors do not hold the test root.
        #expect(try chain.verify(["--connect", address, "-q"]).status == 1)
        // The same leaf from a file, with openssl verify's agreement: the fetched chain is that one.
        let file = try chain.verify(["-c", "\(chain.dir)/leaf.pem", "-c", "\(chain.dir)/inter.pem", "-r", "\(chain.dir)/root.pem"])
        let agrees = try chain.opensslAgrees("leaf")
        #expect(file == Self.success && agrees, "\(file)")
        let closedPort = try LoopbackHTTPServer(.silent).port
        let refused = try chain.verify(["--connect", "127.0.0.1:\(closedPort)", "-r", "\(chain.dir)/root.pem"])
        #expect(refused.status == 1 && refused.stderr.contains("unreachable"), "\(refused)")
        let malformed = try chain.verify(["--connect", "no-port"])
        #expect(malformed.status != 0 && malformed.stderr.contains("--connect takes host:port"), "\(malformed)")
    }

    @Test("a good chain: basic and ssl with the hostname, DER or PEM, quiet; openssl verify agrees")
    func success() throws {
        let chain = try Chain()
        let d = chain.dir
        let base = ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "-r", "\(d)/root.pem"]
        #expect(try chain.verify(base) == Self.success)
        #expect(try chain.opensslAgrees("leaf"))
        #expect(try chain.verify(["-c", "\(d)/leaf.der", "-c", "\(d)/inter.pem", "-r", "\(d)/root.pem"]) == Self.success)
        #expect(try chain.verify(base + ["-p", "ssl", "-n", "WWW.Example.COM."]) == Self.success)
        #expect(try chain.opensslAgrees("leaf", ["-purpose", "sslserver", "-verify_hostname", "www.example.com"]))
        #expect(try chain.verify(base + ["-q"]) == Sandbox.Run(status: 0, stdout: "", stderr: ""))
        // Without -r: the system anchors, here a bundle holding the root.
        #expect(
            try chain.verify(
                ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem"],
                environment: ["SECURITYSERVICES_SYSTEM_ANCHORS": "\(d)/root.pem"]) == Self.success)
    }

    @Test("failures print the result type and each failing certificate's reasons, exit 1; openssl verify agrees")
    func failures() throws {
        let chain = try Chain()
        let d = chain.dir
        let root = ["-r", "\(d)/root.pem"]
        func expectFailure(_ arguments: [String], _ lines: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let run = try chain.verify(arguments)
            #expect(run.status == 1 && run.stdout.isEmpty, "\(run)", sourceLocation: sourceLocation)
            #expect(run.stderr == lines.joined(separator: "\n") + "\n", sourceLocation: sourceLocation)
        }
        try expectFailure(
            ["-c", "\(d)/leaf.pem"] + root,
            ["Cert Verify Result: kSecTrustResultRecoverableTrustFailure", "  certificate 0 \"leaf\": missingIssuer"])
        try expectFailure(
            ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "-p", "ssl", "-n", "mail.example.com"] + root,
            ["Cert Verify Result: kSecTrustResultRecoverableTrustFailure", "  certificate 0 \"leaf\": hostnameMismatch"])
        #expect(try !chain.opensslAgrees("leaf", ["-verify_hostname", "mail.example.com"]))
        try expectFailure(
            ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "-p", "ssl", "-C"] + root,
            [
                "Cert Verify Result: kSecTrustResultRecoverableTrustFailure",
                "  certificate 0 \"leaf\": extendedKeyUsage (webPKI.leafWithoutClientAuth)",
            ])
        #expect(try !chain.opensslAgrees("leaf", ["-purpose", "sslclient"]))
        try expectFailure(
            ["-c", "\(d)/expired.pem", "-c", "\(d)/inter.pem"] + root,
            ["Cert Verify Result: kSecTrustResultRecoverableTrustFailure", "  certificate 0 \"expired\": expired"])
        #expect(try !chain.opensslAgrees("expired"))
        // -d: a date inside the expired leaf's validity makes it good; one before everything makes all not yet valid.
        #expect(try chain.verify(["-c", "\(d)/expired.pem", "-c", "\(d)/inter.pem", "-d", "2020-06-01-12:00:00"] + root) == Self.success)
        try expectFailure(
            ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "-d", "2019-06-01-12:00:00"] + root,
            [
                "Cert Verify Result: kSecTrustResultRecoverableTrustFailure", "  certificate 0 \"leaf\": notYetValid",
                "  certificate 1 \"inter\": notYetValid", "  certificate 2 \"Verify Root\": notYetValid",
            ])
        // Revocation from a CRL given offline: fatal; a required response that cannot come: recoverable.
        let crls = ["--crl", "\(d)/inter.crl", "--crl", "\(d)/root.crl"]
        try expectFailure(
            ["-c", "\(d)/revoked.pem", "-c", "\(d)/inter.pem"] + crls + root,
            ["Cert Verify Result: kSecTrustResultFatalTrustFailure", "  certificate 0 \"revoked\": revoked"])
        #expect(try !chain.opensslAgrees("revoked", ["-crl_check", "-CRLfile", "inter.crl"]))
        #expect(
            try chain.verify(
                ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "--crl", "\(d)/inter.crl.der", "--crl", "\(d)/root.crl"]
                    + root) == Self.success)
        #expect(try chain.opensslAgrees("leaf", ["-crl_check_all", "-CRLfile", "inter.crl", "-CRLfile", "root.crl"]))
        // A CRL without nextUpdate would never be stale: it settles nothing, for the good leaf and the revoked one
        // alike, instead of being current for ever.
        for leaf in ["leaf", "revoked"] {
            try expectFailure(
                ["-c", "\(d)/\(leaf).pem", "-c", "\(d)/inter.pem", "--crl", "\(d)/inter-without-next.crl", "--crl", "\(d)/root.crl"]
                    + root,
                ["Cert Verify Result: kSecTrustResultRecoverableTrustFailure", "  certificate 0 \"\(leaf)\": revocationUnavailable"])
        }
        #expect(
            try OpenSSLCLI.run(["crl", "-in", "inter-without-next.crl", "-noout", "-nextupdate"], in: chain.sandbox.directory).text
                .contains("NONE"), "openssl reads the CRL and finds no nextUpdate")
        // A CRL for the leaf's issuer alone leaves the intermediate unchecked: recoverable.
        try expectFailure(
            ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "--crl", "\(d)/inter.crl"] + root,
            ["Cert Verify Result: kSecTrustResultRecoverableTrustFailure", "  certificate 1 \"inter\": revocationUnavailable"])
        try expectFailure(
            ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "-R", "require", "-L"] + root,
            [
                "Cert Verify Result: kSecTrustResultRecoverableTrustFailure",
                "  certificate 0 \"leaf\": revocationUnavailable", "  certificate 1 \"inter\": revocationUnavailable",
            ])
        #expect(try chain.verify(["-c", "\(d)/revoked.pem", "-c", "\(d)/inter.pem", "-q"] + root).stdout.isEmpty)
    }

    @Test("--service-domain: sip: URIs without a user part first, else DNS names; exact, case-insensitive")
    func serviceDomain() throws {
        let chain = try Chain()
        let d = chain.dir
        let sip = ["-c", "\(d)/sip.pem", "-c", "\(d)/inter.pem", "-r", "\(d)/root.pem"]
        let dns = ["-c", "\(d)/leaf.pem", "-c", "\(d)/inter.pem", "-r", "\(d)/root.pem"]
        #expect(try chain.verify(sip + ["--service-domain", "example.com"]) == Self.success)
        #expect(try chain.verify(sip + ["--service-domain", "EXAMPLE.com."]) == Self.success)
        let mismatch = Sandbox.Run(
            status: 1, stdout: "",
            stderr: "Cert Verify Result: kSecTrustResultRecoverableTrustFailure\n  certificate 0 \"sip\": serviceDomainMismatch\n")
        // The DNS name does not count when sip: URIs are there, nor does a URI with a user part.
        #expect(try chain.verify(sip + ["--service-domain", "www.example.com"]) == mismatch)
        #expect(try chain.verify(sip + ["--service-domain", "other.example"]) == mismatch)
        // Without sip: URIs the DNS names count, exactly: no suffix match.
        #expect(try chain.verify(dns + ["--service-domain", "www.example.com"]) == Self.success)
        #expect(try chain.verify(dns + ["--service-domain", "example.com"]).status == 1)
        #expect(try chain.verify(dns + ["-p", "ssl", "-n", "www.example.com", "--service-domain", "example.com"]).status == 64)
    }

    @Test("usage errors and unreadable files")
    func usage() throws {
        let chain = try Chain()
        let d = chain.dir
        #expect(try chain.verify([]).status == 64)
        #expect(try chain.verify(["-c", "\(d)/leaf.pem", "-n", "www.example.com"]).status == 64)
        #expect(try chain.verify(["-c", "\(d)/leaf.pem", "-d", "yesterday"]).status == 64)
        #expect(
            try chain.verify(["-c", "\(d)/absent.pem"])
                == Sandbox.Run(status: 1, stdout: "", stderr: "security: \(d)/absent.pem: cannot read the file\n"))
        #expect(try chain.verify(["-c", "\(d)/index.txt"]).stderr.hasSuffix("not a DER or PEM certificate\n"))
    }
}
