import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// Chains made at test time by `openssl ca`, each evaluated by `TrustEvaluator` and, where OpenSSL's answer is
/// the same by RFC 5280, by `openssl verify` too.
@Suite struct GeneratedChainTests {
    /// Root → intermediate → leaf, all valid 2020–2040 unless a test changes one.
    struct Chain {
        let pki: TestPKI
        let root: Certificate
        let intermediate: Certificate

        init(rootPathLength: Int? = nil, intermediateExtra: String = "") throws {
            pki = try TestPKI()
            root = try pki.issue(
                "root", subject: "/O=Trust Tests/CN=Root", issuer: nil,
                extensions: TestPKI.caExtensions(pathLength: rootPathLength, selfSigned: true))
            intermediate = try pki.issue(
                "intermediate", subject: "/O=Trust Tests/CN=Intermediate", issuer: "root",
                extensions: TestPKI.caExtensions(extra: intermediateExtra))
        }

        func leaf(
            _ name: String, cn: String = "www.example.com", san: String? = "DNS:www.example.com",
            eku: String? = "serverAuth", notBefore: String = "20200101000000Z", notAfter: String = "20400101000000Z"
        ) throws -> Certificate {
            try pki.issue(
                name, subject: "/O=Trust Tests/CN=\(cn)", issuer: "intermediate",
                extensions: TestPKI.leafExtensions(subjectAltName: san, extendedKeyUsage: eku), notBefore: notBefore,
                notAfter: notAfter)
        }

        /// `openssl verify` of the leaf file `name` with this root and intermediate, at `time` (seconds).
        func opensslVerifies(_ name: String, at time: Int, purpose: String? = nil) throws -> Bool {
            try pki.opensslVerifies(
                name, anchors: ["root"], intermediates: ["intermediate"], time: time, purpose: purpose)
        }

        func evaluate(
            _ leaf: Certificate, policies: [TrustPolicy] = [.sslServer(hostname: "www.example.com")],
            at date: Date = midValidity
        ) throws -> TrustResult {
            try TrustEvaluator(anchors: [root], policies: policies, verificationDate: date)
                .evaluate(leaf, intermediates: [intermediate])
        }
    }

