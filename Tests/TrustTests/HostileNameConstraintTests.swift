import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// Hostile input for name-constraint processing: an intermediate with a huge excluded-subtree set over a leaf with
/// many names. The work is bounded by counts (one path validated, its signatures checked once), never by time.
@Suite("Hostile input: large name-constraint sets")
struct HostileNameConstraintTests {
    static func chain(
        constraints: Int, names: Int
    ) throws -> (pki: TestPKI, root: Certificate, intermediate: Certificate, leaf: Certificate) {
        let pki = try TestPKI()
        let excluded = (0..<constraints).map { "excluded;DNS:blocked\($0).invalid" }.joined(separator: ", ")
        let root = try pki.issue(
            "root", subject: "/CN=NC Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let intermediate = try pki.issue(
            "intermediate", subject: "/CN=NC Intermediate", issuer: "root",
            extensions: TestPKI.caExtensions(extra: "nameConstraints = critical, \(excluded)"))
        let sans = (0..<names).map { "DNS:host\($0).example.com" }.joined(separator: ", ")
        let leaf = try pki.issue(
            "leaf", subject: "/CN=host0.example.com", issuer: "intermediate",
            extensions: TestPKI.leafExtensions(subjectAltName: sans))
        return (pki, root, intermediate, leaf)
    }

    @Test("1,000 names against 2,000 excluded subtrees: refused as too complex after one path, fatal")
    func excessive() throws {
        let (_, root, intermediate, leaf) = try Self.chain(constraints: 2000, names: 1000)
        #expect(intermediate.derEncoded.count > 40_000, "the constraint set is really there")
        let result = try TrustEvaluator(anchors: [root], policies: [.basicX509], verificationDate: midValidity)
            .evaluate(leaf, intermediates: [intermediate])
        #expect(!result.isTrusted)
        #expect(result.outcome == .fatalTrustFailure, "\(result)")
        #expect(result.work.pathsValidated == 1)
        #expect(result.work.signatureChecks <= 2)
        // Our own check refuses it too, without comparing 2,000,000 pairs (more than 2^20).
        #expect(result.statuses[0].rules == ["nameConstraints.tooComplex"], "\(result)")
        let start = ContinuousClock.now
        _ = try TrustEvaluator(anchors: [root], policies: [.basicX509], verificationDate: midValidity)
            .evaluate(leaf, intermediates: [intermediate])
        print("1,000 names × 2,000 excluded subtrees: evaluated in \(ContinuousClock.now - start)")
    }

    @Test("100 names against 500 excluded subtrees none of them matches: trusted after one path")
    func large() throws {
        let (pki, root, intermediate, leaf) = try Self.chain(constraints: 500, names: 100)
        let result = try TrustEvaluator(
            anchors: [root], policies: [.sslServer(hostname: "host42.example.com")], verificationDate: midValidity
        ).evaluate(leaf, intermediates: [intermediate])
        #expect(result.isTrusted, "\(result)")
        #expect(result.work.pathsValidated == 1)
        // And a name that one of the 500 subtrees excludes is refused by it, as openssl verify refuses it.
        let blocked = try pki.issue(
            "blocked", subject: "/CN=blocked321.invalid", issuer: "intermediate",
            extensions: TestPKI.leafExtensions(subjectAltName: "DNS:blocked321.invalid"))
        let refused = try TrustEvaluator(anchors: [root], verificationDate: midValidity)
            .evaluate(blocked, intermediates: [intermediate])
        #expect(refused.statuses[0].reasons == [.nameConstraints], "\(refused)")
        #expect(try !pki.opensslVerifies("blocked", anchors: ["root"], intermediates: ["intermediate"], time: midValidityTime))
        #expect(try pki.opensslVerifies("leaf", anchors: ["root"], intermediates: ["intermediate"], time: midValidityTime))
    }
}
