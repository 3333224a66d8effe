import Certificates
import Foundation
import Testing

@testable import Trust

/// RFC 5280 4.2.1.10, rule by rule: a root, an intermediate carrying the constraints, a leaf carrying the names,
/// all made by `openssl ca`. Every refusal is the fatal `nameConstraints` reason on the certificate whose name is
/// outside the constraints.
@Suite("Name constraints (RFC 5280 4.2.1.10), evaluated by us")
struct NameConstraintTests {
    /// One PKI per test: the root, then an intermediate and a leaf per case (keys shared to keep it quick).
    final class Fixture {
        let pki: TestPKI
        let root: Certificate
        private var count = 0

        init() throws {
            pki = try TestPKI()
            root = try pki.issue(
                "root", subject: "/CN=NC Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        }

        /// The evaluation of a leaf with `san` (nil: no SAN) and `subject`, under an intermediate with
        /// `constraints` (an openssl nameConstraints value; `sections` appended to the extension file).
        func evaluate(
            constraints: String, critical: Bool = true, sections: String = "", san: String?,
            subject: String = "/CN=Leaf", policy: TrustPolicy = .basicX509
        ) throws -> TrustResult {
            count += 1
            let intermediate = try pki.issue(
                "ica\(count)", subject: "/CN=NC Intermediate \(count)", issuer: "root", key: "ica",
                extensions: TestPKI.caExtensions(
                    extra: "nameConstraints = \(critical ? "critical, " : "")\(constraints)\n\(sections)"))
            let leaf = try pki.issue(
                "leaf\(count)", subject: subject, issuer: "ica\(count)", issuerKey: "ica", key: "leaf",
                extensions: TestPKI.leafExtensions(subjectAltName: san))
            return try TrustEvaluator(anchors: [root], policies: [policy], verificationDate: midValidity)
                .evaluate(leaf, intermediates: [intermediate])
        }

        /// Expects `result` trusted, or refused for the leaf's name constraints alone (fatal).
        func expect(
            _ result: TrustResult, allowed: Bool, _ comment: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            if allowed {
                #expect(result.isTrusted, "\(comment): \(result)", sourceLocation: sourceLocation)
            } else {
                #expect(
                    result.statuses[0].reasons == [.nameConstraints], "\(comment): \(result)",
                    sourceLocation: sourceLocation)
                #expect(result.outcome == .fatalTrustFailure, "\(comment)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("dNSName: a permitted subtree holds the name and its subdomains, whole labels, any ASCII case")
    func dnsPermitted() throws {
        let f = try Fixture()
        for (san, allowed) in [
            ("DNS:example.com", true), ("DNS:www.example.com", true), ("DNS:WWW.EXAMPLE.COM", true),
            ("DNS:a.b.example.com", true), ("DNS:www.example.org", false), ("DNS:notexample.com", false),
            ("DNS:www.example.com, DNS:www.example.org", false),
        ] {
            f.expect(try f.evaluate(constraints: "permitted;DNS:example.com", san: san), allowed: allowed, san)
        }
    }

    /// RFC 5280 4.2.1.10 gives the leading period to URIs and rfc822Names; a dNSName
    /// constraint is "host.example.com", to which labels are added on the left. `.example.com` is no DNS name: the
    /// constraint cannot be read, and everything below it fails — excluded as well as permitted, so that an
    /// exclusion written that way does not vanish.
    @Test("dNSName: a constraint with a leading period (the URI form) cannot be read: every certificate below fails")
    func dnsLeadingDot() throws {
        let f = try Fixture()
        for constraint in ["permitted;DNS:.example.com", "excluded;DNS:.example.com"] {
            for san in ["DNS:www.example.com", "DNS:example.com", "DNS:www.example.org"] {
                let result = try f.evaluate(constraints: constraint, san: san)
                #expect(!result.isTrusted && result.statuses[0].rules == ["nameConstraints.unreadable"], "\(constraint) \(san): \(result)")
            }
        }
        // The URI form keeps its leading period.
        f.expect(try f.evaluate(constraints: "permitted;URI:.example.com", san: "URI:https://www.example.com/"), allowed: true, "URI")
    }

    @Test("dNSName: an excluded subtree refuses the name and its subdomains, whatever the case")
    func dnsExcluded() throws {
        let f = try Fixture()
        for (san, allowed) in [
            ("DNS:bank.com", false), ("DNS:www.BANK.com", false), ("DNS:bank.com.evil.example", true),
            ("DNS:notbank.com", true), ("DNS:ok.example, DNS:www.bank.com", false),
        ] {
            f.expect(try f.evaluate(constraints: "excluded;DNS:bank.com", san: san), allowed: allowed, san)
        }
    }

    @Test("A wildcard SAN is excluded when any name it stands for is (CVE-2025-61727), permitted when all are")
    func wildcards() throws {
        let f = try Fixture()
        f.expect(
            try f.evaluate(constraints: "excluded;DNS:www.bank.com", san: "DNS:*.bank.com"), allowed: false, "excluded")
        f.expect(try f.evaluate(constraints: "excluded;DNS:bank.com", san: "DNS:*.bank.com"), allowed: false, "under")
        f.expect(
            try f.evaluate(constraints: "excluded;DNS:x.y.bank.com", san: "DNS:*.bank.com"), allowed: true, "deeper")
        f.expect(
            try f.evaluate(constraints: "permitted;DNS:example.com", san: "DNS:*.example.com"), allowed: true, "inside")
        f.expect(
            try f.evaluate(constraints: "permitted;DNS:www.example.com", san: "DNS:*.example.com"), allowed: false,
            "wider")
    }

    @Test("A DNS name that is not ASCII LDH is refused under a dNSName constraint; A-labels are LDH")
    func invalidDNSNames() throws {
        let f = try Fixture()
        for (san, allowed) in [
            ("DNS:www_1.example.com", false), ("DNS:www.example.com.", false), ("DNS:xn--bcher-kva.example.com", true),
        ] {
            f.expect(try f.evaluate(constraints: "permitted;DNS:example.com", san: san), allowed: allowed, san)
        }
        // An excluded subtree is not bypassed by a trailing dot or U+212A KELVIN SIGN.
        f.expect(try f.evaluate(constraints: "excluded;DNS:bank.com", san: "DNS:www.bank.com."), allowed: false, "dot")
        let kelvin = try f.evaluate(
            constraints: "excluded;DNS:bank.com", san: "DNS:ban\u{212A}.com", policy: .sslServer(hostname: "bank.com"))
        #expect(!kelvin.isTrusted && kelvin.statuses[0].reasons.contains(.nameConstraints), "\(kelvin)")
        let dot = try f.evaluate(
            constraints: "excluded;DNS:bank.com", san: "DNS:www.bank.com.", policy: .sslServer(hostname: "www.bank.com")
        )
        #expect(dot.statuses[0].reasons == [.nameConstraints, .malformed, .hostnameMismatch], "\(dot)")
        #expect(dot.statuses[0].rules == ["nameConstraints DNS:www.bank.com.", "webPKI.invalidDNSName"], "\(dot)")
        #expect(NameConstraints.dnsLabels("ban\u{212A}.com", wildcard: false) == nil)
        #expect(
            !NameConstraints.isAllowed(
                .dns("ban\u{212A}.com"),
                by: NameConstraints.Constraints(permitted: [], excluded: [.dns("bank.com")], hasPermitted: false)))
    }

    @Test("The CN of a leaf without SAN is a dNSName when it looks like a hostname; with a SAN it is not")
    func commonName() throws {
        let f = try Fixture()
        // Certificates that must not slip past the constraint: under permitted example.com, no SAN,
        // CN *.bank.com or www.bank.com.
        for cn in ["*.bank.com", "www.bank.com.", "www.bank.com"] {
            for policy in [TrustPolicy.basicX509, .sslServerWithCommonNameFallback(hostname: "www.bank.com")] {
                let result = try f.evaluate(
                    constraints: "permitted;DNS:example.com", san: nil, subject: "/CN=\(cn)", policy: policy)
                #expect(!result.isTrusted, "\(cn) \(policy)")
                #expect(result.statuses[0].reasons.contains(.nameConstraints), "\(cn) \(policy): \(result)")
            }
        }
        f.expect(
            try f.evaluate(constraints: "permitted;DNS:example.com", san: nil, subject: "/CN=www.example.com"),
            allowed: true, "CN inside")
        f.expect(
            try f.evaluate(constraints: "excluded;DNS:bank.com", san: "IP:192.0.2.1", subject: "/CN=www.bank.com"),
            allowed: true, "a SAN: the CN is no name")
        f.expect(
            try f.evaluate(constraints: "permitted;DNS:example.com", san: nil, subject: "/CN=Example Leaf"),
            allowed: true, "not a hostname")
    }

    @Test("iPAddress: address and mask, IPv4 and IPv6")
    func ipAddresses() throws {
        let f = try Fixture()
        let v4 = "permitted;IP:192.0.2.0/255.255.255.0"
        f.expect(try f.evaluate(constraints: v4, san: "IP:192.0.2.5"), allowed: true, "inside")
        f.expect(try f.evaluate(constraints: v4, san: "IP:192.0.3.5"), allowed: false, "outside")
        // RFC 5280: permitted iPAddress subtrees exist, and none holds an IPv6 address.
        f.expect(try f.evaluate(constraints: v4, san: "IP:2001:db8::1"), allowed: false, "other family")
        f.expect(
            try f.evaluate(constraints: "excluded;IP:192.0.2.0/255.255.255.0", san: "IP:2001:db8::1"), allowed: true,
            "excluded v4")
        let v6 = "permitted;IP:2001:db8::/ffff:ffff::"
        f.expect(try f.evaluate(constraints: v6, san: "IP:2001:db8:1::1"), allowed: true, "v6 inside")
        f.expect(try f.evaluate(constraints: v6, san: "IP:2001:db9::1"), allowed: false, "v6 outside")
        f.expect(
            try f.evaluate(constraints: "excluded;IP:10.0.0.0/255.0.0.0", san: "IP:10.1.2.3"), allowed: false,
            "excluded")
        // A mask with a hole is no mask: the subtree cannot be read.
        #expect(
            NameConstraints.parseConstraints(Self.constraints(permitted: [[0x87, 8, 10, 0, 0, 0, 255, 0, 255, 0]]))
                != nil)
        #expect(
            !NameConstraints.isAllowed(
                .ipAddress([10, 0, 0, 1]),
                by: NameConstraints.Constraints(
                    permitted: [.ipAddress([10, 0, 0, 0, 255, 0, 255, 0])], excluded: [], hasPermitted: true)))
    }

