import CertificateManager
import Certificates
import Foundation
import Security
import TestVectors
import Testing
import Trust

@Suite("Server validation")
struct ValidationTests {
    /// A PKI with a root and a www.example.com leaf, and a manager on a fresh keychain without revocation checks.
    static func offlineSetup() throws -> (ManagerWorld, Certificate, Certificate, CertificateManager) {
        let world = try ManagerWorld()
        let root = try world.root()
        let leaf = try world.leaf("leaf")
        let manager = CertificateManager(
            keychain: try world.keychain(), configuration: SecurityPolicyConfiguration(revocationCheckPolicy: .disabled))
        return (world, root, leaf, manager)
    }

    /// One leaf (its SAN and CN) under the private root, an expected name, and the answer.
    struct Row: Sendable, CustomStringConvertible {
        enum Expected: Sendable {
            case hostname(String)
            case serviceDomain(String)
        }
        let subjectAltName: String?
        let commonName: String
        let expected: Expected
        let passes: Bool
        /// Whether `openssl verify -verify_hostname` (which knows no public suffix) gives the same answer.
        var opensslAgrees = true
        var description: String { "SAN \(subjectAltName ?? "none") CN \(commonName) vs \(expected)" }
    }

    static let rows: [Row] = [
        // Hostnames (RFC 6125): a wildcard only as the whole left-most label, for one label.
        Row(subjectAltName: "DNS:*.example.com", commonName: "x", expected: .hostname("foo.example.com"), passes: true),
        Row(
            subjectAltName: "DNS:*.*.example.com", commonName: "x", expected: .hostname("foo.bar.example.com"),
            passes: false),
        Row(
            subjectAltName: "DNS:*.example.com", commonName: "x", expected: .hostname("foo.bar.example.com"),
            passes: false),
        Row(subjectAltName: "DNS:*.example.com", commonName: "x", expected: .hostname("example.com"), passes: false),
        // Never before a public suffix (openssl only refuses a wildcard over one label).
        Row(subjectAltName: "DNS:*.com", commonName: "x", expected: .hostname("example.com"), passes: false),
        Row(
            subjectAltName: "DNS:*.co.in", commonName: "x", expected: .hostname("example.co.in"), passes: false,
            opensslAgrees: false),
        Row(
            subjectAltName: "DNS:*.example.co.in", commonName: "x", expected: .hostname("www.example.co.in"),
            passes: true),
        // Never partial.
        Row(
            subjectAltName: "DNS:f*.example.com", commonName: "x", expected: .hostname("foo.example.com"),
            passes: false,
            opensslAgrees: false),
        // Case-insensitive, exact otherwise.
        Row(
            subjectAltName: "DNS:WWW.Example.COM", commonName: "x", expected: .hostname("www.example.com"), passes: true
        ),
        Row(subjectAltName: "DNS:www.example.com", commonName: "x", expected: .hostname("example.com"), passes: false),
        // SAN first; the CN only without any SAN.
        Row(
            subjectAltName: "DNS:a.example.com", commonName: "www.example.com", expected: .hostname("www.example.com"),
            passes: false),
        Row(subjectAltName: nil, commonName: "www.example.com", expected: .hostname("www.example.com"), passes: true),
        // IP addresses against SAN iPAddresses.
        Row(subjectAltName: "IP:192.0.2.1", commonName: "x", expected: .hostname("192.0.2.1"), passes: true),
        Row(subjectAltName: "IP:192.0.2.1", commonName: "x", expected: .hostname("192.0.2.2"), passes: false),
        Row(subjectAltName: "DNS:192.0.2.1", commonName: "x", expected: .hostname("192.0.2.1"), passes: false),
        // SIP service domains (RFC 5922): sip: URIs without a user part first, then DNS SANs, then the CN.
        Row(
            subjectAltName: "URI:sip:sip.example.com, DNS:example.com", commonName: "x",
            expected: .serviceDomain("sip.example.com"), passes: true),
        Row(
            subjectAltName: "URI:sip:sip.example.com, DNS:example.com", commonName: "x",
            expected: .serviceDomain("example.com"), passes: false),
        Row(
            subjectAltName: "URI:sip:bob@example.com, DNS:example.com", commonName: "x",
            expected: .serviceDomain("example.com"), passes: true),
        Row(
            subjectAltName: "URI:sip:bob@example.com", commonName: "example.com",
            expected: .serviceDomain("example.com"), passes: false),
        Row(
            subjectAltName: "DNS:*.example.com", commonName: "x", expected: .serviceDomain("foo.example.com"),
            passes: false),
        Row(
            subjectAltName: "DNS:example.com", commonName: "x", expected: .serviceDomain("foo.example.com"),
            passes: false),
        Row(subjectAltName: "DNS:Example.COM", commonName: "x", expected: .serviceDomain("example.com."), passes: true),
        Row(subjectAltName: nil, commonName: "Example.com", expected: .serviceDomain("example.COM"), passes: true),
        Row(
            subjectAltName: "email:a@example.com", commonName: "example.com", expected: .serviceDomain("example.com"),
            passes: false),
    ]

