import Foundation
import Synchronization
import TestVectors
import Testing

/// `openssl` in a sandbox's directory, as a ``Sandbox/Run``.
private func openssl(_ arguments: [String], in sandbox: Sandbox) throws -> Sandbox.Run {
    let output = try OpenSSLCLI.run(arguments, in: sandbox.directory)
    return Sandbox.Run(status: output.status, stdout: output.text, stderr: output.stderr)
}

@discardableResult
private func requireOpenSSL(_ arguments: [String], in sandbox: Sandbox) throws -> String {
    let run = try openssl(arguments, in: sandbox)
    #expect(run.status == 0, "openssl \(arguments): \(run.stderr)")
    return run.stdout
}

/// "SHA1 Fingerprint=AB:CD:…" as "ABCD…".
private func fingerprint(_ file: String, _ digest: String, in sandbox: Sandbox) throws -> String {
    let line = try requireOpenSSL(["x509", "-in", file, "-noout", "-fingerprint", "-\(digest)"], in: sandbox)
    return String(line.split(separator: "=").last ?? "").replacingOccurrences(of: ":", with: "")
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite("security command: keys, requests, certificates and identities")
struct CertificateCommandTests {
    /// A CA made by openssl in the sandbox (ca.pem, ca.key).
    func makeCA(_ sandbox: Sandbox) throws {
        try requireOpenSSL(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-subj",
                "/CN=Command Test CA", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
            ], in: sandbox)
    }

    @Test("create-keypair, create-csr, import, find-identity, find-certificate, export, delete-identity, re-import")
    func identityLifecycle() throws {
        let sandbox = try Sandbox()
        let kc = sandbox.keychain
        try makeCA(sandbox)
        try sandbox.expectSilentSuccess("create-keypair", "-a", "ec", "-s", "256", "alice-key")
        #expect(
            try sandbox.security("create-keypair", "alice-key")
                == Sandbox.Run(
                    status: 45, stdout: "",
                    stderr: "security: SecKeyCreateRandomKey (\(kc)): \(SecurityCommandTests.duplicate)"))

        // The request: made with the keychain key, verified and read by openssl.
        let csr = try sandbox.security(
            "create-csr", "alice-key", "-s", "/O=Example/CN=alice.example.com", "--dns", "alice.example.com",
            "--ip", "192.0.2.10", "--challenge", "letmein")
        #expect(csr.status == 0 && csr.stderr.isEmpty, "\(csr)")
        #expect(csr.stdout.hasPrefix("-----BEGIN CERTIFICATE REQUEST-----\n"))
        try Data(csr.stdout.utf8).write(to: sandbox.directory.appendingPathComponent("alice.csr"))
        let verified = try openssl(["req", "-in", "alice.csr", "-verify", "-noout", "-text"], in: sandbox)
        #expect(verified.status == 0 && verified.stderr.contains("verify OK"), "\(verified)")
        #expect(verified.stdout.contains("Subject: O = Example, CN = alice.example.com"))
        #expect(verified.stdout.contains("DNS:alice.example.com, IP Address:192.0.2.10"))
        #expect(verified.stdout.contains("ecdsa-with-SHA256"))
        try requireOpenSSL(
            [
                "x509", "-req", "-in", "alice.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days",
                "10", "-copy_extensions", "copyall", "-out", "alice.pem",
            ], in: sandbox)
        let sha1 = try fingerprint("alice.pem", "sha1", in: sandbox)
        let sha256 = try fingerprint("alice.pem", "sha256", in: sandbox)
        #expect(sha1.count == 40 && sha256.count == 64)

        // The certificate joins the key: an identity.
        let dir = sandbox.directory.path
        #expect(
            try sandbox.security("import", "\(dir)/ca.pem")
                == Sandbox.Run(status: 0, stdout: "1 certificate imported.\n", stderr: ""))
        #expect(
            try sandbox.security("import", "\(dir)/alice.pem", "-f", "x509")
                == Sandbox.Run(status: 0, stdout: "1 certificate imported.\n", stderr: ""))
        #expect(
            try sandbox.security("import", "\(dir)/alice.pem")
                == Sandbox.Run(
                    status: 45, stdout: "",
                    stderr: "security: SecKeychainItemImport: \(SecurityCommandTests.duplicate)"))
        // Valid means trusted: the test CA is no anchor, until the administrator's anchors hold it.
        let untrusted = """
            Policy: X.509 Basic
              Matching identities
              1) \(sha1) "alice.example.com" (CSSMERR_TP_NOT_TRUSTED)
                 1 identities found

              Valid identities only
                 0 valid identities found

            """
        #expect(try sandbox.security("find-identity") == Sandbox.Run(status: 0, stdout: untrusted, stderr: ""))
        let anchors = sandbox.directory.appendingPathComponent("anchors")
        try FileManager.default.createDirectory(at: anchors, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "\(dir)/ca.pem", toPath: anchors.appendingPathComponent("ca.pem").path)
        let listing = """
            Policy: X.509 Basic
              Matching identities
              1) \(sha1) "alice.example.com"
                 1 identities found

              Valid identities only
              1) \(sha1) "alice.example.com"
                 1 valid identities found

            """
        #expect(
            try sandbox.run(["find-identity", kc], environment: ["SECURITYSERVICES_ADMIN_ANCHORS": anchors.path])
                == Sandbox.Run(status: 0, stdout: listing, stderr: ""))

        // find-certificate: hashes as openssl computes them, PEM as the file holds it.
        let found = try sandbox.security("find-certificate", "-c", "alice", "-Z", "-p")
        let pem = try String(contentsOfFile: "\(dir)/alice.pem", encoding: .utf8)
        #expect(found == Sandbox.Run(status: 0, stdout: "SHA-256 hash: \(sha256)\nSHA-1 hash: \(sha1)\n\(pem)", stderr: ""))
        let all = try sandbox.security("find-certificate", "-a", "-p")
        #expect(all.stdout.components(separatedBy: "-----BEGIN CERTIFICATE-----").count == 3)
        #expect(try sandbox.security("find-certificate", "-e", "nobody@example.com") == SecurityCommandTests.notFound)
        let attributes = try sandbox.security("find-certificate", "-c", "Command Test CA")
        #expect(attributes.stdout.contains("class: \"cert\"") && attributes.stdout.contains("=\"Command Test CA\""))

        // export: a PKCS#12 file openssl opens with the passphrase, holding the leaf, the CA and the key.
        let export = try sandbox.security("export", "-t", "identities", "-P", "pass phrase", "-o", "\(dir)/alice.p12")
        #expect(export == Sandbox.Run(status: 0, stdout: "", stderr: ""))
        let mode = try FileManager.default.attributesOfItem(atPath: "\(dir)/alice.p12")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // No byte of the file is readable by others at any moment: an existing file (here a FIFO made 0644, which
        // shows the first byte as it is written) is made 0600 before the first byte arrives.
        let fifo = "\(dir)/watched.p12"
        try #require(mkfifo(fifo, 0o644) == 0)
        chmod(fifo, 0o644)
        let modeAtFirstByte = Mutex<Int?>(nil)
        let reader = Thread {
            let fd = open(fifo, O_RDONLY)
            var byte: UInt8 = 0
            if read(fd, &byte, 1) == 1 {
                var status = stat()
                stat(fifo, &status)
                modeAtFirstByte.withLock { $0 = Int(status.st_mode & 0o777) }
            }
            while read(fd, &byte, 1) == 1 {}
            close(fd)
        }
        reader.start()
        let watched = try sandbox.security("export", "-t", "identities", "-P", "pass phrase", "-o", fifo)
        #expect(watched.status == 0, "\(watched)")
        for _ in 0..<100 where modeAtFirstByte.withLock({ $0 }) == nil { usleep(10_000) }
        #expect(modeAtFirstByte.withLock { $0 } == 0o600)
        let opened = try requireOpenSSL(
            ["pkcs12", "-in", "alice.p12", "-passin", "pass:pass phrase", "-nodes"], in: sandbox)
        #expect(opened.components(separatedBy: "-----BEGIN CERTIFICATE-----").count == 3)
        #expect(opened.contains("-----BEGIN PRIVATE KEY-----"))
        #expect(opened.contains("friendlyName: alice-key"))
        // Without -P (a secret on argv is visible to ps) the passphrase is one line of standard
        // input (a prompt without echo on a terminal).
        let piped = try sandbox.run(["export", "-t", "identities", "-o", "\(dir)/alice-stdin.p12", kc], input: "stdin phrase\n")
        #expect(piped == Sandbox.Run(status: 0, stdout: "", stderr: ""), "\(piped)")
        _ = try requireOpenSSL(["pkcs12", "-in", "alice-stdin.p12", "-passin", "pass:stdin phrase", "-nodes"], in: sandbox)
        let challenged = try sandbox.run(
            ["create-csr", "alice-key", "-s", "/CN=challenged", "--challenge-stdin", "-o", "\(dir)/challenged.pem", kc],
            input: "s3cr3t phrase\n")
        #expect(challenged.status == 0, "\(challenged)")
        let request = try openssl(["req", "-in", "challenged.pem", "-noout", "-text"], in: sandbox).stdout
        #expect(request.contains("challengePassword") && request.contains("s3cr3t phrase"), "\(request)")

        // delete-identity removes the certificate and the key; the CA stays.
        try sandbox.expectSilentSuccess("delete-identity", "-Z", sha1.lowercased())
        #expect(try sandbox.security("find-certificate", "-c", "alice") == SecurityCommandTests.notFound)
        #expect(
            try sandbox.security("create-csr", "alice-key", "-s", "/CN=x")
                == SecurityCommandTests.notFound)
        #expect(try sandbox.security("find-certificate", "-c", "Command Test CA").status == 0)

        // A wrong passphrase imports nothing; the right one gives the identity back (the CA is already there).
        #expect(
            try sandbox.security("import", "\(dir)/alice.p12", "-P", "wrong")
                == Sandbox.Run(
                    status: 51, stdout: "",
                    stderr: "security: SecKeychainItemImport: The user name or passphrase you entered is not correct.\n"))
        #expect(try sandbox.security("find-identity").stdout.contains("0 identities found"))
        #expect(
            try sandbox.run(["import", "\(dir)/alice.p12", kc], input: "pass phrase\n")
                == Sandbox.Run(status: 0, stdout: "1 identity imported.\n", stderr: ""))
        #expect(
            try sandbox.run(
                ["find-identity", "-v", "-s", "alice", kc], environment: ["SECURITYSERVICES_ADMIN_ANCHORS": anchors.path]
            ).stdout.contains("1) \(sha1) \"alice.example.com\""))
        // The imported key signs again: a request made with it verifies.
        let again = try sandbox.security("create-csr", "alice-key", "-s", "/CN=again", "-f", "der", "-o", "\(dir)/again.der")
        #expect(again.status == 0, "\(again)")
        #expect(
            try openssl(["req", "-inform", "DER", "-in", "again.der", "-verify", "-noout"], in: sandbox).stderr
                .contains("verify OK"))
    }

    @Test("selection and format errors: ambiguous -c, unknown files, bad subjects, missing passphrase")
    func errors() throws {
        let sandbox = try Sandbox()
        let dir = sandbox.directory.path
        try makeCA(sandbox)
        try requireOpenSSL(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.pem", "-subj",
                "/CN=Command Test CA 2", "-days", "30",
            ], in: sandbox)
        #expect(try sandbox.security("import", "\(dir)/ca.pem").status == 0)
        #expect(try sandbox.security("import", "\(dir)/other.pem").status == 0)
        let ambiguous = try sandbox.security("delete-certificate", "-c", "Command Test CA")
        #expect(ambiguous.status == 1)
        #expect(ambiguous.stderr == "security: Command Test CA is ambiguous: 2 certificates match; select one with -Z hash\n")
        #expect(try sandbox.security("find-certificate", "-a", "-p").stdout.components(separatedBy: "BEGIN CERT").count == 3)
        try sandbox.expectSilentSuccess("delete-certificate", "-c", "Command Test CA 2")
        #expect(try sandbox.security("find-certificate", "-a", "-p").stdout.components(separatedBy: "BEGIN CERT").count == 2)
        #expect(try sandbox.security("delete-certificate", "-Z", String(repeating: "0", count: 40)) == SecurityCommandTests.notFound)

        try Data("not a certificate".utf8).write(to: sandbox.directory.appendingPathComponent("junk.pem"))
        let junk = try sandbox.security("import", "\(dir)/junk.pem")
        #expect(junk.status != 0 && junk.stderr.hasPrefix("security: SecKeychainItemImport: "))
        let missing = try sandbox.security("import", "\(dir)/absent.pem")
        #expect(missing == Sandbox.Run(status: 1, stdout: "", stderr: "security: \(dir)/absent.pem: cannot read the file\n"))

        try sandbox.expectSilentSuccess("create-keypair", "-a", "rsa", "-s", "2048", "k")
        #expect(try sandbox.security("create-csr", "k", "-s", "CN=no-slash").status == 64)
        let badName = try sandbox.security("create-csr", "k", "-s", "/CN=x", "--ip", "999.1.1.1", "--challenge", "s3cr3t")
        #expect(badName.status == 1)
        #expect(badName.stderr.contains("IP:999.1.1.1") && !badName.stderr.contains("s3cr3t"))
        #expect(try sandbox.security("create-keypair", "-a", "ec", "-s", "255", "k2").status != 0)
        #expect(try sandbox.security("export", "-t", "identities").status == 64)
        #expect(try sandbox.security("export", "-t", "certs", "-f", "pkcs12").status == 64)
        // export of certificates: one as DER (x509), several as a PEM sequence.
        let der = try sandbox.run(["export", "-t", "certs", "-f", "x509", "-c", "Command Test CA", "-o", "\(dir)/ca.der", sandbox.keychain])
        #expect(der.status == 0, "\(der)")
        let derText = try requireOpenSSL(["x509", "-inform", "DER", "-in", "ca.der", "-noout", "-subject"], in: sandbox)
        #expect(derText == "subject=CN = Command Test CA\n")
    }
}
