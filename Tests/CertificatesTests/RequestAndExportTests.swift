import Certificates
import Foundation
import TestVectors
import Testing

/// A CA made by the openssl CLI, which signs the requests these tests build into certificates.
struct TestCA {
    let directory: TemporaryDirectory
    let certificate: Certificate

    init() throws {
        directory = try TemporaryDirectory("csr")
        try OpenSSLCLI.require(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
                "-out", "ca.pem", "-subj", "/CN=Request Test CA", "-days", "30", "-addext",
                "basicConstraints=critical,CA:TRUE",
            ], in: directory.url)
        certificate = try Certificate(pemEncoded: String(decoding: try directory.read("ca.pem"), as: UTF8.self))
    }

    /// Issues a certificate for `request` with `openssl x509 -req`, copying its extensions.
    func issue(_ request: CertificateSigningRequest, name: String = "leaf") throws -> Certificate {
        try request.derEncoded.write(to: directory.url.appendingPathComponent("\(name).csr"))
        try OpenSSLCLI.require(
            [
                "x509", "-req", "-inform", "DER", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "10", "-copy_extensions", "copyall", "-out", "\(name).pem",
            ], in: directory.url)
        return try Certificate(pemEncoded: String(decoding: try directory.read("\(name).pem"), as: UTF8.self))
    }
}

@Suite("PKCS#10 requests: openssl verifies and reads what is built; bad input is a typed error")
struct CertificateSigningRequestTests {
    static let keys: [@Sendable () throws -> AsymmetricKey] = [
        { try AsymmetricKey.generateRSA(bits: 2048) }, { try AsymmetricKey.generateEC(curve: .p256) },
        { try AsymmetricKey.generateEC(curve: .p384) },
    ]

    @Test("subject, SANs and challenge password: openssl req -verify accepts, -text shows each", arguments: 0..<3)
    func verifiedByOpenSSL(keyIndex: Int) throws {
        let key = try Self.keys[keyIndex]()
        let request = try CertificateSigningRequest(
            subject: try CertificateSigningRequest.NameAttribute.parse(openSSLSubject: "/C=DE/O=Example, Inc./CN=host.example.com"),
            alternativeNames: [
                .dns("host.example.com"), .dns("*.example.org"), .ipAddress("192.0.2.7"), .ipAddress("2001:db8::1"),
                .email("admin@example.com"), .uri("sip:example.com"),
            ],
            challengePassword: "enrol-me", privateKey: key)
        let ca = try TestCA()
        let dir = ca.directory
        try dir.write("request.pem", request.pemEncoded)
        let verify = try OpenSSLCLI.run(["req", "-in", "request.pem", "-verify", "-noout"], in: dir.url)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stderr.contains("verify OK"))
        let text = try OpenSSLCLI.require(["req", "-in", "request.pem", "-noout", "-text"], in: dir.url).text
        #expect(text.contains("Subject: C = DE, O = \"Example, Inc.\", CN = host.example.com"), "\(text)")
        #expect(
            text.contains(
                "DNS:host.example.com, DNS:*.example.org, IP Address:192.0.2.7, IP Address:2001:DB8:0:0:0:0:0:1, "
                    + "email:admin@example.com, URI:sip:example.com"), "\(text)")
        #expect(text.contains("challengePassword") && text.contains("enrol-me"))
        #expect(text.contains(key.type == .rsa ? "sha256WithRSAEncryption" : "ecdsa-with-SHA256"))
        // Issued by a CA, the certificate carries exactly this key and these names.
        let certificate = try ca.issue(request)
        #expect(try certificate.publicKey().externalRepresentation() == key.publicKey().externalRepresentation())
        #expect(certificate.subjectSummary == "host.example.com")
        #expect(
            certificate.subjectAlternativeNames.map(\.description) == [
                "DNS:host.example.com", "DNS:*.example.org", "IP:192.0.2.7", "IP:2001:db8:0:0:0:0:0:1",
                "email:admin@example.com", "URI:sip:example.com",
            ])
    }

    @Test("a changed byte of a request fails openssl's verification (the check above can fail)")
    func tamperedRequestFails() throws {
        let key = try AsymmetricKey.generateEC(curve: .p256)
        let request = try CertificateSigningRequest(subject: [.init("CN", "tamper.example")], privateKey: key)
        let dir = try TemporaryDirectory("csr-tamper")
        var bytes = request.derEncoded
        // The subject's last byte ('e' of "example"), inside the signed part.
        let index = try #require(bytes.lastRange(of: Data("tamper.example".utf8))).upperBound - 1
        bytes[index] ^= 0x01
        try bytes.write(to: dir.url.appendingPathComponent("bad.der"))
        let verify = try OpenSSLCLI.run(["req", "-inform", "DER", "-in", "bad.der", "-verify", "-noout"], in: dir.url)
        #expect(verify.status != 0 || !verify.stderr.contains("verify OK"), "\(verify.stderr)")
    }

    @Test("public keys, SHA-1, nothing to name, unknown attributes, bad addresses are typed errors")
    func rejections() throws {
        let key = try AsymmetricKey.generateEC(curve: .p256)
        func expectCode(_ code: CertificateError.Code, _ body: () throws -> CertificateSigningRequest) {
            do {
                _ = try body()
                Issue.record("expected \(code), got a request")
            } catch let error as CertificateError {
                #expect(error.code == code, "\(error)")
                #expect(!error.description.contains("hunter2"), "the challenge password leaked into \(error)")
            } catch {
                Issue.record("expected \(code), got \(error)")
            }
        }
        let cn: [CertificateSigningRequest.NameAttribute] = [.init("CN", "x")]
        expectCode(.signingFailed) { try CertificateSigningRequest(subject: cn, privateKey: try key.publicKey()) }
        expectCode(.signingFailed) { try CertificateSigningRequest(subject: cn, privateKey: key, digest: .sha1) }
        expectCode(.invalidName) { try CertificateSigningRequest(subject: [], privateKey: key) }
        expectCode(.invalidName) { try CertificateSigningRequest(subject: [.init("NOPE", "x")], privateKey: key) }
        expectCode(.invalidName) { try CertificateSigningRequest(subject: [.init("CN", "")], privateKey: key) }
        expectCode(.invalidName) { try CertificateSigningRequest(subject: [.init("C", "TOOLONG")], privateKey: key) }
        for bad: CertificateSigningRequest.AlternativeName in [
            .ipAddress("300.1.1.1"), .ipAddress("host.example"), .dns("bücher.example"), .dns(""),
        ] {
            expectCode(.invalidName) { try CertificateSigningRequest(subject: cn, alternativeNames: [bad], privateKey: key) }
        }
        expectCode(.invalidName) { try CertificateSigningRequest(subject: cn, challengePassword: "", privateKey: key) }
        // An alternative name alone is a valid request (RFC 5280 allows an empty subject with a SAN).
        _ = try CertificateSigningRequest(subject: [], alternativeNames: [.dns("only.example")], privateKey: key)
        // No secret in the error of a password that does encode but whose attribute type does not.
        expectCode(.invalidName) {
            try CertificateSigningRequest(subject: [.init("BAD", "x")], challengePassword: "hunter2", privateKey: key)
        }
    }

    @Test("openssl's one-line subject form: escapes, order, errors")
    func subjectParsing() throws {
        let parsed = try CertificateSigningRequest.NameAttribute.parse(openSSLSubject: "/C=US/O=A\\/B/CN=x=y")
        #expect(parsed == [.init("C", "US"), .init("O", "A/B"), .init("CN", "x=y")])
        for bad in ["CN=x", "/CN", "/=x", "/CN=x\\"] {
            #expect(throws: CertificateError(.invalidName, "")) {
                try CertificateSigningRequest.NameAttribute.parse(openSSLSubject: bad)
            }
        }
    }
}