    @Test("hostname and service-domain table, anchored to the private store", arguments: rows.indices)
    func table(_ index: Int) async throws {
        let row = Self.rows[index]
        let world = try ManagerWorld()
        let root = try world.root()
        let leaf = try world.leaf("leaf", commonName: row.commonName, subjectAltName: row.subjectAltName)
        let manager = CertificateManager(keychain: try world.keychain())
        try manager.setCertificates([root])
        var hostname: String?
        var domain: String?
        switch row.expected {
        case .hostname(let name): hostname = name
        case .serviceDomain(let name): domain = name
        }
        let configuration = SecurityPolicyConfiguration(revocationCheckPolicy: .disabled)
        manager.configuration = configuration
        do {
            _ = try await manager.validate(
                trust: [leaf], expectedServiceDomain: domain, expectedHostname: hostname, peerPort: 5061)
            #expect(row.passes, "\(row)")
        } catch let error as CertificateManagerError {
            #expect(!row.passes, "\(row): \(error)")
            #expect(error.code == (hostname != nil ? .hostnameMismatch : .serviceDomainMismatch))
            #expect(error.certificateSubject == row.commonName)
        }
        // The chain itself is good: openssl agrees, and with continueOnServerIdentityFailure everything passes.
        #expect(try world.opensslVerifies("leaf", anchor: "root.pem"))
        if let hostname, row.opensslAgrees {
            let isAddress = hostname.allSatisfy { $0.isNumber || $0 == "." }
            let verifies = try world.opensslVerifies(
                "leaf", anchor: "root.pem", [isAddress ? "-verify_ip" : "-verify_hostname", hostname])
            #expect(verifies == row.passes, "openssl: \(row)")
        }
        manager.configuration.continueOnServerIdentityFailure = true
        _ = try await manager.validate(
            trust: [leaf], expectedServiceDomain: domain, expectedHostname: hostname, peerPort: nil)
    }