    @Test("rfc822Name: a mailbox, a host, or a domain's subdomains")
    func email() throws {
        let f = try Fixture()
        for (constraint, san, allowed) in [
            ("email:example.com", "email:user@example.com", true),
            ("email:example.com", "email:user@sub.example.com", false),
            ("email:.example.com", "email:user@sub.example.com", true),
            ("email:.example.com", "email:user@example.com", false),
            ("email:user@example.com", "email:user@example.com", true),
            ("email:user@example.com", "email:other@example.com", false),
        ] {
            f.expect(
                try f.evaluate(constraints: "permitted;\(constraint)", san: san), allowed: allowed,
                "\(constraint) \(san)")
        }
        // (The subject's emailAddress attributes count too; `openssl ca` here drops them from the DN, email_in_dn.)
    }

    @Test("URI: the host of the URI, exactly or below a leading-dot domain; a URI without host is refused")
    func uris() throws {
        let f = try Fixture()
        for (constraint, san, allowed) in [
            ("URI:.example.com", "URI:https://www.example.com/path", true),
            ("URI:.example.com", "URI:https://example.com/", false),
            ("URI:example.com", "URI:https://user@example.com:8443/", true),
            ("URI:example.com", "URI:https://www.example.com/", false),
            ("URI:example.com", "URI:urn:example:thing", false),
        ] {
            f.expect(
                try f.evaluate(constraints: "permitted;\(constraint)", san: san), allowed: allowed,
                "\(constraint) \(san)")
        }
    }