@Suite("PKCS#12 export: openssl reads what is written, with the algorithms asked for")
struct PKCS12ExportTests {
    @Test("modern (AES-256-CBC, PBKDF2, HMAC-SHA-256) and legacy (3DES, RC2, SHA-1) files", arguments: [false, true])
    func exportReadByOpenSSL(legacy: Bool) throws {
        let ca = try TestCA()
        let key = try AsymmetricKey.generateRSA(bits: 2048)
        let leaf = try ca.issue(
            try CertificateSigningRequest(subject: [.init("CN", "Alice Example")], privateKey: key))
        let file = try PKCS12.export(
            certificate: leaf, privateKey: key, chain: [ca.certificate], passphrase: "p4ss word", label: "alice",
            legacy: legacy)
        let dir = ca.directory
        try file.write(to: dir.url.appendingPathComponent("out.p12"))
        let legacyFlag = legacy ? ["-legacy"] : []
        let run = try OpenSSLCLI.run(
            ["pkcs12", "-in", "out.p12", "-info", "-nodes", "-passin", "pass:p4ss word"] + legacyFlag, in: dir.url)
        // -info reports the algorithms on stderr and writes the PEM blocks on stdout.
        let info = (text: run.stderr + run.text, status: run.status)
        #expect(info.status == 0, "\(info.text)")
        if legacy {
            #expect(info.text.contains("MAC: sha1"))
            #expect(info.text.contains("pbeWithSHA1And40BitRC2-CBC"))
            #expect(info.text.contains("pbeWithSHA1And3-KeyTripleDES-CBC"))
        } else {
            #expect(info.text.contains("MAC: sha256"))
            #expect(info.text.contains("PBES2, PBKDF2, AES-256-CBC"))
        }
        #expect(info.text.contains("friendlyName: alice"))
        // openssl's PEM output holds both certificates and the key.
        let certificates = try Certificate.certificates(pemEncoded: info.text)
        #expect(Set(certificates) == [leaf, ca.certificate])
        // And our own import gives it all back.
        let contents = try #require(try PKCS12.parse(file, passphrase: "p4ss word"))
        #expect(contents.certificate == leaf)
        #expect(contents.chain == [ca.certificate])
        #expect(contents.label == "alice")
        #expect(contents.keyID?.count == 20)
        #expect(try contents.privateKey.externalRepresentation() == key.externalRepresentation())
        // A wrong passphrase fails openssl's MAC check.
        let wrong = try OpenSSLCLI.run(
            ["pkcs12", "-in", "out.p12", "-noout", "-passin", "pass:wrong"] + legacyFlag, in: dir.url)
        #expect(wrong.status != 0)
    }

