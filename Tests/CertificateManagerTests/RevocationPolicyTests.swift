import CertificateManager
import Certificates
import Foundation
import TestVectors
import Testing

/// The manager's revocation policies against an `openssl ocsp` responder behind a loopback HTTP server.
@Suite("Revocation check policy")
struct RevocationPolicyTests {
    final class World: @unchecked Sendable {
        // @unchecked: every property is set in init and only read after.
        let pki: ManagerWorld
        let server: LoopbackHTTPServer
        let root: Certificate
        let good: Certificate
        let revoked: Certificate
        /// Its OCSP responder is a port where nothing listens.
        let unreachable: Certificate
        /// Revoked; its OCSP responder unreachable, its CRL distribution point served.
        let revokedByCRL: Certificate

        init() throws {
            pki = try ManagerWorld()
            server = try pki.ca.responder()
            let closedPort = try LoopbackHTTPServer(.silent).port
            root = try pki.root()
            good = try pki.leaf(
                "good", commonName: "good.example", extra: "authorityInfoAccess = OCSP;URI:\(server.url("/ocsp"))")
            revoked = try pki.leaf(
                "revoked", commonName: "revoked.example", extra: "authorityInfoAccess = OCSP;URI:\(server.url("/ocsp"))"
            )
            unreachable = try pki.leaf(
                "unreachable", commonName: "unreachable.example",
                extra: "authorityInfoAccess = OCSP;URI:http://127.0.0.1:\(closedPort)/ocsp")
            revokedByCRL = try pki.leaf(
                "revoked-crl", commonName: "revoked-crl.example",
                extra: "authorityInfoAccess = OCSP;URI:http://127.0.0.1:\(closedPort)/ocsp\n"
                    + "crlDistributionPoints = URI:\(server.url("/root.crl"))")
            try pki.ca.revoke("revoked", issuer: "root")
            try pki.ca.revoke("revoked-crl", issuer: "root")
            try pki.ca.generateCRL("root")
        }

        func manager(_ policy: SecurityPolicyConfiguration.RevocationCheckPolicy) throws -> CertificateManager {
            let manager = CertificateManager(
                keychain: try pki.keychain(), configuration: SecurityPolicyConfiguration(revocationCheckPolicy: policy))
            if try !manager.isCertificateStoreInUse { try manager.setCertificates([root]) }
            return manager
        }

        /// The error code of validating `leaf` for www.example.com, nil when it passes.
        func outcome(_ leaf: Certificate, _ policy: SecurityPolicyConfiguration.RevocationCheckPolicy) async throws
            -> CertificateManagerError.Code?
        {
            do {
                _ = try await manager(policy).validate(
                    trust: [leaf], expectedServiceDomain: nil, expectedHostname: "www.example.com", peerPort: 443)
                return nil
            } catch let error as CertificateManagerError {
                return error.code
            }
        }
    }

    @Test("the responder's answers, as openssl's own OCSP client reads them")
    func independentTruth() throws {
        let world = try World()
        for (name, expected) in [("good", "good"), ("revoked", "revoked")] {
            let output = try world.pki.openssl(
                [
                    "ocsp", "-issuer", "root.pem", "-cert", "\(name).pem", "-url", world.server.url("/ocsp"), "-CAfile",
                    "root.pem",
                ])
            #expect(output.contains("\(name).pem: \(expected)"), "\(output)")
        }
    }

    @Test("disabled: a revoked certificate passes")
    func disabled() async throws {
        let world = try World()
        #expect(try await world.outcome(world.revoked, .disabled) == nil)
        #expect(try await world.outcome(world.unreachable, .disabled) == nil)
    }

    @Test("best effort: revoked fails by name, unreachable passes")
    func bestEffort() async throws {
        let world = try World()
        #expect(try await world.outcome(world.good, .bestEffort) == nil)
        #expect(try await world.outcome(world.revoked, .bestEffort) == .revoked)
        #expect(try await world.outcome(world.unreachable, .bestEffort) == nil)
        let error = await #expect(throws: CertificateManagerError(.revoked, "")) {
            try await world.manager(.bestEffort).validate(trust: [world.revoked])
        }
        #expect(error?.certificateSubject == "revoked.example")
    }

    @Test("mandatory: unreachable fails, good passes, revoked fails")
    func mandatory() async throws {
        let world = try World()
        #expect(try await world.outcome(world.good, .mandatory) == nil)
        #expect(try await world.outcome(world.revoked, .mandatory) == .revoked)
        #expect(try await world.outcome(world.unreachable, .mandatory) == .revocationUnavailable)
    }

    @Test("cancelling a validation cancels its fetches: a responder that never answers does not hold it to its timeout")
    func cancelledValidation() async throws {
        let world = try World()
        let silent = try LoopbackHTTPServer(.silent)
        let hanging = try world.pki.leaf("hanging", commonName: "www.example.com", extra: "authorityInfoAccess = OCSP;URI:\(silent.url("/ocsp"))")
        let manager = try world.manager(.mandatory)
        let (outcome, afterCancel) = try await cancelling(after: .milliseconds(300)) {
            try await manager.validate(trust: [hanging], expectedServiceDomain: nil, expectedHostname: "www.example.com", peerPort: 443)
        }
        // Ended by the cancellation: the fetch's own timeout would have ended it as revocationUnavailable (the
        // mandatory policy), not CancellationError. The bound leaves room for this task to wait on a cooperative pool
        // the full suite's synchronous tests hold.
        #expect(throws: CancellationError.self) { _ = try outcome.get() }
        #expect(afterCancel < .seconds(60))
        withExtendedLifetime(silent) {}
    }

    @Test("no OCSP answer: the CRL over HTTP decides, under both checking policies")
    func crlFallback() async throws {
        let world = try World()
        #expect(try await world.outcome(world.revokedByCRL, .disabled) == nil)
        #expect(try await world.outcome(world.revokedByCRL, .bestEffort) == .revoked)
        #expect(try await world.outcome(world.revokedByCRL, .mandatory) == .revoked)
        // The independent truth: openssl verify with the same CRL.
        let verify = try OpenSSLCLI.run(
            ["verify", "-crl_check", "-CAfile", "root.pem", "-CRLfile", "root.crl", "revoked-crl.pem"],
            in: world.pki.ca.url)
        #expect(verify.status != 0)
        #expect(verify.stderr.contains("certificate revoked") || verify.text.contains("certificate revoked"))
    }
}