    @Test("directoryName: the subject must start with a permitted name's RDNs and with no excluded one's")
    func directoryNames() throws {
        let f = try Fixture()
        let section = "[ dir ]\nO = Allowed Org\n"
        f.expect(
            try f.evaluate(
                constraints: "permitted;dirName:dir", sections: section, san: nil, subject: "/O=Allowed Org/CN=Leaf"),
            allowed: true, "inside")
        f.expect(
            try f.evaluate(
                constraints: "permitted;dirName:dir", sections: section, san: nil, subject: "/O=Other Org/CN=Leaf"),
            allowed: false, "outside")
        f.expect(
            try f.evaluate(
                constraints: "excluded;dirName:dir", sections: section, san: nil, subject: "/O=Allowed Org/CN=Leaf"),
            allowed: false, "excluded")
    }

    /// "Conforming CAs MUST mark this extension as critical" (RFC 5280 4.2.1.10).
    @Test("A nameConstraints extension not marked critical is refused on the CA that carries it, and still applies below")
    func nonCritical() throws {
        let f = try Fixture()
        let inside = try f.evaluate(constraints: "permitted;DNS:example.com", critical: false, san: "DNS:www.example.com")
        #expect(inside.statuses[1].reasons == [.nameConstraints], "\(inside)")
        #expect(inside.statuses[1].rules == ["rfc5280.nameConstraintsNotCritical"] && inside.statuses[0].reasons.isEmpty)
        #expect(inside.outcome == .fatalTrustFailure)
        let outside = try f.evaluate(constraints: "permitted;DNS:example.com", critical: false, san: "DNS:www.example.org")
        #expect(outside.statuses[0].reasons == [.nameConstraints] && outside.statuses[1].reasons == [.nameConstraints])
        // The same constraint, critical: the name inside passes.
        #expect(try f.evaluate(constraints: "permitted;DNS:example.com", san: "DNS:www.example.com").isTrusted)
    }