    @Test("a key that is not the certificate's, or a public key, is refused")
    func rejections() throws {
        let ca = try TestCA()
        let key = try AsymmetricKey.generateEC(curve: .p256)
        let leaf = try ca.issue(try CertificateSigningRequest(subject: [.init("CN", "Bob")], privateKey: key))
        #expect(throws: PKCS12Error(.keyMismatch, "")) {
            try PKCS12.export(
                certificate: leaf, privateKey: try AsymmetricKey.generateEC(curve: .p256), passphrase: "x")
        }
        #expect(throws: PKCS12Error(.exportFailed, "")) {
            try PKCS12.export(certificate: leaf, privateKey: try key.publicKey(), passphrase: "x")
        }
        #expect(throws: PKCS12Error(.exportFailed, "")) {
            try PKCS12.export(certificate: leaf, privateKey: key, passphrase: "x", iterations: 0)
        }
    }

    @Test("a key held elsewhere signs and decrypts through its holder, in Swift and inside OpenSSL (requests that openssl req -verify accepts); it refuses export", arguments: [false, true])
    func heldElsewhere(ec: Bool) throws {
        let ca = try TestCA()
        let real = try ec ? AsymmetricKey.generateEC(curve: .p384) : AsymmetricKey.generateRSA(bits: 2048)
        let leaf = try ca.issue(try CertificateSigningRequest(subject: [.init("CN", "Held")], privateKey: real))
        let holder = CountingKeyHolder(real)
        let held = try AsymmetricKey(publicKey: try real.publicKey(), heldBy: holder)
        #expect(held.isPrivate && held.isHeldElsewhere && held.sizeInBits == real.sizeInBits)
        #expect(try held.publicKey().externalRepresentation() == (try real.publicKey().externalRepresentation()))
        let message = Data("held".utf8)
        let algorithm: SignatureAlgorithm = ec ? .ecdsaX962(.sha384, hashing: true) : .rsaPSS(.sha256, hashing: true)
        let signature = try held.signature(for: message, algorithm: algorithm)
        #expect(try held.isValidSignature(signature, for: message, algorithm: algorithm))
        if !ec {
            let ciphertext = try held.encrypt(message, algorithm: .rsaOAEP(.sha256))
            #expect(try held.decrypt(ciphertext, algorithm: .rsaOAEP(.sha256)) == message)
            #expect(throws: KeyError(.invalidInput, "")) { _ = try held.decrypt(message, algorithm: .rsaOAEP(.sha256)) }
        }
        let calls = holder.calls
        #expect(calls == (ec ? 1 : 2), "signing and decrypting reach the holder, verifying and encrypting do not")
        #expect(throws: KeyError(.unsupportedAlgorithm, "")) {
            _ = try held.signature(for: message, algorithm: ec ? .rsaPSS(.sha256, hashing: true) : .ecdsaX962(.sha256, hashing: true))
        }
        #expect(holder.calls == calls, "a scheme of the other key type is refused before the holder is asked")

        // Inside OpenSSL: a request signed with the held key (the holder makes the private operation).
        let request = try CertificateSigningRequest(subject: [.init("CN", "held.example")], privateKey: held)
        #expect(holder.calls == calls + 1)
        try ca.directory.write("held.pem", request.pemEncoded)
        let verify = try OpenSSLCLI.run(["req", "-in", "held.pem", "-verify", "-noout"], in: ca.directory.url)
        #expect(verify.status == 0 && verify.stderr.contains("verify OK"), "\(verify.stderr)")
        #expect(try ca.issue(request).publicKey().externalRepresentation() == (try real.publicKey().externalRepresentation()))

        #expect(throws: KeyError(.heldElsewhere, "")) { _ = try held.externalRepresentation() }
        #expect(throws: PKCS12Error(.exportFailed, "")) { _ = try PKCS12.export(certificate: leaf, privateKey: held, passphrase: "x") }
        #expect(throws: KeyError(.unsupportedAlgorithm, "")) { _ = try AsymmetricKey(publicKey: real, heldBy: holder) }
    }
}
