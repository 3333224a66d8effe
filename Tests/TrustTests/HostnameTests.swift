import Certificates
import Foundation
import Testing

@testable import Trust

/// RFC 6125 / Apple's SecDNSMatch rules (see `Hostname`), as a table of presented identifier × hostname.
@Suite struct HostnameTests {
    struct Row: Sendable, CustomStringConvertible {
        let pattern: String
        let hostname: String
        let matches: Bool
        var description: String { "\(pattern) vs \(hostname)" }
    }

    static let rows: [Row] = [
        // A wildcard is the whole left-most label and matches exactly one label.
        Row(pattern: "*.example.com", hostname: "foo.example.com", matches: true),
        Row(pattern: "*.example.com", hostname: "example.com", matches: false),
        Row(pattern: "*.example.com", hostname: "foo.bar.example.com", matches: false),
        Row(pattern: "*.*.example.com", hostname: "foo.bar.example.com", matches: false),
        Row(pattern: "foo.*.example.com", hostname: "foo.bar.example.com", matches: false),
        Row(pattern: "*", hostname: "localhost", matches: false),
        // Never directly before a public suffix (libpsl, ICANN and private sections) or a single label.
        Row(pattern: "*.com", hostname: "example.com", matches: false),
        Row(pattern: "*.co.in", hostname: "example.co.in", matches: false),
        Row(pattern: "*.co.uk", hostname: "example.co.uk", matches: false),
        Row(pattern: "*.github.io", hostname: "example.github.io", matches: false),
        Row(pattern: "*.local", hostname: "printer.local", matches: false),
        Row(pattern: "*.example.co.in", hostname: "www.example.co.in", matches: true),
        Row(pattern: "*.example.github.io", hostname: "www.example.github.io", matches: true),
        // No partial-label wildcards.
        Row(pattern: "f*.example.com", hostname: "foo.example.com", matches: false),
        Row(pattern: "*oo.example.com", hostname: "foo.example.com", matches: false),
        Row(pattern: "f*o.example.com", hostname: "foo.example.com", matches: false),
        // Case-insensitive in ASCII; a trailing dot ignored on the hostname asked for; same label count.
        Row(pattern: "www.example.com", hostname: "WWW.Example.COM", matches: true),
        Row(pattern: "WWW.EXAMPLE.COM", hostname: "www.example.com", matches: true),
        Row(pattern: "*.EXAMPLE.com", hostname: "Foo.example.COM", matches: true),
        Row(pattern: "www.example.com", hostname: "www.example.com.", matches: true),
        // A presented name that is not ASCII LDH matches nothing (OpenSSL's name-constraint check skips
        // a trailing dot, and Unicode lower-casing turns U+212A KELVIN SIGN into `k`).
        Row(pattern: "www.example.com.", hostname: "www.example.com", matches: false),
        Row(pattern: "*.example.com.", hostname: "foo.example.com", matches: false),
        Row(pattern: "ban\u{212A}.com", hostname: "bank.com", matches: false),
        Row(pattern: "www.ban\u{212A}.com", hostname: "www.bank.com", matches: false),
        Row(pattern: "www_1.example.com", hostname: "www_1.example.com", matches: false),
        Row(pattern: ".example.com", hostname: "example.com", matches: false),
        Row(pattern: "www.example.com", hostname: "example.com", matches: false),
        Row(pattern: "example.com", hostname: "www.example.com", matches: false),
        Row(pattern: "www.example.com", hostname: "www.example.com..", matches: false),
        Row(pattern: "www..example.com", hostname: "www..example.com", matches: false),
        // IDNA: A-labels compared as ASCII; U-labels are never compared.
        Row(pattern: "xn--bcher-kva.example", hostname: "XN--BCHER-KVA.example", matches: true),
        Row(pattern: "*.example.com", hostname: "xn--bcher-kva.example.com", matches: true),
        Row(pattern: "bücher.example", hostname: "bücher.example", matches: false),
        Row(pattern: "xn--bcher-kva.example", hostname: "bücher.example", matches: false),
        // A hostname is never a pattern.
        Row(pattern: "*.example.com", hostname: "*.example.com", matches: false),
        Row(pattern: "", hostname: "example.com", matches: false),
    ]

    @Test("DNS identifier matching", arguments: rows)
    func dnsTable(_ row: Row) {
        #expect(Hostname.matches(pattern: row.pattern, hostname: row.hostname) == row.matches, "\(row)")
    }

    @Test("IP addresses parse to their bytes; other text does not")
    func ipAddresses() {
        #expect(Hostname.ipAddress("192.0.2.1") == [192, 0, 2, 1])
        #expect(Hostname.ipAddress("2001:db8::1") == [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])
        #expect(Hostname.ipAddress("[::1]") == [UInt8](repeating: 0, count: 15) + [1])
        #expect(Hostname.ipAddress("192.0.2") == nil)
        #expect(Hostname.ipAddress("192.0.2.256") == nil)
        #expect(Hostname.ipAddress("example.com") == nil)
    }