    /// A NameConstraints extension's DER with `permitted` GeneralSubtree bases (each a GeneralName's DER).
    static func constraints(permitted: [[UInt8]]) -> [UInt8] {
        func tlv(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] { [tag, UInt8(body.count)] + body }
        return tlv(0x30, tlv(0xA0, permitted.flatMap { tlv(0x30, $0) }))
    }

    @Test("Subtrees that cannot be read: empty, a minimum or a maximum, a bad IP length, a non-ASCII name")
    func invalidSubtrees() {
        #expect(NameConstraints.parseConstraints([0x30, 0x00]) == nil, "neither list")
        #expect(NameConstraints.parseConstraints([0x30, 0x02, 0xA0, 0x00]) == nil, "an empty permitted list")
        let dns: [UInt8] = [0x82, 3, 0x61, 0x2E, 0x62]
        #expect(NameConstraints.parseConstraints(Self.constraints(permitted: [dns])) != nil)
        #expect(
            NameConstraints.parseConstraints(Self.constraints(permitted: [dns + [0x80, 1, 1]])) == nil, "minimum 1")
        #expect(
            NameConstraints.parseConstraints(Self.constraints(permitted: [dns + [0x81, 1, 3]])) == nil, "a maximum")
        #expect(
            NameConstraints.parseConstraints(Self.constraints(permitted: [[0x82, 2, 0xC3, 0xA9]])) == nil, "non-ASCII")
        // A 5-byte IP subtree: the name of that family is refused, fail safe.
        #expect(
            !NameConstraints.isAllowed(
                .ipAddress([10, 0, 0, 1]),
                by: NameConstraints.Constraints(
                    permitted: [], excluded: [.ipAddress([10, 0, 0, 0, 255])], hasPermitted: false)))
    }
}
