import Certificates
import Foundation
import TestVectors
import Testing

@Suite("Certificate: parsing, rejection, generated fixtures")
struct CertificateParsingTests {
    let fixtures: GeneratedFixtures
    init() throws { fixtures = try GeneratedFixtures() }

    func expectCode(_ code: CertificateError.Code, _ body: () throws -> Certificate) {
        do {
            _ = try body()
            Issue.record("expected CertificateError.\(code), got a certificate")
        } catch let error as CertificateError {
            #expect(error.code == code, "\(error)")
        } catch {
            Issue.record("expected CertificateError.\(code), got \(error)")
        }
    }

    @Test(
        "exactly one DER certificate: trailing bytes, PEM, truncation, empty, garbage, two certificates are rejected"
    )
    func rejection() throws {
        let der = try fixtures.der("leaf")
        let ca = try fixtures.der("ca")
        #expect(try Certificate(derEncoded: der).derEncoded == der)
        expectCode(.trailingData) { try Certificate(derEncoded: der + [0]) }
        expectCode(.trailingData) { try Certificate(derEncoded: der + ca) }
        expectCode(.malformedDER) { try Certificate(derEncoded: Data(try fixtures.pem("leaf").utf8)) }
        expectCode(.malformedDER) { try Certificate(derEncoded: Data()) }
        for cut in [1, 2, 4, 10, der.count / 2, der.count - 1] {
            expectCode(.malformedDER) { try Certificate(derEncoded: der.prefix(cut)) }
        }
        var generator = SystemRandomNumberGenerator()
        for length in [1, 16, 100, 1000, 4096] {
            let random = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            expectCode(.malformedDER) { try Certificate(derEncoded: random) }
        }
        // A flipped byte anywhere either still parses (a value byte) or is rejected; it never traps.
        for index in stride(from: 0, to: der.count, by: 7) {
            var mutated = der
            mutated[mutated.startIndex + index] ^= 0xFF
            _ = try? Certificate(derEncoded: mutated)
        }
        // An array slice (non-zero start index) and a plain byte array are read the same.
        #expect(try Certificate(derEncoded: (Data([9]) + der).dropFirst()).derEncoded == der)
        #expect(
            try Certificate(derEncoded: [UInt8](der)).sha256Fingerprint
                == Certificate(derEncoded: der).sha256Fingerprint)
    }

    @Test("PEM: exactly one CERTIFICATE block; text around it is allowed; chains read with certificates(pemEncoded:)")
    func pem() throws {
        let leaf = try fixtures.pem("leaf")
        let ca = try fixtures.pem("ca")
        #expect(try Certificate(pemEncoded: leaf).derEncoded == fixtures.der("leaf"))
        #expect(
            try Certificate(pemEncoded: "explanatory text\n" + leaf + "trailing text\n").derEncoded
                == fixtures.der("leaf"))
        expectCode(.malformedPEM) { try Certificate(pemEncoded: leaf + ca) }
        expectCode(.malformedPEM) { try Certificate(pemEncoded: "") }
        expectCode(.malformedPEM) { try Certificate(pemEncoded: "no pem here") }
        expectCode(.malformedPEM) {
            try Certificate(pemEncoded: "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n")
        }
        let key = String(decoding: try fixtures.directory.read("leaf.key"), as: UTF8.self)
        expectCode(.malformedPEM) { try Certificate(pemEncoded: key) }
        let chain = try Certificate.certificates(pemEncoded: leaf + key + ca)
        #expect(chain.map(\.derEncoded) == [try fixtures.der("leaf"), try fixtures.der("ca")])
        // A block whose contents are not one certificate.
        let wrapped =
            "-----BEGIN CERTIFICATE-----\n" + (try fixtures.der("leaf") + [0]).base64EncodedString()
            + "\n-----END CERTIFICATE-----\n"
        expectCode(.trailingData) { try Certificate(pemEncoded: wrapped) }
    }

    @Test("CA and leaf: summary fallbacks, e-mail, SANs, CA flag, key usage, SKID, public key hash, names")
    func fields() throws {
        let dir = fixtures.directory
        let ca = try Certificate(pemEncoded: try fixtures.pem("ca"))
        let leaf = try Certificate(pemEncoded: try fixtures.pem("leaf"))

        #expect(ca.isCertificateAuthority && ca.pathLengthConstraint == 1)
        #expect(ca.keyUsage == [.keyCertSign, .crlSign])
        #expect(ca.subjectSummary == "Example Root CA")
        #expect(ca.commonNames == ["Example Root CA"])
        #expect(ca.publicKeyAlgorithm == "1.2.840.10045.2.1" && ca.publicKeySizeInBits == 256 && ca.publicKeyCurveName == "prime256v1")
        #expect(ca.version == 3)
        #expect(ca.subject == ca.issuer)
        #expect(ca.issuerSummary == "Example Root CA")

        #expect(!leaf.isCertificateAuthority && leaf.pathLengthConstraint == nil)
        #expect(leaf.keyUsage == [.digitalSignature, .keyEncipherment])
        #expect(
            leaf.extendedKeyUsage == [Certificate.ExtendedKeyUsage.serverAuth, Certificate.ExtendedKeyUsage.clientAuth])
        #expect(leaf.publicKeyAlgorithm == "1.2.840.113549.1.1.1" && leaf.publicKeySizeInBits == 2048 && leaf.publicKeyCurveName == nil)
        // No CN: the organizational units, most desired after CN, in reverse order.
        #expect(leaf.commonNames.isEmpty)
        #expect(leaf.subjectSummary == "Unit Two, Unit One")
        #expect(leaf.issuerSummary == "Example Root CA")
        #expect(leaf.emailAddresses == ["san@example.com", "subject@example.com"])
        #expect(
            leaf.subjectAlternativeNames.map(\.description) == [
                "DNS:www.example.com", "DNS:example.com", "IP:192.0.2.1", "IP:2001:db8:0:0:0:0:0:1",
                "email:san@example.com",
                "URI:https://example.com/x",
            ])
        #expect(leaf.subjectAlternativeNames[3].encoded.count == 16)
        #expect(leaf.serialNumber == Data([0x00, 0xFF, 0x01]))
        #expect(leaf.subject.attributes.map { $0.shortName ?? "" } == ["C", "O", "OU", "OU", "emailAddress"])
        #expect(leaf.subject.attributes.map(\.rdnIndex) == [0, 1, 2, 3, 4])
        #expect(leaf.issuer.derEncoded == ca.subject.derEncoded)
        #expect(leaf.issuer.normalizedEncoded == ca.subject.normalizedEncoded)
        #expect(leaf.authorityKeyIdentifier == ca.subjectKeyIdentifier)

        for (name, certificate) in [("ca", ca), ("leaf", leaf)] {
            let skid = try OpenSSLCLI.require(
                ["x509", "-in", "\(name).pem", "-noout", "-ext", "subjectKeyIdentifier"], in: dir.url
            ).text
            let hexLine = try #require(skid.split(separator: "\n").last)
            #expect(certificate.subjectKeyIdentifier == OpenSSLCLI.hexBytes(hexLine))
            let independent = try OpenSSLCLI.publicKeyHash(certificate: "\(name).pem", in: dir.url)
            #expect(certificate.publicKeyHash == independent.hash)
            #expect(certificate.subjectPublicKeyInfo == independent.spki)
            let sha1 = try OpenSSLCLI.require(
                ["x509", "-in", "\(name).pem", "-noout", "-fingerprint", "-sha1"], in: dir.url
            ).text
            #expect(certificate.sha1Fingerprint == OpenSSLCLI.hexBytes(sha1.split(separator: "=")[1]))
        }

        let multi = try Certificate(pemEncoded: try fixtures.pem("multicn"))
        #expect(multi.commonNames == ["first name", "second name"])
        #expect(multi.subjectSummary == "second name, first name (the description)")
        #expect(multi.serialNumber == Data([2]))
        #expect(multi.keyUsage == nil && multi.extendedKeyUsage == nil)

        let emailOnly = try Certificate(pemEncoded: try fixtures.pem("emailonly"))
        #expect(emailOnly.subject.attributes.isEmpty)
        #expect(emailOnly.subjectSummary == "only@example.com")
        #expect(emailOnly.emailAddresses == ["only@example.com"])
        let dnsOnly = try Certificate(pemEncoded: try fixtures.pem("dnsonly"))
        #expect(dnsOnly.subjectSummary == "only.example.com")
        #expect(dnsOnly.emailAddresses.isEmpty)
    }

    @Test("normalized names: case, surrounding and repeated whitespace do not matter; other values do")
    func normalization() throws {
        let dir = fixtures.directory.url
        var names: [Data] = []
        for (index, subject) in ["/O=Example  Org/CN=Alice", "/O=  example org /CN=ALICE", "/O=Example Org/CN=Bob"]
            .enumerated()
        {
            try OpenSSLCLI.require(
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                    "n\(index).key",
                    "-out", "n\(index).pem", "-days", "1", "-subj", subject,
                ], in: dir)
            let certificate = try Certificate(
                pemEncoded: String(decoding: try fixtures.directory.read("n\(index).pem"), as: UTF8.self))
            names.append(certificate.subject.normalizedEncoded)
        }
        #expect(names[0] == names[1])
        #expect(names[0] != names[2])
        // It is DER: a SEQUENCE whose length covers exactly the bytes.
        #expect(names[0].first == 0x30)
        #expect(try Certificate(pemEncoded: try fixtures.pem("leaf")).subject.normalizedEncoded.count > 10)
    }
}
