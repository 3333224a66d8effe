import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// The web-PKI profile of the SSL policies, rule by rule: each leaf breaks one rule, fails the SSL policy with the
/// rule named, and passes basic X.509 (pure RFC 5280).
@Suite("Web-PKI profile of the SSL policy")
struct WebPKIProfileTests {
    final class Fixture {
        let pki: TestPKI
        let root: Certificate
        let intermediate: Certificate

        init() throws {
            pki = try TestPKI()
            root = try pki.issue(
                "root", subject: "/CN=Profile Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
            intermediate = try pki.issue(
                "ica", subject: "/CN=Profile Intermediate", issuer: "root", extensions: TestPKI.caExtensions())
        }

        func key(_ name: String, _ options: [String]) throws {
            try OpenSSLCLI.require(["genpkey"] + options + ["-out", "\(name).key"], in: pki.url)
        }

        /// A leaf signed by the intermediate (with `digest` when given).
        func leaf(
            _ name: String, key: String? = nil, extensions: String = TestPKI.leafExtensions(), digest: String? = nil
        )
            throws -> Certificate
        {
            guard let digest else {
                return try pki.issue(
                    name, subject: "/CN=www.example.com", issuer: "ica", key: key, extensions: extensions)
            }
            try OpenSSLCLI.require(
                [
                    "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                    "\(name).key",
                    "-subj", "/CN=www.example.com", "-out", "\(name).csr",
                ], in: pki.url)
            try pki.directory.write("\(name).ext", "[ ext ]\n\(extensions)\n")
            try OpenSSLCLI.require(
                [
                    "ca", "-batch", "-config", "ca.cnf", "-in", "\(name).csr", "-out", "\(name).pem", "-startdate",
                    "20200101000000Z", "-enddate", "20400101000000Z", "-extfile", "\(name).ext", "-extensions", "ext",
                    "-notext", "-preserveDN", "-rand_serial", "-md", digest, "-cert", "ica.pem", "-keyfile", "ica.key",
                ],
                in: pki.url)
            return try pki.certificate(name)
        }

        func evaluate(_ leaf: Certificate, _ policy: TrustPolicy) throws -> TrustResult {
            try TrustEvaluator(anchors: [root], policies: [policy], verificationDate: midValidity)
                .evaluate(leaf, intermediates: [intermediate])
        }

        /// Fails the SSL policy for `reason` with `rule` named on the leaf; passes basic X.509 unless told.
        func expect(
            _ leaf: Certificate, _ reason: TrustFailureReason, rule: String, basicPasses: Bool = true,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let ssl = try evaluate(leaf, .sslServer(hostname: "www.example.com"))
            #expect(ssl.statuses[0].reasons.contains(reason), "\(rule): \(ssl)", sourceLocation: sourceLocation)
            #expect(ssl.statuses[0].rules.contains(rule), "\(rule): \(ssl)", sourceLocation: sourceLocation)
            #expect("\(ssl)".contains(rule), sourceLocation: sourceLocation)
            if basicPasses {
                let basic = try evaluate(leaf, .basicX509)
                #expect(basic.isTrusted, "\(rule) under basic X.509: \(basic)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("A conforming leaf passes")
    func conforming() throws {
        let f = try Fixture()
        #expect(try f.evaluate(f.leaf("good"), .sslServer(hostname: "www.example.com")).isTrusted)
    }

    @Test("SHA-1 signatures are weak (fatal)")
    func sha1() throws {
        let f = try Fixture()
        let leaf = try f.leaf("sha1", digest: "sha1")
        try f.expect(leaf, .weakKeyOrSignature, rule: "webPKI.weakSignature.sha1")
        #expect(try f.evaluate(leaf, .sslServer(hostname: "www.example.com")).outcome == .fatalTrustFailure)
    }

    @Test("Forbidden keys: RSA under 2048 bits, an RSA modulus not whole bytes, P-192")
    func weakKeys() throws {
        let f = try Fixture()
        try f.key("rsa1024", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
        try f.expect(try f.leaf("rsa1024", key: "rsa1024"), .weakKeyOrSignature, rule: "webPKI.weakKey.rsaUnder2048")
        try f.key("rsa2052", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2052"])
        try f.expect(
            try f.leaf("rsa2052", key: "rsa2052"), .weakKeyOrSignature, rule: "webPKI.weakKey.rsaModulusNotWholeBytes")
        try f.key("rsa2048", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        #expect(try f.evaluate(f.leaf("rsa2048", key: "rsa2048"), .sslServer(hostname: "www.example.com")).isTrusted)
        if (try? f.key("p192", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-192"])) != nil {
            try f.expect(try f.leaf("p192", key: "p192"), .weakKeyOrSignature, rule: "webPKI.weakKey.curve")
        }
    }

    @Test("A leaf that is a CA fails the SSL policy; RFC 5280 allows it, and its own pathLenConstraint does not count")
    func leafIsCA() throws {
        let f = try Fixture()
        let leaf = try f.leaf(
            "ca-leaf",
            extensions: """
                basicConstraints = critical, CA:TRUE, pathlen:0
                keyUsage = critical, digitalSignature, keyCertSign
                extendedKeyUsage = serverAuth
                subjectAltName = DNS:www.example.com
                """)
        try f.expect(leaf, .basicConstraints, rule: "webPKI.leafIsCA")
    }

    @Test("A leaf carries no name constraints, and only LDH DNS names")
    func leafNames() throws {
        let f = try Fixture()
        try f.expect(
            try f.leaf(
                "nc-leaf", extensions: TestPKI.leafExtensions() + "\nnameConstraints = critical, permitted;DNS:example.com"),
            .malformed, rule: "webPKI.leafNameConstraints")
        try f.expect(
            try f.leaf(
                "underscore",
                extensions: TestPKI.leafExtensions(subjectAltName: "DNS:www.example.com, DNS:a_b.example.com")),
            .malformed, rule: "webPKI.invalidDNSName")
    }

    @Test("A server leaf's EKU is not critical, and it has a subjectAltName even when no hostname is asked")
    func criticalEKUAndSAN() throws {
        let f = try Fixture()
        try f.expect(
            try f.leaf("critical-eku", extensions: TestPKI.leafExtensions(extendedKeyUsage: "critical, serverAuth")),
            .extendedKeyUsage, rule: "webPKI.leafCriticalExtendedKeyUsage")
        let noSAN = try f.leaf("no-san", extensions: TestPKI.leafExtensions(subjectAltName: nil))
        let anyName = try f.evaluate(noSAN, .sslServer(hostname: nil))
        #expect(anyName.statuses[0].rules.contains("webPKI.leafWithoutSubjectAltName"), "\(anyName)")
        #expect(!anyName.isTrusted)
        #expect(try f.evaluate(noSAN, .basicX509).isTrusted)
        // The certificate manager's CN-fallback option names its subject by the CN.
        let fallback = try f.evaluate(noSAN, .sslServerWithCommonNameFallback(hostname: "www.example.com"))
        #expect(!fallback.statuses[0].rules.contains("webPKI.leafWithoutSubjectAltName"), "\(fallback)")
    }

    @Test("A malformed authorityInfoAccess is refused; a root carries no EKU and no AKI without a keyIdentifier")
    func aiaAndRoots() throws {
        let f = try Fixture()
        // An AIA whose access location is an integer, not a GeneralName: DER that does not decode as the extension.
        try f.expect(
            try f.leaf("bad-aia", extensions: TestPKI.leafExtensions(extra: "authorityInfoAccess = DER:30:03:02:01:01")),
            .malformed, rule: "webPKI.malformedAuthorityInformationAccess", basicPasses: false)
        for (name, extra, rule) in [
            ("eku-root", "extendedKeyUsage = serverAuth", "webPKI.rootExtendedKeyUsage"),
            ("aki-root", "authorityKeyIdentifier = issuer:always", "webPKI.rootAuthorityKeyIdentifierWithoutKeyIdentifier"),
        ] {
            let root = try f.pki.issue(
                name, subject: "/CN=Profile Root \(name)", issuer: nil,
                extensions: TestPKI.caExtensions(selfSigned: true, extra: extra))
            let ica = try f.pki.issue(
                "\(name)-ica", subject: "/CN=Profile Intermediate \(name)", issuer: name, extensions: TestPKI.caExtensions())
            let leaf = try f.pki.issue(
                "\(name)-leaf", subject: "/CN=www.example.com", issuer: "\(name)-ica", extensions: TestPKI.leafExtensions())
            let evaluator = { (policy: TrustPolicy) in
                try TrustEvaluator(anchors: [root], policies: [policy], verificationDate: midValidity)
                    .evaluate(leaf, intermediates: [ica])
            }
            let ssl = try evaluator(.sslServer(hostname: "www.example.com"))
            #expect(!ssl.isTrusted && ssl.statuses.last?.rules.contains(rule) == true, "\(rule): \(ssl)")
            #expect(try evaluator(.basicX509).isTrusted, "\(rule) under basic X.509")
        }
    }

    /// RFC 5280 and Baseline Requirements rules on extensions, each tested from the text that states it.
    @Test("A critical subjectAltName in a leaf with a subject; policyConstraints not critical; a cross-signed root without an AKI")
    func rfc5280Rules() throws {
        let f = try Fixture()
        // RFC 5280 4.2.1.6: "If the subject field contains an empty sequence, ... the subjectAltName extension ... MUST
        // be critical"; BR 7.1.2.7.12: otherwise it MUST NOT be.
        try f.expect(
            try f.leaf("critical-san", extensions: TestPKI.leafExtensions(subjectAltName: "critical, DNS:www.example.com")),
            .malformed, rule: "webPKI.criticalSubjectAltNameWithSubject")
        // RFC 5280 4.2.1.11: "Conforming CAs MUST mark this extension as critical". Basic X.509 follows PKITS, written
        // for RFC 3280, which allowed either (its policy tests have CAs with non-critical policyConstraints).
        let loose = try f.pki.issue(
            "loose-pc", subject: "/CN=Profile Intermediate Loose PC", issuer: "root",
            extensions: TestPKI.caExtensions(extra: "policyConstraints = requireExplicitPolicy:5"))
        let strict = try f.pki.issue(
            "strict-pc", subject: "/CN=Profile Intermediate Strict PC", issuer: "root",
            extensions: TestPKI.caExtensions(extra: "policyConstraints = critical, requireExplicitPolicy:5"))
        for (ica, passes) in [(loose, false), (strict, true)] {
            let name = ica == loose ? "loose-pc" : "strict-pc"
            let leaf = try f.pki.issue("\(name)-leaf", subject: "/CN=www.example.com", issuer: name, extensions: TestPKI.leafExtensions())
            let evaluate = { (policy: TrustPolicy) in
                try TrustEvaluator(anchors: [f.root], policies: [policy], verificationDate: midValidity).evaluate(leaf, intermediates: [ica])
            }
            let result = try evaluate(.sslServer(hostname: "www.example.com"))
            #expect(result.isTrusted == passes, "\(name): \(result)")
            if !passes { #expect(result.statuses[1].rules == ["webPKI.policyConstraintsNotCritical"], "\(result)") }
            #expect(try evaluate(.basicX509).isTrusted, "\(name) under basic X.509")
        }
        // RFC 5280 4.2.1.1: the AKI "MUST be included in all certificates generated by conforming CAs" but self-signed
        // ones. A cross-signed root (the other root's subject and key, issued by the fixture's root) without one.
        for (name, aki) in [("cross-without-aki", "authorityKeyIdentifier = none"), ("cross-with-aki", "authorityKeyIdentifier = keyid")] {
            try f.pki.ca.issue(
                "\(name)-self", subject: "/CN=Profile Cross Root \(name)", issuer: nil, key: "\(name)-key",
                extensions: OpenSSLCA.caExtensions(selfSigned: true))
            try f.pki.directory.write(
                "\(name).ext",
                "[ ext ]\nbasicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\nsubjectKeyIdentifier = hash\n\(aki)\n")
            try OpenSSLCLI.require(
                [
                    "x509", "-req", "-in", "\(name)-self.csr", "-CA", "root.pem", "-CAkey", "root.key", "-set_serial", "77",
                    "-days", "3650", "-extfile", "\(name).ext", "-extensions", "ext", "-out", "\(name).pem",
                ], in: f.pki.url)
            let cross = try f.pki.certificate(name)
            let leaf = try f.pki.issue(
                "\(name)-leaf", subject: "/CN=www.example.com", issuer: "\(name)-self", issuerKey: "\(name)-key",
                extensions: TestPKI.leafExtensions())
            let evaluate = { (policy: TrustPolicy) in
                try TrustEvaluator(anchors: [f.root], policies: [policy], verificationDate: Date())
                    .evaluate(leaf, intermediates: [cross])
            }
            let ssl = try evaluate(.sslServer(hostname: "www.example.com"))
            if aki.hasSuffix("none") {
                let text = try OpenSSLCLI.require(["x509", "-in", "\(name).pem", "-noout", "-text"], in: f.pki.url).text
                #expect(!text.contains("Authority Key Identifier"), "openssl finds no AKI in the cross certificate")
                #expect(!ssl.isTrusted && ssl.statuses[1].rules == ["webPKI.caWithoutAuthorityKeyIdentifier"], "\(ssl)")
            } else {
                #expect(ssl.isTrusted, "\(ssl)")
            }
            #expect(try evaluate(.basicX509).isTrusted, "basic X.509 leaves the profile's rule out")
        }
    }

    /// The anchor is an input the user chose, but Apple's SSL policy refuses a weak key in it.
    @Test("A weak key in the anchor itself fails the SSL policy (RSA 1024, RSA not whole bytes, P-192), not basic X.509")
    func weakAnchorKeys() throws {
        let f = try Fixture()
        var keys: [(String, [String], String)] = [
            ("anchor-rsa1024", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"], "webPKI.weakKey.rsaUnder2048"),
            ("anchor-rsa2052", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2052"], "webPKI.weakKey.rsaModulusNotWholeBytes"),
        ]
        if (try? f.key("anchor-p192", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-192"])) != nil {
            keys.append(("anchor-p192", [], "webPKI.weakKey.curve"))
        }
        for (name, options, rule) in keys {
            if !options.isEmpty { try f.key(name, options) }
            let anchor = try f.pki.issue(
                name, subject: "/CN=Profile Weak Root \(name)", issuer: nil, key: name, extensions: TestPKI.caExtensions(selfSigned: true))
            let leaf = try f.pki.issue(
                "\(name)-leaf", subject: "/CN=www.example.com", issuer: name, key: "leaf-of-weak", extensions: TestPKI.leafExtensions())
            let evaluate = { (policy: TrustPolicy) in
                try TrustEvaluator(anchors: [anchor], policies: [policy], verificationDate: midValidity).evaluate(leaf)
            }
            let ssl = try evaluate(.sslServer(hostname: "www.example.com"))
            #expect(!ssl.isTrusted && ssl.statuses.last?.rules.contains(rule) == true, "\(rule): \(ssl)")
            #expect(try evaluate(.basicX509).isTrusted, "\(rule) under basic X.509")
        }
    }

    /// OpenSSL's sslserver purpose accepts the Server Gated Crypto EKUs alone; the SSL policies must not.
    @Test("Server Gated Crypto is not serverAuth: a leaf with only msSGC or nsSGC fails the SSL policies")
    func serverGatedCrypto() throws {
        let f = try Fixture()
        for (name, eku) in [("ms-sgc", "1.3.6.1.4.1.311.10.3.3"), ("ns-sgc", "2.16.840.1.113730.4.1")] {
            let leaf = try f.leaf(name, extensions: TestPKI.leafExtensions(extendedKeyUsage: eku))
            try f.expect(leaf, .extendedKeyUsage, rule: "webPKI.leafWithoutServerAuth")
            let client = try f.evaluate(leaf, .sslClient)
            #expect(client.statuses[0].rules.contains("webPKI.leafWithoutClientAuth"), "\(client)")
        }
    }

    @Test("A server leaf needs an EKU, and never anyExtendedKeyUsage")
    func extendedKeyUsage() throws {
        let f = try Fixture()
        try f.expect(
            try f.leaf("no-eku", extensions: TestPKI.leafExtensions(extendedKeyUsage: nil)), .extendedKeyUsage,
            rule: "webPKI.leafWithoutExtendedKeyUsage")
        try f.expect(
            try f.leaf(
                "any-eku", extensions: TestPKI.leafExtensions(extendedKeyUsage: "serverAuth, anyExtendedKeyUsage")),
            .extendedKeyUsage, rule: "webPKI.leafAnyExtendedKeyUsage")
    }
}
