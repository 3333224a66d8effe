import Certificates
import Foundation
@testable import TLS
import TestVectors
import Testing
import Trust

/// When a resumed connection may keep the judgement its session's chain had (no certificates are exchanged on
/// resumption): only where the same judgement would be made again.
@Suite("A kept session's judgement", .hostOnly)
struct SessionJudgementTests {
    @Test("stands under the same anchors (the same array or an equal copy), not under others, a revocation policy, a judge, or past a certificate's validity")
    func stands() throws {
        let world = try TLSWorld()
        let server = try Certificate(pemEncoded: String(decoding: try world.ca.directory.read("server.pem"), as: UTF8.self))
        let anchors = [world.root]
        let result = try TrustEvaluator(anchors: anchors, policies: [.sslServer(hostname: "tls.example")]).evaluate(server)
        #expect(result.isTrusted)
        let judgement = TLSSessionCache.Judgement(result: result, anchors: anchors)
        let now = Date()
        var configuration = TLSConfiguration(anchors: anchors, serverName: "tls.example")
        #expect(judgement.stands(under: configuration, at: now))
        configuration.anchors = [try Certificate(derEncoded: world.root.derEncoded)]
        #expect(judgement.stands(under: configuration, at: now), "an equal copy of the anchors")
        configuration.anchors = [world.otherRoot]
        #expect(!judgement.stands(under: configuration, at: now))
        configuration.anchors = anchors + [world.otherRoot]
        #expect(!judgement.stands(under: configuration, at: now), "more anchors could change the path")

        configuration.anchors = anchors
        #expect(!judgement.stands(under: configuration, at: server.notValidAfter.addingTimeInterval(1)))
        #expect(!judgement.stands(under: configuration, at: server.notValidBefore.addingTimeInterval(-1)))
        var revoking = configuration
        revoking.revocation = RevocationPolicy()
        #expect(!judgement.stands(under: revoking, at: now))
        var judged = configuration
        judged.serverJudge = { _, _ in result }
        #expect(!judgement.stands(under: judged, at: now))

        let refused = try TrustEvaluator(anchors: [world.otherRoot], policies: [.sslServer(hostname: "tls.example")]).evaluate(server)
        #expect(!TLSSessionCache.Judgement(result: refused, anchors: [world.otherRoot]).stands(
            under: TLSConfiguration(anchors: [world.otherRoot], serverName: "tls.example"), at: now))
    }
}
