import Foundation
import Security
import TestVectors
import Testing

/// Revocation through Apple's API: `SecPolicyCreateRevocation` flags, `SecTrustSetNetworkFetchAllowed` and
/// `SecTrustSetOCSPResponse`, against `openssl ocsp` answering behind a loopback HTTP server and a CRL served there.
@Suite("SecTrust revocation against loopback peers", .isolatedKeychain(["com.example.revocation"]))
struct SecTrustRevocationTests {
    /// A root CA (`openssl ca` database), a good and a revoked leaf whose AIA and distribution point name the server.
    final class Peers: @unchecked Sendable {
        // @unchecked: set in init, only read after.
        let ca: OpenSSLCA
        var directory: TemporaryDirectory { ca.directory }
        let server: LoopbackHTTPServer
        let root: SecCertificate
        let good: SecCertificate
        let revoked: SecCertificate

        init() throws {
            let ca = try OpenSSLCA("sectrust-revocation")
            self.ca = ca
            server = try ca.responder()
            let extra = """
                authorityInfoAccess = OCSP;URI:\(server.url("/ocsp"))
                crlDistributionPoints = URI:\(server.url("/root.crl"))
                """
            try ca.issue("root", subject: "/CN=Revocation Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
            for name in ["good", "revoked"] {
                try ca.issue(
                    name, subject: "/CN=\(name).example", issuer: "root",
                    extensions: OpenSSLCA.leafExtensions(subjectAltName: nil, extra: extra))
            }
            try ca.revoke("revoked", issuer: "root")
            try ca.generateCRL("root", days: 30)
            root = try Self.load("root", from: ca.directory)
            good = try Self.load("good", from: ca.directory)
            revoked = try Self.load("revoked", from: ca.directory)
        }

        static func load(_ name: String, from directory: TemporaryDirectory) throws -> SecCertificate {
            let pem = String(decoding: try directory.read("\(name).pem"), as: UTF8.self)
            let base64 = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            let der = try #require(Data(base64Encoded: base64))
            return try #require(SecCertificateCreateWithData(nil, der as CFData))
        }

        /// Evaluates `leaf` against the root with `flags`; the result and the error code.
        func evaluate(
            _ leaf: SecCertificate, flags: CFOptionFlags?, network: Bool? = nil, stapled: Data? = nil
        ) throws -> (SecTrustResultType, Int) {
            var policies: [SecPolicy] = [SecPolicyCreateBasicX509()]
            if let flags { policies.append(try #require(SecPolicyCreateRevocation(flags))) }
            var trust: SecTrust?
            #expect(SecTrustCreateWithCertificates(leaf, policies as CFArray, &trust) == errSecSuccess)
            let created = try #require(trust)
            #expect(SecTrustSetAnchorCertificates(created, [root] as CFArray) == errSecSuccess)
            if let network { #expect(SecTrustSetNetworkFetchAllowed(created, network) == errSecSuccess) }
            if let stapled { #expect(SecTrustSetOCSPResponse(created, stapled as CFData) == errSecSuccess) }
            var error: CFError?
            let passed = SecTrustEvaluateWithError(created, &error)
            var result = SecTrustResultType.invalid
            #expect(SecTrustGetTrustResult(created, &result) == errSecSuccess)
            #expect(passed == (result == .unspecified || result == .proceed))
            return (result, error.map { ($0 as NSError).code } ?? 0)
        }
    }

    @Test("kSecRevocationUseAnyAvailableMethod: good passes, revoked is fatal errSecCertificateRevoked; CRL alone too")
    func policyFlags() throws {
        let peers = try Peers()
        #expect(try peers.evaluate(peers.good, flags: kSecRevocationUseAnyAvailableMethod) == (.unspecified, 0))
        #expect(
            try peers.evaluate(peers.revoked, flags: kSecRevocationUseAnyAvailableMethod)
                == (.fatalTrustFailure, Int(errSecCertificateRevoked)))
        #expect(
            try peers.evaluate(peers.revoked, flags: kSecRevocationCRLMethod)
                == (.fatalTrustFailure, Int(errSecCertificateRevoked)))
        // Without a revocation policy nothing is asked: the revoked leaf passes (Apple's default for non-EV).
        #expect(try peers.evaluate(peers.revoked, flags: nil) == (.unspecified, 0))
    }

    @Test("no network: soft-fail passes, a required positive response fails recoverably; a stapled response decides")
    func offlineAndStapled() throws {
        let peers = try Peers()
        let offline = kSecRevocationUseAnyAvailableMethod | kSecRevocationNetworkAccessDisabled
        #expect(try peers.evaluate(peers.revoked, flags: offline) == (.unspecified, 0))
        #expect(
            try peers.evaluate(peers.good, flags: kSecRevocationUseAnyAvailableMethod | kSecRevocationRequirePositiveResponse, network: false)
                == (.recoverableTrustFailure, Int(errSecIncompleteCertRevocationCheck)))
        // A response stapled by the peer (made by openssl ocsp from the same database): no network needed.
        let dir = peers.directory.url
        try OpenSSLCLI.require(
            ["ocsp", "-issuer", "root.pem", "-cert", "revoked.pem", "-no_nonce", "-reqout", "stapled.req"], in: dir)
        try OpenSSLCLI.require(
            [
                "ocsp", "-index", "index.txt", "-CA", "root.pem", "-rsigner", "root.pem", "-rkey", "root.key", "-reqin",
                "stapled.req", "-respout", "stapled.resp", "-ndays", "1",
            ], in: dir)
        let stapled = try peers.directory.read("stapled.resp")
        #expect(
            try peers.evaluate(peers.revoked, flags: offline, stapled: stapled)
                == (.fatalTrustFailure, Int(errSecCertificateRevoked)))
        // Even without a revocation policy, as Apple uses a stapled response whenever it has one.
        #expect(
            try peers.evaluate(peers.revoked, flags: nil, stapled: stapled)
                == (.fatalTrustFailure, Int(errSecCertificateRevoked)))
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(peers.good, nil, &trust) == errSecSuccess)
        #expect(SecTrustSetOCSPResponse(trust!, "not data" as CFString) == errSecParam)
    }

    @Test("network fetch allowed (the default): a missing intermediate comes from the AIA caIssuers URL; not allowed: missing")
    func issuerFetching() throws {
        let directory = try TemporaryDirectory("sectrust-aia")
        let dir = directory.url
        let server = try LoopbackHTTPServer(
            .answer { request in
                guard request.path == "/inter.der", let der = try? Data(contentsOf: dir.appendingPathComponent("inter.der"))
                else { return .notFound }
                return LoopbackHTTPServer.Response(contentType: "application/pkix-cert", body: der)
            })
        try directory.write(
            "ext.cnf",
            """
            [ ca ]
            basicConstraints = critical, CA:TRUE
            keyUsage = critical, keyCertSign, cRLSign
            [ leaf ]
            basicConstraints = critical, CA:FALSE
            keyUsage = critical, digitalSignature
            authorityInfoAccess = caIssuers;URI:\(server.url("/inter.der"))

            """)
        try OpenSSLCLI.require(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "root.key",
                "-out", "root.pem", "-subj", "/CN=AIA Root", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: dir)
        for (name, issuer, section) in [("inter", "root", "ca"), ("leaf", "inter", "leaf")] {
            try OpenSSLCLI.require(
                [
                    "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key", "-out",
                    "\(name).csr", "-subj", "/CN=AIA \(name)",
                ], in: dir)
            try OpenSSLCLI.require(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuer).pem", "-CAkey", "\(issuer).key", "-CAcreateserial",
                    "-days", "20", "-extfile", "ext.cnf", "-extensions", section, "-out", "\(name).pem",
                ], in: dir)
        }
        try OpenSSLCLI.require(["x509", "-in", "inter.pem", "-outform", "DER", "-out", "inter.der"], in: dir)
        let root = try Peers.load("root", from: directory)
        let leaf = try Peers.load("leaf", from: directory)
        func evaluate(network: Bool?) -> (SecTrustResultType, Int) {
            var trust: SecTrust?
            _ = SecTrustCreateWithCertificates(leaf, SecPolicyCreateBasicX509(), &trust)
            _ = SecTrustSetAnchorCertificates(trust!, [root] as CFArray)  // !: created above
            if let network { _ = SecTrustSetNetworkFetchAllowed(trust!, network) }
            var error: CFError?
            _ = SecTrustEvaluateWithError(trust!, &error)
            var result = SecTrustResultType.invalid
            _ = SecTrustGetTrustResult(trust!, &result)
            return (result, error.map { ($0 as NSError).code } ?? 0)
        }
        #expect(evaluate(network: false) == (.recoverableTrustFailure, Int(errSecCreateChainFailed)))
        #expect(evaluate(network: nil) == (.unspecified, 0))
        var trust: SecTrust?
        _ = SecTrustCreateWithCertificates(leaf, SecPolicyCreateBasicX509(), &trust)
        _ = SecTrustSetAnchorCertificates(trust!, [root] as CFArray)
        #expect(SecTrustGetCertificateCount(trust!) == 3, "the chain holds the fetched intermediate")
    }
}
