import Certificates
import Foundation
import Testing

@testable import Trust

/// RFC 5922 §7 SIP domain matching (see `ServiceDomain`) on certificates made by `openssl ca`.
@Suite("SIP service domain (RFC 5922)")
struct ServiceDomainTests {
    struct Row: Sendable, CustomStringConvertible {
        /// The leaf's subjectAltName line (nil: no SAN extension).
        let subjectAltName: String?
        let commonName: String
        let domain: String
        let matches: Bool
        var description: String { "SAN \(subjectAltName ?? "none") CN \(commonName) vs \(domain)" }
    }

    static let rows: [Row] = [
        // A sip: URI without a user part wins over the DNS SANs.
        Row(
            subjectAltName: "URI:sip:sip.example.com, DNS:example.com", commonName: "cn.example",
            domain: "sip.example.com", matches: true),
        Row(
            subjectAltName: "URI:sip:sip.example.com, DNS:example.com", commonName: "cn.example", domain: "example.com",
            matches: false),
        // Port and parameters are not part of the domain.
        Row(
            subjectAltName: "URI:sip:sip.example.com:5061;transport=tls", commonName: "x", domain: "sip.example.com",
            matches: true),
        // A sip: URI with a user part is ignored: the DNS SANs count.
        Row(
            subjectAltName: "URI:sip:alice@example.com, DNS:example.com", commonName: "x", domain: "example.com",
            matches: true),
        Row(
            subjectAltName: "URI:sip:alice@example.com", commonName: "example.com", domain: "example.com",
            matches: false),
        // Another scheme is ignored.
        Row(
            subjectAltName: "URI:https://example.org/, DNS:example.com", commonName: "x", domain: "example.com",
            matches: true),
        Row(
            subjectAltName: "URI:sips:example.org, DNS:example.com", commonName: "x", domain: "example.org",
            matches: false),
        // DNS SANs: exact, case-insensitive, trailing dot ignored, no wildcard, no suffix match.
        Row(subjectAltName: "DNS:Example.COM", commonName: "x", domain: "example.com", matches: true),
        Row(subjectAltName: "DNS:example.com", commonName: "x", domain: "EXAMPLE.com.", matches: true),
        Row(subjectAltName: "DNS:*.example.com", commonName: "x", domain: "foo.example.com", matches: false),
        Row(subjectAltName: "DNS:example.com", commonName: "x", domain: "foo.example.com", matches: false),
        Row(subjectAltName: "DNS:foo.example.com", commonName: "x", domain: "example.com", matches: false),
        Row(subjectAltName: "URI:sip:*.example.com", commonName: "x", domain: "foo.example.com", matches: false),
        // The CN only when there is no SAN at all.
        Row(subjectAltName: nil, commonName: "Example.com", domain: "example.com", matches: true),
        Row(subjectAltName: nil, commonName: "*.example.com", domain: "foo.example.com", matches: false),
        Row(subjectAltName: "IP:192.0.2.1", commonName: "example.com", domain: "example.com", matches: false),
    ]

    @Test("presented identity × domain", arguments: rows.indices)
    func table(_ index: Int) throws {
        let row = Self.rows[index]
        let pki = try TestPKI()
        try pki.issue(
            "root", subject: "/CN=Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let leaf = try pki.issue(
            "leaf", subject: "/CN=\(row.commonName)", issuer: "root",
            extensions: TestPKI.leafExtensions(subjectAltName: row.subjectAltName))
        #expect(ServiceDomain.matches(leaf, domain: row.domain) == row.matches, "\(row)")
    }

    @Test("the identities come from the first non-empty source")
    func identities() throws {
        let pki = try TestPKI()
        try pki.issue("root", subject: "/CN=Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let leaf = try pki.issue(
            "leaf", subject: "/CN=cn.example", issuer: "root",
            extensions: TestPKI.leafExtensions(subjectAltName: "DNS:a.example, URI:sip:b.example, URI:sip:u@c.example"))
        #expect(ServiceDomain.identities(of: leaf) == ["b.example"])
        #expect(ServiceDomain.sipDomain(ofURI: "SIP:Host.example;lr") == "Host.example")
        #expect(ServiceDomain.sipDomain(ofURI: "sip:") == nil)
        #expect(ServiceDomain.matches(leaf, domain: "") == false)
    }
}