    /// A common name standing in for a missing SAN must pass the path's name constraints even where it does not look
    /// like a hostname to the constraint check (no dot, or an IP address).
    @Test("a common name standing in for a SAN passes the path's name constraints of its form, as the SAN would", arguments: [
        ("permitted;DNS:example.com", "intranet", "www.example.com"),
        ("permitted;IP:192.168.0.0/255.255.0.0", "10.0.0.1", "192.168.1.1"),
        ("excluded;DNS:intranet", "intranet", "www.example.com"),
    ])
    func commonNameFallbackUnderNameConstraints(constraint: String, outside: String, inside: String) async throws {
        let world = try ManagerWorld()
        try world.ca.issue(
            "constrained", subject: "/CN=Constrained Root", issuer: nil,
            extensions: OpenSSLCA.caExtensions(selfSigned: true, extra: "nameConstraints = critical, \(constraint)"))
        let root = try world.certificate("constrained")
        let manager = CertificateManager(keychain: try world.keychain())
        try manager.setCertificates([root])
        manager.configuration = SecurityPolicyConfiguration(revocationCheckPolicy: .disabled)
        let attack = try world.leaf("cn-outside", commonName: outside, subjectAltName: nil, issuer: "constrained")
        let error = await #expect(throws: CertificateManagerError.self) {
            try await manager.validate(trust: [attack], expectedServiceDomain: nil, expectedHostname: outside, peerPort: 443)
        }
        #expect(error?.code == .untrusted, "\(String(describing: error))")
        // The same name as a SAN is refused too (by the path's own check), and a name inside the subtree passes.
        let san = try world.leaf(
            "san-outside", commonName: "x", subjectAltName: (outside.first!.isNumber ? "IP:" : "DNS:") + outside,
            issuer: "constrained")
        await #expect(throws: CertificateManagerError.self) {
            try await manager.validate(trust: [san], expectedServiceDomain: nil, expectedHostname: outside, peerPort: 443)
        }
        let good = try world.leaf("cn-inside", commonName: inside, subjectAltName: nil, issuer: "constrained")
        _ = try await manager.validate(trust: [good], expectedServiceDomain: nil, expectedHostname: inside, peerPort: 443)
    }

    @Test("an expected service domain and hostname together are refused")
    func bothNames() async throws {
        let world = try ManagerWorld()
        let root = try world.root()
        let leaf = try world.leaf("leaf")
        let manager = CertificateManager(keychain: try world.keychain())
        try manager.setCertificates([root])
        await #expect(throws: CertificateManagerError(.invalidValidationRequest, "")) {
            try await manager.validate(
                trust: [leaf], expectedServiceDomain: "example.com", expectedHostname: "www.example.com", peerPort: nil)
        }
        await #expect(throws: CertificateManagerError(.invalidValidationRequest, "")) {
            try await manager.validate(trust: [])
        }
    }

    @Test("continueOnServerIdentityFailure lets a name mismatch pass, never a bad chain")
    func continueOnIdentityFailure() async throws {
        let world = try ManagerWorld()
        let root = try world.root()
        try world.root("stranger", subject: "/CN=Stranger Root")
        let good = try world.leaf("good", subjectAltName: "DNS:www.example.com")
        let foreign = try world.leaf(
            "foreign", commonName: "foreign.example", subjectAltName: "DNS:www.example.com", issuer: "stranger")
        let manager = CertificateManager(
            keychain: try world.keychain(),
            configuration: SecurityPolicyConfiguration(
                continueOnServerIdentityFailure: true, revocationCheckPolicy: .disabled))
        try manager.setCertificates([root])
        _ = try await manager.validate(
            trust: [good], expectedServiceDomain: nil, expectedHostname: "mail.example.com", peerPort: 443)
        let error = await #expect(throws: CertificateManagerError(.untrusted, "")) {
            try await manager.validate(
                trust: [foreign], expectedServiceDomain: nil, expectedHostname: "www.example.com", peerPort: 443)
        }
        #expect(error?.certificateSubject == "foreign.example")
        #expect(try !world.opensslVerifies("foreign", anchor: "root.pem"))
        // Strict (the default) refuses the mismatch.
        manager.configuration = SecurityPolicyConfiguration(revocationCheckPolicy: .disabled)
        #expect(manager.configuration.continueOnServerIdentityFailure == false)
        await #expect(throws: CertificateManagerError(.hostnameMismatch, "")) {
            try await manager.validate(
                trust: [good], expectedServiceDomain: nil, expectedHostname: "mail.example.com", peerPort: 443)
        }
    }

    @Test("the completion-handler form reports the same result")
    func completionHandler() async throws {
        let (_, root, leaf, manager) = try Self.offlineSetup()
        try manager.setCertificates([root])
        let good = await withCheckedContinuation { continuation in
            manager.validate(trust: [leaf], expectedHostname: "www.example.com") { continuation.resume(returning: $0) }
        }
        #expect(try good.get().chain == [leaf, root])
        let bad = await withCheckedContinuation { continuation in
            manager.validate(trust: [leaf], expectedHostname: "other.example.com") {
                continuation.resume(returning: $0)
            }
        }
        #expect(throws: CertificateManagerError(.hostnameMismatch, "")) { try bad.get() }
    }

    @Test("anchors: the private store alone when in use and enabled, else the system anchors alone")
    func anchorSelection() async throws {
        let (world, root, leaf, manager) = try Self.offlineSetup()
        // No store: the system anchors, which do not hold the private root (openssl agrees).
        #expect(!SystemAnchors.all.contains(root))
        #expect(try !world.opensslVerifies("leaf", anchor: SystemAnchors.bundlePath))
        await #expect(throws: CertificateManagerError(.untrusted, "")) {
            try await manager.validate(trust: [leaf, root])
        }
        // The store in use: the private root alone.
        try manager.setCertificates([root])
        #expect(try world.opensslVerifies("leaf", anchor: "root.pem"))
        #expect(try await manager.validate(trust: [leaf]).chain == [leaf, root])
        // Disabled: no fallback to the store, the system anchors alone.
        manager.configuration.privateTrustStoreEnabled = false
        let error = await #expect(throws: CertificateManagerError(.untrusted, "")) {
            try await manager.validate(trust: [leaf, root])
        }
        #expect(error?.reason.contains("the system anchors") == true)
        // In use and enabled: a system anchor is not trusted (no fallback to the system store).
        manager.configuration.privateTrustStoreEnabled = true
        let systemRoot = try #require(SystemAnchors.all.first)
        let systemEvaluation = try await TrustEvaluator(anchors: SystemAnchors.all).evaluate(systemRoot)
        #expect(systemEvaluation.isTrusted)  // a system anchor, trusted by the system anchors
        let privateEvaluation = try await TrustEvaluator(anchors: [root]).evaluate(systemRoot)
        #expect(privateEvaluation.reasons.contains(.untrustedRoot))
        let systemError = await #expect(throws: CertificateManagerError.self) {
            try await manager.validate(trust: [systemRoot])
        }
        #expect(systemError?.reason.contains("untrustedRoot") == true, "\(String(describing: systemError))")
        #expect(systemError?.reason.contains("the private trust store") == true)
    }

    @Test("a SecTrust's certificates are validated against the manager's anchors, not the SecTrust's")
    func secTrustInput() async throws {
        let (_, root, leaf, manager) = try Self.offlineSetup()
        try manager.setCertificates([root])
        let certificate = try #require(SecCertificateCreateWithData(nil, leaf.derEncoded as CFData))
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(certificate, SecPolicyCreateSSL(true, nil), &trust) == errSecSuccess)
        let secTrust = try #require(trust)
        // The SecTrust alone (system anchors) does not trust the private root; the manager does.
        #expect(!SecTrustEvaluateWithError(secTrust, nil))
        #expect(try await manager.validate(trust: secTrust, expectedHostname: "www.example.com").chain == [leaf, root])
        await #expect(throws: CertificateManagerError(.hostnameMismatch, "")) {
            try await manager.validate(trust: secTrust, expectedHostname: "mail.example.com")
        }
    }
}
