import Certificates
import Foundation
@testable import TLS
import TestVectors
import Testing
import Trust

/// Kept judgements of server chains (``ChainJudgements``): used only where the same judgement would be made again.
@Suite("Kept judgements of server chains", .serialized, .hostOnly)
struct ChainJudgementTests {
    @Test("a judgement holds under the same anchors (the same array or an equal copy), not under others or more nor under other trust settings, nor outside a certificate's validity; a refusal is not kept; the oldest goes first")
    func holds() throws {
        let world = try TLSWorld()
        let server = try Certificate(pemEncoded: String(decoding: try world.ca.directory.read("server.pem"), as: UTF8.self))
        let anchors = [world.root]
        let result = try TrustEvaluator(anchors: anchors, policies: [.sslServer(hostname: "tls.example")]).evaluate(server)
        #expect(result.isTrusted)
        let judgements = ChainJudgements()
        let now = Date()
        judgements.keep(result, of: [server], serverName: "tls.example", anchors: anchors, settings: nil)
        #expect(judgements.judgement(of: [server], serverName: "tls.example", anchors: anchors, settings: nil, at: now) != nil)
        let copy = [try Certificate(derEncoded: world.root.derEncoded)]
        #expect(judgements.judgement(of: [server], serverName: "tls.example", anchors: copy, settings: nil, at: now) != nil, "an equal copy")
        #expect(judgements.judgement(of: [server], serverName: "other.example", anchors: anchors, settings: nil, at: now) == nil)
        let denial = TrustSettingsSet(domains: [[world.root: TrustSettings([try .init(result: .deny)])]])
        #expect(
            judgements.judgement(of: [server], serverName: "tls.example", anchors: anchors, settings: denial, at: now) == nil,
            "other trust settings")
        #expect(judgements.judgement(of: [server, world.root], serverName: "tls.example", anchors: anchors, settings: nil, at: now) == nil)
        #expect(judgements.judgement(of: [server], serverName: "tls.example", anchors: [world.otherRoot], settings: nil, at: now) == nil)
        #expect(
            judgements.judgement(of: [server], serverName: "tls.example", anchors: anchors + [world.otherRoot], settings: nil, at: now) == nil,
            "more anchors could make another path")
        #expect(
            judgements.judgement(of: [server], serverName: "tls.example", anchors: anchors, settings: nil, at: server.notValidAfter.addingTimeInterval(1))
                == nil)
        #expect(
            judgements.judgement(of: [server], serverName: "tls.example", anchors: anchors, settings: nil, at: server.notValidBefore.addingTimeInterval(-1))
                == nil)

        let refused = try TrustEvaluator(anchors: [world.otherRoot], policies: [.sslServer(hostname: "tls.example")]).evaluate(server)
        judgements.keep(refused, of: [server], serverName: "refused.example", anchors: [world.otherRoot], settings: nil)
        #expect(judgements.judgement(of: [server], serverName: "refused.example", anchors: [world.otherRoot], settings: nil, at: now) == nil)

        for index in 0..<ChainJudgements.capacity {
            judgements.keep(result, of: [server], serverName: "n\(index).example", anchors: anchors, settings: nil)
        }
        #expect(judgements.judgement(of: [server], serverName: "tls.example", anchors: anchors, settings: nil, at: now) == nil, "the oldest is dropped")
        #expect(judgements.judgement(of: [server], serverName: "n0.example", anchors: anchors, settings: nil, at: now) != nil)
    }

    @Test("a connection keeps its trusted judgement; a kept judgement does not spare a revocation policy its check")
    func connections() async throws {
        let world = try TLSWorld()
        ChainJudgements.shared.removeAll()
        let server = try world.server()
        let (connection, _) = try await world.fetch(server, TLSConfiguration(anchors: [world.root], serverName: "tls.example"))
        #expect(
            ChainJudgements.shared.judgement(
                of: connection.peerCertificates, serverName: "tls.example", anchors: [world.root], settings: nil, at: Date()) != nil)
        // The server staples nothing and the network is off: a hard-fail policy must refuse it, kept judgement or not.
        let hardFail = RevocationPolicy(methods: .ocsp, requirePositiveResponse: true, networkAccessAllowed: false)
        do {
            _ = try await world.fetch(server, TLSConfiguration(anchors: [world.root], serverName: "tls.example", revocation: hardFail))
            Issue.record("a kept judgement stood in for the revocation check")
        } catch let error as TLSError {
            #expect(error.trust?.statuses.first?.reasons.contains(.revocationUnavailable) == true, "\(error)")
        }
    }
}
