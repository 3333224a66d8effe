import Certificates
import Foundation
import Testing
@testable import Trust

/// The OpenSSL store of an anchor is made once and shared by the validations that end at it.
@Suite("Trust: anchor stores kept for reuse")
struct AnchorStoreTests {
    @Test("one store per anchor, handed out again; the least recently used goes when the cache is full")
    func reuseAndEviction() throws {
        let pki = try TestPKI()
        let roots = try (0..<3).map {
            try pki.issue(
                "root\($0)", subject: "/O=Trust Tests/CN=Root \($0)", issuer: nil,
                extensions: TestPKI.caExtensions(selfSigned: true))
        }
        let cache = AnchorStores(capacity: 2)
        func store(_ index: Int) throws -> AnchorStore { try #require(roots[index].withUnsafeX509 { cache.store(for: $0) }) }

        let first = try store(0)
        #expect(try store(0) === first, "the same anchor gets the same store")
        let second = try store(1)
        #expect(second !== first)
        _ = try store(0)  // root 0 is now the most recently used
        let third = try store(2)  // full: root 1 goes
        #expect(cache.count == 2)
        #expect(try store(0) === first && store(2) === third, "the recently used stay")
        #expect(try store(1) !== second, "the evicted anchor gets a new store")
        #expect(cache.count == 2)
    }

    @Test("evaluations that share an anchor give the same answers as before, in parallel too")
    func sharedAcrossEvaluations() async throws {
        let pki = try TestPKI()
        let root = try pki.issue("root", subject: "/O=Trust Tests/CN=Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let leaf = try pki.issue("leaf", subject: "/O=Trust Tests/CN=Leaf", issuer: "root", extensions: TestPKI.leafExtensions())
        let other = try pki.issue(
            "other", subject: "/O=Trust Tests/CN=Other", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let trusting = TrustEvaluator(anchors: [root], policies: [.sslServer(hostname: "www.example.com")])
        let notTrusting = TrustEvaluator(anchors: [other], policies: [.sslServer(hostname: "www.example.com")])
        let answers = try await withThrowingTaskGroup(of: (Bool, Bool).self) { group in
            for _ in 0..<16 {
                group.addTask { (try trusting.evaluate(leaf).isTrusted, try notTrusting.evaluate(leaf).isTrusted) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 16 && answers.allSatisfy { $0 == (true, false) })
    }
}