    @Test("A valid chain is trusted, leaf to anchor, and openssl verify agrees")
    func validChain() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf")
        let result = try chain.evaluate(leaf)
        #expect(result.isTrusted, "\(result)")
        #expect(result.outcome == .trusted)
        #expect(result.chain == [leaf, chain.intermediate, chain.root])
        #expect(try chain.opensslVerifies("leaf", at: midValidityTime))
        // Without the intermediate: a missing issuer, recoverable, the chain stops at the leaf.
        let alone = try TrustEvaluator(anchors: [chain.root], verificationDate: midValidity).evaluate(leaf)
        #expect(alone.chain == [leaf])
        #expect(alone.statuses[0].reasons == [.missingIssuer])
        #expect(alone.outcome == .recoverableTrustFailure)
    }

    @Test("Expired leaf: recoverable; valid through its notAfter second, expired one second later")
    func expiredLeaf() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("expired", notAfter: "20250101000000Z")
        let notAfter = 1_735_689_600  // 2025-01-01T00:00:00Z
        #expect(leaf.notValidAfter == Date(timeIntervalSince1970: TimeInterval(notAfter)))

        let result = try chain.evaluate(leaf)
        #expect(!result.isTrusted)
        #expect(result.statuses.map(\.reasons) == [[.expired], [], []])
        #expect(result.outcome == .recoverableTrustFailure)
        #expect(!(try chain.opensslVerifies("expired", at: midValidityTime)))

        // RFC 5280 4.1.2.5: the validity period includes notAfter. OpenSSL counts that second as expired.
        let atNotAfter = Date(timeIntervalSince1970: TimeInterval(notAfter))
        #expect(try chain.evaluate(leaf, at: atNotAfter).isTrusted)
        #expect(try chain.evaluate(leaf, at: atNotAfter.addingTimeInterval(0.9)).isTrusted)
        #expect(try chain.evaluate(leaf, at: atNotAfter.addingTimeInterval(1)).statuses[0].reasons == [.expired])
        #expect(!(try chain.opensslVerifies("expired", at: notAfter)))
        #expect(try chain.opensslVerifies("expired", at: notAfter - 1))
    }

    @Test("Not yet valid leaf, expired intermediate: each reason on its own certificate")
    func notYetValid() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("future", notBefore: "20350101000000Z")
        let result = try chain.evaluate(leaf)
        #expect(result.statuses.map(\.reasons) == [[.notYetValid], [], []])
        #expect(result.outcome == .recoverableTrustFailure)
        #expect(!(try chain.opensslVerifies("future", at: midValidityTime)))
        // Valid from its notBefore second on.
        #expect(try chain.evaluate(leaf, at: Date(timeIntervalSince1970: 2_051_222_400)).isTrusted)

        let old = try chain.pki.issue(
            "old-intermediate", subject: "/O=Trust Tests/CN=Old Intermediate", issuer: "root",
            extensions: TestPKI.caExtensions(), notAfter: "20250101000000Z")
        let leafOfOld = try chain.pki.issue(
            "leaf-of-old", subject: "/O=Trust Tests/CN=www.example.com", issuer: "old-intermediate",
            extensions: TestPKI.leafExtensions())
        let viaOld = try TrustEvaluator(anchors: [chain.root], verificationDate: midValidity)
            .evaluate(leafOfOld, intermediates: [old])
        #expect(viaOld.statuses.map(\.reasons) == [[], [.expired], []])
    }

    @Test("Wrong EKU: the SSL server policy fails on the EKU (recoverable); client and basic policies pass")
    func wrongExtendedKeyUsage() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("client", eku: "clientAuth")
        let server = try chain.evaluate(leaf)
        #expect(server.statuses[0].reasons == [.extendedKeyUsage], "\(server)")
        #expect(server.outcome == .recoverableTrustFailure)
        #expect(try chain.evaluate(leaf, policies: [.sslClient]).isTrusted)
        #expect(try chain.evaluate(leaf, policies: [.basicX509]).isTrusted)
        // Both policies at once: the server one fails.
        #expect(!(try chain.evaluate(leaf, policies: [.sslClient, .sslServer()]).isTrusted))
        #expect(!(try chain.opensslVerifies("client", at: midValidityTime, purpose: "sslserver")))
        #expect(try chain.opensslVerifies("client", at: midValidityTime, purpose: "sslclient"))
        // A server leaf under the client policy.
        let serverLeaf = try chain.leaf("server")
        #expect(try chain.evaluate(serverLeaf, policies: [.sslClient]).statuses[0].reasons == [.extendedKeyUsage])
    }

    @Test("An intermediate whose EKU lacks serverAuth fails the SSL server policy on that intermediate")
    func intermediateExtendedKeyUsage() throws {
        let chain = try Chain(intermediateExtra: "extendedKeyUsage = clientAuth")
        let leaf = try chain.leaf("leaf")
        let result = try chain.evaluate(leaf)
        #expect(result.statuses.map(\.reasons) == [[], [.extendedKeyUsage], []], "\(result)")
        #expect(result.outcome == .recoverableTrustFailure)
        #expect(!(try chain.opensslVerifies("leaf", at: midValidityTime, purpose: "sslserver")))
        #expect(try chain.evaluate(leaf, policies: [.basicX509]).isTrusted)
    }

    @Test("Path length exceeded: the root allows no intermediate CA")
    func pathLengthExceeded() throws {
        let chain = try Chain(rootPathLength: 0)
        let leaf = try chain.leaf("leaf")
        let result = try chain.evaluate(leaf, policies: [.basicX509])
        #expect(!result.isTrusted)
        #expect(result.reasons == [.pathLength], "\(result)")
        #expect(result.chain == [leaf, chain.intermediate, chain.root])
        #expect(!(try chain.opensslVerifies("leaf", at: midValidityTime)))
        // pathlen:1 allows it.
        let one = try Chain(rootPathLength: 1)
        #expect(try one.evaluate(one.leaf("leaf")).isTrusted)
    }

    @Test("Name constraints: a SAN or a CN-only leaf outside the permitted subtree is fatal")
    func nameConstraints() throws {
        let chain = try Chain(intermediateExtra: "nameConstraints = critical, permitted;DNS:example.com")
        let inside = try chain.leaf("inside")
        #expect(try chain.evaluate(inside).isTrusted)
        let outside = try chain.leaf("outside", cn: "www.evil.test", san: "DNS:www.evil.test")
        let result = try chain.evaluate(outside, policies: [.sslServer(hostname: "www.evil.test")])
        #expect(result.statuses[0].reasons == [.nameConstraints], "\(result)")
        #expect(result.outcome == .fatalTrustFailure)
        #expect(!(try chain.opensslVerifies("outside", at: midValidityTime)))
        // No SAN: with the CN fallback the CN is the hostname, and the DNS constraints apply to it.
        let cnOnly = try chain.leaf("cn-only", cn: "www.evil.test", san: nil)
        let cnResult = try chain.evaluate(
            cnOnly, policies: [.sslServerWithCommonNameFallback(hostname: "www.evil.test")])
        #expect(cnResult.statuses[0].reasons == [.nameConstraints], "\(cnResult)")
        let cnInside = try chain.leaf("cn-inside", cn: "www.example.com", san: nil)
        #expect(
            try chain.evaluate(cnInside, policies: [.sslServerWithCommonNameFallback(hostname: "www.example.com")])
                .isTrusted)
        // The SSL policy itself never falls back to the CN: the constraints still refuse it, and it matches no name.
        let strict = try chain.evaluate(cnOnly, policies: [.sslServer(hostname: "www.evil.test")])
        #expect(strict.statuses[0].reasons == [.nameConstraints, .hostnameMismatch], "\(strict)")
    }

    /// Root B is cross-signed by an old root (an anchor that has expired) and by a new root. Both cross
    /// certificates are valid and match by key identifier, so the builder tries the first given — through the
    /// expired anchor — and must backtrack to the other.
    @Test("Cross-signed root: backtracking past the path through an expired anchor")
    func crossSignedBacktracking() throws {
        let pki = try TestPKI()
        let oldRoot = try pki.issue(
            "old-root", subject: "/O=Trust Tests/CN=Old Root", issuer: nil,
            extensions: TestPKI.caExtensions(selfSigned: true), notAfter: "20250101000000Z")
        let newRoot = try pki.issue(
            "new-root", subject: "/O=Trust Tests/CN=New Root", issuer: nil,
            extensions: TestPKI.caExtensions(selfSigned: true))
        let rootB = try pki.issue(
            "root-b", subject: "/O=Trust Tests/CN=Root B", issuer: nil,
            extensions: TestPKI.caExtensions(selfSigned: true))
        let byOld = try pki.issue(
            "b-by-old", subject: "/O=Trust Tests/CN=Root B", issuer: "old-root", key: "root-b",
            extensions: TestPKI.caExtensions())
        let byNew = try pki.issue(
            "b-by-new", subject: "/O=Trust Tests/CN=Root B", issuer: "new-root", key: "root-b",
            extensions: TestPKI.caExtensions())
        let intermediate = try pki.issue(
            "intermediate", subject: "/O=Trust Tests/CN=Intermediate", issuer: "root-b",
            extensions: TestPKI.caExtensions())
        let leaf = try pki.issue(
            "leaf", subject: "/O=Trust Tests/CN=www.example.com", issuer: "intermediate",
            extensions: TestPKI.leafExtensions())

        let evaluator = TrustEvaluator(
            anchors: [oldRoot, newRoot], policies: [.sslServer(hostname: "www.example.com")],
            verificationDate: midValidity)
        let result = try evaluator.evaluate(leaf, intermediates: [byOld, rootB, intermediate, byNew])
        #expect(result.isTrusted, "\(result)")
        #expect(result.chain == [leaf, intermediate, byNew, newRoot])
        #expect(result.work.pathsValidated == 2, "the path through the expired root was tried first")

        // Any order of the intermediates finds it.
        let reversed = try evaluator.evaluate(leaf, intermediates: [byNew, intermediate, rootB, byOld])
        #expect(reversed.chain == [leaf, intermediate, byNew, newRoot])
        // With only the expired path, the failure is the old root's expiry.
        let onlyOld = try evaluator.evaluate(leaf, intermediates: [byOld, intermediate])
        #expect(onlyOld.chain == [leaf, intermediate, byOld, oldRoot])
        #expect(onlyOld.statuses.map(\.reasons) == [[], [], [], [.expired]])
        // Root B as the anchor: the shortest path.
        let direct = try TrustEvaluator(anchors: [rootB], verificationDate: midValidity)
            .evaluate(leaf, intermediates: [byOld, byNew, intermediate])
        #expect(direct.chain == [leaf, intermediate, rootB])
    }

    @Test("Self-signed leaf: trusted as its own anchor, an untrusted root otherwise")
    func selfSignedLeaf() throws {
        let pki = try TestPKI()
        let leaf = try pki.issue(
            "self", subject: "/O=Trust Tests/CN=www.example.com", issuer: nil,
            extensions: TestPKI.leafExtensions(selfSigned: true))
        let other = try pki.issue(
            "other", subject: "/O=Trust Tests/CN=Other Root", issuer: nil,
            extensions: TestPKI.caExtensions(selfSigned: true))
        let policies: [TrustPolicy] = [.sslServer(hostname: "www.example.com")]
        let anchored = try TrustEvaluator(anchors: [leaf], policies: policies, verificationDate: midValidity)
            .evaluate(leaf)
        #expect(anchored.isTrusted, "\(anchored)")
        #expect(anchored.chain == [leaf])
        let notAnchored = try TrustEvaluator(anchors: [other], policies: policies, verificationDate: midValidity)
            .evaluate(leaf, intermediates: [other])
        #expect(notAnchored.chain == [leaf])
        #expect(notAnchored.statuses[0].reasons == [.untrustedRoot], "\(notAnchored)")
        #expect(notAnchored.outcome == .recoverableTrustFailure)
        // Expired and not an anchor: both reasons.
        let expired = try TrustEvaluator(
            anchors: [other], policies: policies, verificationDate: Date(timeIntervalSince1970: 2_300_000_000)
        ).evaluate(leaf)
        #expect(Set(expired.statuses[0].reasons) == [.untrustedRoot, .expired])
    }

    /// Dozens of same-subject candidate issuers that copy the real intermediate's key identifier, each with
    /// a key of its own, given before the real one.
    @Test("Hostile input: same-subject decoy issuers end within the budget, by the work count")
    func hostileCandidates() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf")
        let keyIdentifier = try #require(chain.intermediate.subjectKeyIdentifier)
            .map { String(format: "%02X", $0) }.joined(separator: ":")
        var decoys: [Certificate] = []
        for index in 0..<40 {
            decoys.append(
                try chain.pki.issue(
                    "decoy\(index)", subject: "/O=Trust Tests/CN=Intermediate", issuer: nil,
                    extensions: """
                        basicConstraints = critical, CA:TRUE
                        keyUsage = critical, keyCertSign, cRLSign
                        subjectKeyIdentifier = \(keyIdentifier)
                        """))
        }
        #expect(decoys.allSatisfy { $0.subjectKeyIdentifier == chain.intermediate.subjectKeyIdentifier })
        let policies: [TrustPolicy] = [.sslServer(hostname: "www.example.com")]

        let budget = TrustBudget.standard
        let hostile = try TrustEvaluator(anchors: [chain.root], policies: policies, verificationDate: midValidity)
            .evaluate(leaf, intermediates: decoys + [chain.intermediate])
        #expect(!hostile.isTrusted)
        #expect(hostile.statuses[0].reasons.contains(.budgetExhausted), "\(hostile)")
        #expect(hostile.work.signatureChecks <= budget.maxSignatureChecks)
        #expect(hostile.work.candidatesConsidered <= budget.maxCandidatesPerStep * budget.maxPathLength)
        #expect(hostile.work.pathsValidated <= budget.maxPathLength)

        // A budget that reaches the real issuer (41st) finds it, having tried every decoy once at the leaf.
        let generous = TrustBudget(maxCandidatesPerStep: 64, maxSignatureChecks: 512)
        let found = try TrustEvaluator(
            anchors: [chain.root], policies: policies, verificationDate: midValidity, budget: generous
        ).evaluate(leaf, intermediates: decoys + [chain.intermediate])
        #expect(found.isTrusted, "\(found)")
        #expect(found.chain == [leaf, chain.intermediate, chain.root])
        #expect(
            found.work.signatureChecks == 41 + 2,
            "41 candidates at the leaf, none for the intermediate's lone candidate, 2 in OpenSSL")

        // The real issuer given first: found at once under the default budget.
        let first = try TrustEvaluator(anchors: [chain.root], policies: policies, verificationDate: midValidity)
            .evaluate(leaf, intermediates: [chain.intermediate] + decoys)
        #expect(first.isTrusted)
        #expect(first.work.signatureChecks == 1 + 2)
    }

    @Test("Revocation from CRLs made by openssl ca: revoked is fatal, a missing CRL recoverable")
    func revocation() throws {
        let chain = try Chain()
        let good = try chain.leaf("good")
        let revoked = try chain.leaf("revoked")
        try chain.pki.revoke("revoked", issuer: "intermediate")
        let intermediateCRL = try chain.pki.crl("intermediate")
        let rootCRL = try chain.pki.crl("root")
        func evaluate(_ leaf: Certificate, _ crls: [CertificateRevocationList]) throws -> TrustResult {
            try TrustEvaluator(
                anchors: [chain.root], policies: [.sslServer(hostname: "www.example.com")],
                verificationDate: midValidity, certificateRevocationLists: crls
            ).evaluate(leaf, intermediates: [chain.intermediate])
        }
        #expect(try evaluate(good, [rootCRL, intermediateCRL]).isTrusted)
        let result = try evaluate(revoked, [rootCRL, intermediateCRL])
        #expect(result.statuses.map(\.reasons) == [[.revoked], [], []], "\(result)")
        #expect(result.outcome == .fatalTrustFailure)
        #expect(
            !(try chain.pki.opensslVerifies(
                "revoked", anchors: ["root"], intermediates: ["intermediate"], time: midValidityTime,
                crls: ["root", "intermediate"])))
        #expect(
            try chain.pki.opensslVerifies(
                "good", anchors: ["root"], intermediates: ["intermediate"], time: midValidityTime,
                crls: ["root", "intermediate"]))
        // No CRL from the root for the intermediate: its revocation cannot be established.
        let missing = try evaluate(good, [intermediateCRL])
        #expect(missing.statuses.map(\.reasons) == [[], [.revocationUnavailable], []], "\(missing)")
        // The anchor is not checked for revocation: no CRL of the root about itself is needed (openssl verify
        // -crl_check_all wants one).
        #expect(try evaluate(good, [intermediateCRL, rootCRL]).isTrusted)
        #expect(missing.outcome == .recoverableTrustFailure)
        // Before the CRLs were issued (they start now), they are not yet valid.
        let early = try TrustEvaluator(
            anchors: [chain.root], verificationDate: Date(timeIntervalSince1970: 1_600_000_000),
            certificateRevocationLists: [rootCRL, intermediateCRL]
        ).evaluate(good, intermediates: [chain.intermediate])
        #expect(early.reasons == [.revocationUnavailable], "\(early)")
        // A CRL without the CRLNumber extension is not trusted (RFC 5280 5.2.3), not even to say "revoked": the
        // leaf's revocation cannot be established.
        let config = try String(decoding: chain.pki.directory.read("ca.cnf"), as: UTF8.self)
        try chain.pki.directory.write(
            "nonumber.cnf", config.replacingOccurrences(of: "crlnumber = crlnumber.txt\n", with: ""))
        try OpenSSLCLI.require(
            ["ca", "-config", "nonumber.cnf", "-gencrl", "-cert", "intermediate.pem", "-keyfile", "intermediate.key",
             "-crldays", "3650", "-out", "nonumber.crl"], in: chain.pki.url)
        try OpenSSLCLI.require(
            ["crl", "-in", "nonumber.crl", "-outform", "DER", "-out", "nonumber.crl.der"], in: chain.pki.url)
        let unnumbered = try CertificateRevocationList(derEncoded: chain.pki.directory.read("nonumber.crl.der"))
        for leaf in [good, revoked] {
            let result = try evaluate(leaf, [rootCRL, unnumbered])
            #expect(result.statuses.map(\.reasons) == [[.revocationUnavailable], [], []], "\(result)")
        }
    }

    @Test("Two CAs certifying each other without an anchor: the loop ends at a missing issuer")
    func crossCertificationLoop() throws {
        let pki = try TestPKI()
        let other = try pki.issue(
            "other", subject: "/CN=Other Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        try pki.issue("b", subject: "/CN=B", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let aByB = try pki.issue("a-by-b", subject: "/CN=A", issuer: "b", key: "a", extensions: TestPKI.caExtensions())
        let bByA = try pki.issue(
            "b-by-a", subject: "/CN=B", issuer: "a-by-b", issuerKey: "a", key: "b", extensions: TestPKI.caExtensions())
        let leaf = try pki.issue(
            "leaf", subject: "/CN=www.example.com", issuer: "a-by-b", issuerKey: "a",
            extensions: TestPKI.leafExtensions())
        let result = try TrustEvaluator(anchors: [other], verificationDate: midValidity)
            .evaluate(leaf, intermediates: [bByA, aByB, other])
        #expect(result.chain == [leaf, aByB, bByA])
        #expect(result.statuses.map(\.reasons) == [[], [], [.missingIssuer]], "\(result)")
        #expect(result.work.candidatesConsidered == 2)
        #expect(result.work.pathsValidated == 1)
    }

    @Test("A date no time_t holds is a setup error")
    func invalidDate() throws {
        let chain = try Chain()
        for seconds in [1e300, -1e300, .nan] {
            #expect(throws: TrustError(.invalidDate, "")) {
                try TrustEvaluator(anchors: [chain.root], verificationDate: Date(timeIntervalSince1970: seconds))
                    .evaluate(chain.intermediate)
            }
        }
    }

    @Test("One evaluator, the same certificates, 32 concurrent evaluations: the same answers")
    func concurrentEvaluations() async throws {
        let chain = try Chain()
        let good = try chain.leaf("good")
        let expired = try chain.leaf("expired", notAfter: "20250101000000Z")
        let evaluator = TrustEvaluator(
            anchors: [chain.root], policies: [.sslServer(hostname: "www.example.com")], verificationDate: midValidity)
        let intermediate = chain.intermediate
        try await withThrowingTaskGroup(of: (Bool, [TrustFailureReason]).self) { group in
            for index in 0..<32 {
                let leaf = index.isMultiple(of: 2) ? good : expired
                group.addTask {
                    let result = try evaluator.evaluate(leaf, intermediates: [intermediate])
                    return (index.isMultiple(of: 2), result.reasons)
                }
            }
            for try await (isGood, reasons) in group {
                #expect(reasons == (isGood ? [] : [.expired]))
            }
        }
    }

    @Test("Bad setups throw TrustError; an untrusted leaf never does")
    func setupErrors() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf")
        #expect(throws: TrustError(.invalidBudget, "")) {
            try TrustEvaluator(anchors: [chain.root], budget: TrustBudget(maxSignatureChecks: 0)).evaluate(leaf)
        }
        #expect(throws: TrustError(.noPolicy, "")) {
            try TrustEvaluator(anchors: [chain.root], policies: []).evaluate(leaf)
        }
        #expect(throws: TrustError(.malformedCRL, "")) {
            try CertificateRevocationList(derEncoded: Data([0x30, 0x03]))
        }
        #expect(throws: TrustError(.malformedCRL, "")) { try CertificateRevocationList(derEncoded: leaf.derEncoded) }
        // No anchors at all is a setup an evaluation answers: nothing is trusted.
        let none = try TrustEvaluator(anchors: [], verificationDate: midValidity)
            .evaluate(leaf, intermediates: [chain.intermediate, chain.root])
        #expect(none.chain == [leaf, chain.intermediate, chain.root])
        #expect(none.statuses.map(\.reasons) == [[], [], [.untrustedRoot]])
    }
}