    /// Certificates made by `openssl ca`: the leaf's names decide, through the SSL server policy.
    @Test("SAN DNS, then SAN IP; the CN only without any SAN")
    func certificateNames() throws {
        let pki = try TestPKI()
        let root = try pki.issue(
            "root", subject: "/O=Hostname Tests/CN=Root", issuer: nil,
            extensions: TestPKI.caExtensions(selfSigned: true))
        func leaf(_ name: String, cn: String, san: String?) throws -> Certificate {
            try pki.issue(
                name, subject: "/O=Hostname Tests/CN=\(cn)", issuer: "root",
                extensions: TestPKI.leafExtensions(subjectAltName: san))
        }
        let dns = try leaf("dns", cn: "cn.example.net", san: "DNS:www.example.com, DNS:*.example.org")
        let ip = try leaf(
            "ip", cn: "192.0.2.7", san: "IP:192.0.2.1, IP:2001:db8::1, DNS:ip.example.com, DNS:198.51.100.1")
        let legacy = try leaf("legacy", cn: "legacy.example.com", san: nil)
        let legacyIP = try leaf("legacyip", cn: "203.0.113.5", san: nil)
        let uriOnly = try leaf("uri", cn: "uri.example.com", san: "URI:https://uri.example.com/")

        let table: [(Certificate, String, Bool)] = [
            (dns, "www.example.com", true), (dns, "WWW.EXAMPLE.COM.", true), (dns, "foo.example.org", true),
            (dns, "example.org", false), (dns, "cn.example.net", false),
            (ip, "192.0.2.1", true), (ip, "2001:db8:0:0:0:0:0:1", true), (ip, "[2001:db8::1]", true),
            (ip, "192.0.2.2", false), (ip, "2001:db8::2", false), (ip, "192.0.2.7", false),
            (ip, "ip.example.com", true), (ip, "198.51.100.1", false),
            (legacy, "legacy.example.com", true), (legacy, "LEGACY.example.com.", true),
            (legacy, "other.example.com", false),
            (legacyIP, "203.0.113.5", true), (legacyIP, "203.0.113.6", false),
            (uriOnly, "uri.example.com", false),
        ]
        for (leaf, hostname, matches) in table {
            // The certificate manager's option: the CN stands in when there is no SAN at all.
            let result = try TrustEvaluator(
                anchors: [root], policies: [.sslServerWithCommonNameFallback(hostname: hostname)],
                verificationDate: midValidity
            ).evaluate(leaf)
            #expect(result.isTrusted == matches, "\(leaf) vs \(hostname): \(result)")
            if !matches {
                #expect(result.statuses[0].reasons == [.hostnameMismatch], "\(hostname)")
                #expect(result.outcome == .recoverableTrustFailure)
            }
            #expect(result.chain == [leaf, root])
        }
        // The SSL policy never falls back to the CN (as on modern Apple platforms): a leaf without SAN matches
        // no hostname.
        for (leaf, hostname) in [(legacy, "legacy.example.com"), (legacyIP, "203.0.113.5")] {
            let result = try TrustEvaluator(
                anchors: [root], policies: [.sslServer(hostname: hostname)], verificationDate: midValidity
            ).evaluate(leaf)
            #expect(result.statuses[0].reasons == [.hostnameMismatch], "\(hostname): \(result)")
        }
        // Without a hostname the leaves with a SAN pass the SSL policy; one without any SAN breaks the web-PKI
        // profile (BR 7.1.2.7.12) whatever name is asked for.
        for leaf in [dns, ip, uriOnly] {
            #expect(
                try TrustEvaluator(anchors: [root], policies: [.sslServer()], verificationDate: midValidity)
                    .evaluate(leaf).isTrusted)
        }
        for leaf in [legacy, legacyIP] {
            let result = try TrustEvaluator(anchors: [root], policies: [.sslServer()], verificationDate: midValidity)
                .evaluate(leaf)
            #expect(result.statuses[0].rules == ["webPKI.leafWithoutSubjectAltName"], "\(result)")
            #expect(result.outcome == .recoverableTrustFailure)
        }
    }

    @Test("A hostname that is neither a DNS name nor an address is a setup error")
    func invalidHostname() throws {
        let pki = try TestPKI()
        let root = try pki.issue(
            "root", subject: "/CN=Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        for hostname in ["", "a..b", "*.example.com", "exa mple.com"] {
            #expect(throws: TrustError(.invalidHostname, "")) {
                try TrustEvaluator(anchors: [root], policies: [.sslServer(hostname: hostname)]).evaluate(root)
            }
        }
    }
}
