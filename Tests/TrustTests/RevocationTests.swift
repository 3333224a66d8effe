import Certificates
import Foundation
import NetworkFetch
import Synchronization
import TestVectors
import Testing
@testable import Trust

/// Revocation against real peers on loopback: an OCSP responder (the `openssl ocsp` CLI answering each request
/// behind a server bound to 127.0.0.1, as `openssl ocsp -port` cannot bind to loopback alone) and a CRL served
/// over HTTP, both fed by the `openssl ca` database of a test PKI.
// Serialized: its tests share the process's OCSP cache, and one of them empties it (OCSPCache.shared.removeAll), which
// made the cache test's offline evaluation find nothing when the two ran at once (seen in a full-suite run).
@Suite("Revocation: OCSP and CRLs over HTTP on loopback", .serialized)
struct RevocationTests {
    /// A root CA, leaves whose AIA and CRL distribution point name the loopback servers, one of them revoked.
    final class World: @unchecked Sendable {
        // @unchecked: every property is set in init and only read after.
        let pki: TestPKI
        let server: LoopbackHTTPServer
        let silent: LoopbackHTTPServer
        let root: Certificate
        let good: Certificate
        let revoked: Certificate
        /// Issued with the root's key but not recorded in its database: the responder says "unknown".
        let unrecorded: Certificate
        /// AIA and distribution point name a port where nothing listens.
        let unreachable: Certificate
        /// AIA names the silent server; the distribution point the real one.
        let hanging: Certificate
        let counter = RequestCounter()

        init() throws {
            pki = try TestPKI()
            let directory = pki.url
            let counter = self.counter
            server = try pki.ca.responder(onRequest: { counter.count($0) })
            silent = try LoopbackHTTPServer(.silent)
            // A port that was free a moment ago: bind and release one.
            let closedPort = try LoopbackHTTPServer(.silent).port
            root = try pki.issue(
                "root", subject: "/O=Revocation Tests/CN=Root", issuer: nil,
                extensions: TestPKI.caExtensions(selfSigned: true))
            func leafExtensions(ocsp: String, crl: String) -> String {
                TestPKI.leafExtensions()
                    + "\nauthorityInfoAccess = OCSP;URI:\(ocsp)\ncrlDistributionPoints = URI:\(crl)\n"
            }
            let served = leafExtensions(ocsp: server.url("/ocsp"), crl: server.url("/root.crl"))
            good = try pki.issue("good", subject: "/CN=good.example", issuer: "root", extensions: served)
            revoked = try pki.issue("revoked", subject: "/CN=revoked.example", issuer: "root", extensions: served)
            unreachable = try pki.issue(
                "unreachable", subject: "/CN=unreachable.example", issuer: "root",
                extensions: leafExtensions(
                    ocsp: "http://127.0.0.1:\(closedPort)/ocsp", crl: "http://127.0.0.1:\(closedPort)/root.crl"))
            hanging = try pki.issue(
                "hanging", subject: "/CN=hanging.example", issuer: "root",
                extensions: leafExtensions(ocsp: silent.url("/ocsp"), crl: server.url("/root.crl")))
            // Signed by the root with `openssl x509 -req`, which keeps no database.
            try pki.directory.write("unrecorded.ext", served)
            try OpenSSLCLI.require(
                ["req", "-new", "-key", "good.key", "-subj", "/CN=unrecorded.example", "-out", "unrecorded.csr"],
                in: directory)
            try OpenSSLCLI.require(
                [
                    "x509", "-req", "-in", "unrecorded.csr", "-CA", "root.pem", "-CAkey", "root.key", "-set_serial",
                    "4242", "-days", "30", "-extfile", "unrecorded.ext", "-out", "unrecorded.pem",
                ], in: directory)
            unrecorded = try pki.certificate("unrecorded")
            try pki.revoke("revoked", issuer: "root")
            _ = try pki.crl("root")
        }

        func evaluate(
            _ leaf: Certificate, _ revocation: RevocationPolicy, at date: Date? = nil
        ) throws -> TrustResult {
            try TrustEvaluator(anchors: [root], verificationDate: date, revocation: revocation).evaluate(leaf)
        }
    }

    /// Counts the requests a server answered, by path.
    final class RequestCounter: @unchecked Sendable {
        // @unchecked: `counts` is only touched under `lock`.
        private let lock = NSLock()
        private var counts: [String: Int] = [:]
        func count(_ request: LoopbackHTTPServer.Request) { lock.withLock { counts[request.path, default: 0] += 1 } }
        subscript(path: String) -> Int { lock.withLock { counts[path] ?? 0 } }
    }

    @Test("an injected fetcher carries every revocation request: OCSP as a POST of a request, the CRL as a GET; one that times out is no answer")
    func injectedFetcher() throws {
        let world = try World()
        let policy = RevocationPolicy(methods: .ocsp, timeout: .seconds(7))
        let recorder = RecordingFetcher()
        var evaluator = TrustEvaluator(anchors: [world.root], revocation: policy)
        evaluator.network = recorder
        #expect(try evaluator.evaluate(world.good).isTrusted)
        #expect(try evaluator.evaluate(world.revoked).statuses[0].reasons == [.revoked])
        let ocsp = recorder.requests
        #expect(ocsp.count == 2 && world.counter["/ocsp"] == 2)
        #expect(ocsp.allSatisfy {
            $0.url == world.server.url("/ocsp") && $0.contentType == "application/ocsp-request" && ($0.body?.count ?? 0) > 0
                && $0.timeout == .seconds(7)
        })
        evaluator.revocation = Self.crlOnly
        #expect(try evaluator.evaluate(world.revoked).statuses[0].reasons == [.revoked])
        #expect(recorder.requests.last.map { ($0.url, $0.body == nil) } ?? ("", false) == (world.server.url("/root.crl"), true))

        // A fetcher that times out: nothing reaches the network; soft-fail passes, hard-fail fails recoverably.
        // (The answers above are kept while fresh, so they are forgotten first.)
        OCSPCache.shared.removeAll()
        let failing = RecordingFetcher(failing: FetchError(.timeout))
        evaluator.network = failing
        evaluator.revocation = Self.ocspOnly
        #expect(try evaluator.evaluate(world.revoked).isTrusted)
        evaluator.revocation = RevocationPolicy(methods: .ocsp, requirePositiveResponse: true)
        #expect(try evaluator.evaluate(world.good).statuses[0].reasons == [.revocationUnavailable])
        #expect(failing.requests.count == 2 && world.counter["/ocsp"] == 2)
    }

    @Test(
        "freshness, decided in Swift (it was C): 5 minutes of skew both ways, a day without nextUpdate for OCSP, never for a CRL",
        arguments: [
            // (thisUpdate, nextUpdate, maximum age without nextUpdate, fresh at t = 1_000_000)
            (1_000_000 - 10, 1_000_000 + 10, 86_400, true),
            (1_000_000 + 300, 1_000_000 + 900, 86_400, true),  // issued at the skew's edge
            (1_000_000 + 301, 1_000_000 + 900, 86_400, false),  // issued in the future
            (1_000_000 - 900, 1_000_000 - 299, 86_400, true),  // expired, within the skew
            (1_000_000 - 900, 1_000_000 - 300, 86_400, false),  // expired at the skew's edge
            (1_000_000 - 86_400 - 299, nil, 86_400, true),  // no nextUpdate: a day and the skew
            (1_000_000 - 86_400 - 300, nil, 86_400, false),
            (1_000_000 - 10, nil, nil, false),  // a CRL without nextUpdate
        ] as [(Int, Int?, Int?, Bool)])
    func freshness(_ thisUpdate: Int, _ nextUpdate: Int?, _ maximumAge: Int?, _ fresh: Bool) {
        #expect(
            RevocationFreshness.isFresh(thisUpdate: thisUpdate, nextUpdate: nextUpdate, at: 1_000_000, maximumAgeWithoutNextUpdate: maximumAge)
                == fresh)
        #expect(!RevocationFreshness.isFresh(thisUpdate: nil, nextUpdate: 2_000_000, at: 1_000_000, maximumAgeWithoutNextUpdate: 86_400))
    }

    static let ocspOnly = RevocationPolicy(methods: .ocsp)
    static let crlOnly = RevocationPolicy(methods: .crl)

    @Test("OCSP: good is trusted, revoked is fatal on the leaf, as openssl ocsp reports them")
    func ocsp() throws {
        let world = try World()
        #expect(try world.evaluate(world.good, Self.ocspOnly).isTrusted)
        let revoked = try world.evaluate(world.revoked, Self.ocspOnly)
        #expect(revoked.outcome == .fatalTrustFailure)
        #expect(revoked.statuses[0].reasons == [.revoked])
        #expect(revoked.statuses[1].reasons.isEmpty)
        #expect(world.counter["/ocsp"] == 2)
        #expect(world.counter["/root.crl"] == 0)
        // The independent truth: openssl's own OCSP client against the same responder.
        for (name, expected) in [("good", "good"), ("revoked", "revoked")] {
            let output = try OpenSSLCLI.require(
                ["ocsp", "-issuer", "root.pem", "-cert", "\(name).pem", "-url", world.server.url("/ocsp"), "-CAfile", "root.pem"],
                in: world.pki.url)
            #expect(output.text.contains("\(name).pem: \(expected)"), "\(output.text)")
        }
    }

    @Test("a fetched OCSP answer is kept while fresh: the same chain again asks nobody, offline too; a later time past its nextUpdate asks again")
    func ocspCache() throws {
        let world = try World()
        #expect(try world.evaluate(world.revoked, Self.ocspOnly).statuses[0].reasons == [.revoked])
        #expect(try world.evaluate(world.good, Self.ocspOnly).isTrusted)
        #expect(world.counter["/ocsp"] == 2)
        // Kept: no request, the same answers, without the network as well.
        #expect(try world.evaluate(world.revoked, Self.ocspOnly).statuses[0].reasons == [.revoked])
        #expect(try world.evaluate(world.good, RevocationPolicy(methods: .ocsp, requirePositiveResponse: true)).isTrusted)
        let offline = RevocationPolicy(methods: .ocsp, networkAccessAllowed: false)
        #expect(try world.evaluate(world.revoked, offline).statuses[0].reasons == [.revoked])
        #expect(world.counter["/ocsp"] == 2)
        // Past the answers' nextUpdate (a day): not used, asked again, and the new answer is stale there too.
        let later = Date().addingTimeInterval(3 * 86_400)
        let hard = RevocationPolicy(methods: .ocsp, requirePositiveResponse: true)
        #expect(try world.evaluate(world.good, hard, at: later).statuses[0].reasons == [.revocationUnavailable])
        #expect(world.counter["/ocsp"] == 3)
        // An unknown answer is not kept.
        #expect(try world.evaluate(world.unrecorded, Self.ocspOnly).isTrusted)
        #expect(try world.evaluate(world.unrecorded, Self.ocspOnly).isTrusted)
        #expect(world.counter["/ocsp"] == 5)
    }

    @Test("the OCSP cache is bounded: the least recently used answer goes first")
    func ocspCacheBound() throws {
        let cache = OCSPCache()
        let pki = try TestPKI()
        let root = try pki.issue("root", subject: "/CN=Bound Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let now = Int(Date().timeIntervalSince1970)
        let fresh = OCSPCache.Answer(status: .good, thisUpdate: now - 10, nextUpdate: now + 3600)
        func key(_ index: Int) -> OCSPCache.Key {
            // Distinct certificates are not needed for distinct keys: the key is three fingerprints.
            OCSPCache.Key(certificate: Data([UInt8(index & 0xff), UInt8(index >> 8)]), issuer: root.sha256Fingerprint, anchor: root.sha256Fingerprint)
        }
        for index in 0..<OCSPCache.maximumEntries { cache.keep(fresh, for: key(index)) }
        #expect(cache.count == OCSPCache.maximumEntries)
        #expect(cache.answer(for: key(0), at: now) == .good)  // 0 is now the most recently used
        cache.keep(fresh, for: key(OCSPCache.maximumEntries))
        #expect(cache.count == OCSPCache.maximumEntries)
        #expect(cache.answer(for: key(1), at: now) == nil, "the least recently used went")
        #expect(cache.answer(for: key(0), at: now) == .good)
        // Unknown is never kept; a stale answer is not returned (and, stale by the clock, dropped).
        cache.keep(OCSPCache.Answer(status: .unknown, thisUpdate: now, nextUpdate: now + 60), for: key(5000))
        #expect(cache.answer(for: key(5000), at: now) == nil)
        cache.keep(OCSPCache.Answer(status: .revoked, thisUpdate: now - 7200, nextUpdate: now - 3600), for: key(5001))
        let before = cache.count
        #expect(cache.answer(for: key(5001), at: now) == nil)
        #expect(cache.count == before - 1)
    }

    @Test("CRL from the distribution point: revoked is fatal, good passes, the CRL is fetched once until nextUpdate")
    func crl() throws {
        let world = try World()
        let revoked = try world.evaluate(world.revoked, Self.crlOnly)
        #expect(revoked.outcome == .fatalTrustFailure)
        #expect(revoked.statuses[0].reasons == [.revoked])
        #expect(try world.evaluate(world.good, Self.crlOnly).isTrusted)
        #expect(try world.evaluate(world.unrecorded, Self.crlOnly).isTrusted)
        #expect(world.counter["/root.crl"] == 1, "the CRL is cached until its nextUpdate")
        #expect(world.counter["/ocsp"] == 0)
    }

    @Test("unknown to the responder: soft-fail passes, a required positive response fails recoverably, CRL settles it")
    func unknown() throws {
        let world = try World()
        #expect(try world.evaluate(world.unrecorded, Self.ocspOnly).isTrusted)
        let required = try world.evaluate(world.unrecorded, RevocationPolicy(methods: .ocsp, requirePositiveResponse: true))
        #expect(required.outcome == .recoverableTrustFailure)
        #expect(required.statuses[0].reasons == [.revocationUnavailable])
        // OCSP first, then the CRL (which does not list it): good.
        #expect(try world.evaluate(world.unrecorded, RevocationPolicy(requirePositiveResponse: true)).isTrusted)
    }

    @Test("unreachable and hanging responders: soft-fail passes, hard-fail fails, and the CRL fallback still catches a revocation")
    func unreachable() throws {
        let world = try World()
        let soft = RevocationPolicy(timeout: .seconds(1))
        let hard = RevocationPolicy(requirePositiveResponse: true, timeout: .seconds(1))
        #expect(try world.evaluate(world.unreachable, soft).isTrusted)
        #expect(try world.evaluate(world.unreachable, hard).statuses[0].reasons == [.revocationUnavailable])
        // The OCSP responder never answers (the fetch times out); the CRL then answers good.
        #expect(try world.evaluate(world.hanging, hard).isTrusted)
        #expect(
            try world.evaluate(world.hanging, RevocationPolicy(methods: .ocsp, requirePositiveResponse: true, timeout: .seconds(1)))
                .statuses[0].reasons == [.revocationUnavailable])
        // OCSP preferred; with preferCRL the CRL is asked first and OCSP never.
        let before = world.counter["/ocsp"]
        #expect(try world.evaluate(world.good, RevocationPolicy(preferCRL: true)).isTrusted)
        #expect(world.counter["/ocsp"] == before)
    }

    @Test("an async evaluation awaits its fetches: cancelled while the responder hangs, it ends at once with CancellationError, not a soft-fail pass")
    func cancelledEvaluation() async throws {
        let world = try World()
        let evaluator = TrustEvaluator(anchors: [world.root], revocation: RevocationPolicy(methods: .ocsp, timeout: .seconds(30)))
        let hanging = world.hanging
        let (result, afterCancel) = try await cancelling(after: .milliseconds(300)) { try await evaluator.evaluate(hanging) }
        // Soft-fail: had the 30 s timeout ended it, the result would be a pass, not CancellationError. The bound leaves
        // room for this task to wait on a cooperative pool the full suite's synchronous tests hold.
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(afterCancel < .seconds(25), "the evaluation went on after its cancellation")
    }

    @Test("one deadline over an evaluation's fetches: OCSP hangs until the network time is spent, and no CRL fetch starts after it")
    func networkTimeIsOneDeadline() async throws {
        let world = try World()
        // Each fetch may take 20 s; the evaluation's fetches 1 s in all.
        var evaluator = TrustEvaluator(
            anchors: [world.root], budget: TrustBudget(networkTime: .seconds(1)),
            revocation: RevocationPolicy(requirePositiveResponse: true, timeout: .seconds(20)))
        let started = ContinuousClock.now
        let result = try await evaluator.evaluate(world.hanging)
        // Below the fetch's own 20 s timeout (the bound leaves room for this task to wait on a busy cooperative pool).
        #expect(ContinuousClock.now - started < .seconds(19))
        #expect(result.statuses[0].reasons == [.revocationUnavailable])
        #expect(world.counter["/root.crl"] == 0, "a CRL fetch started after the deadline")
        // With time enough, the CRL after the hanging OCSP settles it.
        evaluator.budget.networkTime = .seconds(30)
        evaluator.revocation?.timeout = .seconds(1)
        #expect(try await evaluator.evaluate(world.hanging).isTrusted)
        #expect(world.counter["/root.crl"] == 1)
        #expect(throws: TrustError.self) {
            try TrustEvaluator(anchors: [world.root], budget: TrustBudget(networkTime: .zero)).evaluate(world.good)
        }
    }

    @Test("a stale OCSP response (past its nextUpdate) settles nothing; the CRL, still fresh, does")
    func stale() throws {
        let world = try World()
        let later = Date().addingTimeInterval(3 * 86_400)  // responses are valid one day; the leaf 20 years
        let onlyOCSP = RevocationPolicy(methods: .ocsp, requirePositiveResponse: true)
        #expect(try world.evaluate(world.revoked, onlyOCSP, at: later).statuses[0].reasons == [.revocationUnavailable])
        #expect(try world.evaluate(world.revoked, RevocationPolicy(), at: later).statuses[0].reasons == [.revoked])
    }

    @Test("a stale CRL (past its nextUpdate) settles nothing: soft-fail passes, hard-fail fails recoverably")
    func staleCRL() throws {
        let world = try World()
        // The CRL is valid ten years, the leaves twenty: eleven years on it is stale (and so are OCSP answers).
        let later = Date().addingTimeInterval(11 * 365 * 86_400)
        let crlOnly = RevocationPolicy(methods: .crl, requirePositiveResponse: true)
        #expect(try world.evaluate(world.revoked, crlOnly, at: later).statuses[0].reasons == [.revocationUnavailable])
        #expect(try world.evaluate(world.revoked, Self.crlOnly, at: later).isTrusted)
        // Fresh, the same CRL says revoked.
        #expect(try world.evaluate(world.revoked, crlOnly).statuses[0].reasons == [.revoked])
    }

    @Test("stapled OCSP responses: used without the network, checked for the right certificate and signer")
    func stapled() throws {
        let world = try World()
        let dir = world.pki.url
        for name in ["good", "revoked"] {
            try OpenSSLCLI.require(
                ["ocsp", "-issuer", "root.pem", "-cert", "\(name).pem", "-no_nonce", "-reqout", "\(name).ocspreq"], in: dir)
            try OpenSSLCLI.require(
                [
                    "ocsp", "-index", "index.txt", "-CA", "root.pem", "-rsigner", "root.pem", "-rkey", "root.key", "-reqin",
                    "\(name).ocspreq", "-respout", "\(name).ocspresp", "-ndays", "1",
                ], in: dir)
        }
        let goodResponse = try world.pki.directory.read("good.ocspresp")
        let revokedResponse = try world.pki.directory.read("revoked.ocspresp")
        let offline = { (stapled: [Data]) in
            RevocationPolicy(requirePositiveResponse: true, networkAccessAllowed: false, stapledOCSPResponses: stapled)
        }
        let before = world.counter["/ocsp"] + world.counter["/root.crl"]
        #expect(try world.evaluate(world.good, offline([goodResponse])).isTrusted)
        #expect(try world.evaluate(world.revoked, offline([revokedResponse])).statuses[0].reasons == [.revoked])
        // A response about another certificate settles nothing; garbage neither.
        #expect(try world.evaluate(world.revoked, offline([goodResponse])).statuses[0].reasons == [.revocationUnavailable])
        #expect(try world.evaluate(world.good, offline([Data([0x30, 0x03, 0x0A, 0x01, 0x00])])).statuses[0].reasons == [.revocationUnavailable])
        #expect(world.counter["/ocsp"] + world.counter["/root.crl"] == before, "no network without permission")
        // Without the network and without a stapled response nothing is learned: soft-fail passes even a revoked
        // certificate (the documented price of soft-fail), hard-fail does not.
        #expect(try world.evaluate(world.revoked, RevocationPolicy(networkAccessAllowed: false)).isTrusted)
        #expect(try world.evaluate(world.revoked, offline([])).statuses[0].reasons == [.revocationUnavailable])
    }

    /// Revocation runs only on paths that have not already failed, so a hostile chain cannot make the evaluator fetch
    /// for it, and a CRL is cached only once verified.
    @Test("no revocation fetch for a path that already failed; a CRL its issuer did not sign is not cached")
    func revocationOnlyForValidPaths() throws {
        let world = try World()
        let before = world.counter["/ocsp"] + world.counter["/root.crl"]
        let expired = try world.evaluate(world.good, RevocationPolicy(requirePositiveResponse: true), at: Date(timeIntervalSince1970: 2_400_000_000))
        #expect(expired.statuses[0].reasons.contains(.expired), "\(expired)")
        #expect(world.counter["/ocsp"] + world.counter["/root.crl"] == before, "fetched for an expired path")

        // The distribution point serves a CRL another CA signed: it settles nothing and is not kept.
        let url = world.server.url("/root.crl")
        _ = try world.pki.issue(
            "other", subject: "/O=Revocation Tests/CN=Other Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        _ = try world.pki.crl("other")
        let directory = world.pki.url
        try FileManager.default.removeItem(at: directory.appendingPathComponent("root.crl.der"))
        try FileManager.default.copyItem(
            at: directory.appendingPathComponent("other.crl.der"), to: directory.appendingPathComponent("root.crl.der"))
        let forged = try world.evaluate(world.good, RevocationPolicy(methods: .crl, requirePositiveResponse: true))
        #expect(forged.statuses[0].reasons == [.revocationUnavailable], "\(forged)")
        #expect(!CRLCache.shared.contains(url))
    }

    /// A failure a trust setting forgives must not skip revocation: otherwise an expired, revoked leaf under a setting
    /// allowing `expired` is trusted without anyone being asked.
    @Test("a failure a trust setting forgives does not skip revocation: the revoked, expired leaf is asked about and fatal")
    func forgivenFailureStillChecksRevocation() throws {
        let world = try World()
        let served = TestPKI.leafExtensions()
            + "\nauthorityInfoAccess = OCSP;URI:\(world.server.url("/ocsp"))\ncrlDistributionPoints = URI:\(world.server.url("/root.crl"))\n"
        let lapsed = try world.pki.issue(
            "lapsed", subject: "/CN=lapsed.example", issuer: "root", extensions: served, notAfter: "20210101000000Z")
        let lapsedGood = try world.pki.issue(
            "lapsed-good", subject: "/CN=lapsed-good.example", issuer: "root", extensions: served,
            notAfter: "20210101000000Z")
        try world.pki.revoke("lapsed", issuer: "root")
        let allowExpired = TrustSettingsSet(domains: [
            [
                lapsed: TrustSettings([try TrustSettings.Constraint(allowedErrors: [.expired], result: .unspecified)]),
                lapsedGood: TrustSettings([try TrustSettings.Constraint(allowedErrors: [.expired], result: .unspecified)]),
            ]
        ])
        let required = RevocationPolicy(methods: .ocsp, requirePositiveResponse: true)
        let evaluator = TrustEvaluator(anchors: [world.root], revocation: required, trustSettings: allowExpired)
        let before = world.counter["/ocsp"]
        let result = try evaluator.evaluate(lapsed)
        #expect(world.counter["/ocsp"] == before + 1, "no OCSP request for a path whose only failure is forgiven")
        #expect(result.statuses[0].reasons == [.revoked], "\(result)")
        #expect(!result.isTrusted && result.outcome == .fatalTrustFailure)
        // The control: the same setting over a leaf the responder calls good forgives the expiry, after asking.
        let good = try evaluator.evaluate(lapsedGood)
        #expect(good.isTrusted, "\(good)")
        #expect(world.counter["/ocsp"] == before + 2)
        // Without the setting the path has an unforgiven failure, and nobody is asked for it.
        let plain = try TrustEvaluator(anchors: [world.root], revocation: required).evaluate(lapsed)
        #expect(plain.statuses[0].reasons == [.expired] && world.counter["/ocsp"] == before + 2, "\(plain)")
    }

    /// RFC 5280 5.2.3 for fetched CRLs too: a CRL without CRLNumber settles nothing. And 6.3.3(f): a CRL issuer
    /// without a keyUsage extension may sign CRLs (only a keyUsage without cRLSign forbids it).
    @Test("a fetched CRL without CRLNumber settles nothing; a CRL issuer without keyUsage is accepted")
    func crlNumberAndIssuerKeyUsage() throws {
        let world = try World()
        let directory = world.pki.url
        let config = try String(decoding: world.pki.directory.read("ca.cnf"), as: UTF8.self)
        try world.pki.directory.write("nonumber.cnf", config.replacingOccurrences(of: "crlnumber = crlnumber.txt\n", with: ""))
        try OpenSSLCLI.require(
            ["ca", "-config", "nonumber.cnf", "-gencrl", "-cert", "root.pem", "-keyfile", "root.key", "-crldays", "3650",
             "-out", "nonumber.crl"], in: directory)
        try FileManager.default.removeItem(at: directory.appendingPathComponent("root.crl.der"))
        try OpenSSLCLI.require(["crl", "-in", "nonumber.crl", "-outform", "DER", "-out", "root.crl.der"], in: directory)
        let crlOnly = RevocationPolicy(methods: .crl, requirePositiveResponse: true)
        #expect(try world.evaluate(world.revoked, crlOnly).statuses[0].reasons == [.revocationUnavailable])
        #expect(try world.evaluate(world.good, crlOnly).statuses[0].reasons == [.revocationUnavailable])

        // A CA with basic constraints but no keyUsage at all signs a numbered CRL: it counts.
        let pki = try TestPKI()
        let root = try pki.issue(
            "root", subject: "/CN=No KeyUsage Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        _ = try pki.issue(
            "ca", subject: "/CN=No KeyUsage CA", issuer: "root",
            extensions: "basicConstraints = critical, CA:TRUE\nsubjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n")
        let ca = try pki.certificate("ca")
        let good = try pki.issue("good", subject: "/CN=good", issuer: "ca", extensions: TestPKI.leafExtensions())
        let revoked = try pki.issue("revoked", subject: "/CN=revoked", issuer: "ca", extensions: TestPKI.leafExtensions())
        try pki.revoke("revoked", issuer: "ca")
        let crls = [try pki.crl("ca"), try pki.crl("root")]
        let evaluate = { (leaf: Certificate) in
            try TrustEvaluator(anchors: [root], verificationDate: midValidity, certificateRevocationLists: crls)
                .evaluate(leaf, intermediates: [ca])
        }
        let goodResult = try evaluate(good)
        let revokedResult = try evaluate(revoked)
        #expect(goodResult.isTrusted, "\(goodResult)")
        #expect(revokedResult.statuses[0].reasons == [.revoked], "\(revokedResult)")
    }

    /// RFC 6960 4.2.2.2: a response is signed by the issuer itself or by a responder the issuer delegated to (issued
    /// by it, with id-kp-OCSPSigning). The check moved from C to Swift (RevocationAnswers.swift); `openssl ocsp
    /// -rsigner` makes each response, and `openssl ocsp -verify_other` is the independent verdict.
    @Test("OCSP responses signed by a delegated responder are taken; by a certificate without OCSPSigning, or by another CA's responder, not")
    func delegatedResponder() throws {
        let world = try World()
        let dir = world.pki.url
        let responder = { (eku: String) in
            "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature\nextendedKeyUsage = \(eku)\n"
        }
        _ = try world.pki.issue("delegate", subject: "/CN=OCSP Delegate", issuer: "root", extensions: responder("OCSPSigning"))
        _ = try world.pki.issue("server", subject: "/CN=Not A Responder", issuer: "root", extensions: responder("serverAuth"))
        _ = try world.pki.issue("other", subject: "/CN=Other Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        _ = try world.pki.issue("foreign", subject: "/CN=Foreign Delegate", issuer: "other", extensions: responder("OCSPSigning"))
        try OpenSSLCLI.require(["ocsp", "-issuer", "root.pem", "-cert", "revoked.pem", "-no_nonce", "-reqout", "d.ocspreq"], in: dir)
        var responses: [String: Data] = [:]
        for signer in ["delegate", "server", "foreign"] {
            try OpenSSLCLI.require(
                [
                    "ocsp", "-index", "index.txt", "-CA", "root.pem", "-rsigner", "\(signer).pem", "-rkey", "\(signer).key",
                    "-reqin", "d.ocspreq", "-respout", "\(signer).ocspresp", "-ndays", "1",
                ], in: dir)
            responses[signer] = try world.pki.directory.read("\(signer).ocspresp")
        }
        // openssl's own verdict on each, with the root as the only trust anchor.
        // ("Response verify OK" goes to stderr.)
        let verdict = { (signer: String) in
            try OpenSSLCLI.run(
                ["ocsp", "-respin", "\(signer).ocspresp", "-issuer", "root.pem", "-cert", "revoked.pem", "-CAfile", "root.pem"],
                in: dir
            ).stderr
        }
        #expect(try verdict("delegate").contains("Response verify OK"))
        #expect(try !verdict("server").contains("Response verify OK"))
        #expect(try !verdict("foreign").contains("Response verify OK"))
        let offline = { (response: Data) in
            RevocationPolicy(requirePositiveResponse: true, networkAccessAllowed: false, stapledOCSPResponses: [response])
        }
        #expect(try world.evaluate(world.revoked, offline(responses["delegate"]!)).statuses[0].reasons == [.revoked])  // !: made above
        for signer in ["server", "foreign"] {
            let result = try world.evaluate(world.revoked, offline(responses[signer]!))  // !: made above
            #expect(result.statuses[0].reasons == [.revocationUnavailable], "signed by \(signer): \(result)")
        }
    }

    /// An answer without nextUpdate ("newer information is always available", RFC 5019) is good for a day: kept
    /// fresh forever, a "good" from before a revocation would vouch for the certificate for ever after.
    @Test("an OCSP 'good' without nextUpdate is good for a day, not forever")
    func noNextUpdate() throws {
        let world = try World()
        let dir = world.pki.url
        try OpenSSLCLI.require(["ocsp", "-issuer", "root.pem", "-cert", "good.pem", "-no_nonce", "-reqout", "old.ocspreq"], in: dir)
        // No -ndays/-nmin: openssl ocsp leaves nextUpdate out.
        try OpenSSLCLI.require(
            [
                "ocsp", "-index", "index.txt", "-CA", "root.pem", "-rsigner", "root.pem", "-rkey", "root.key", "-reqin",
                "old.ocspreq", "-respout", "old.ocspresp",
            ], in: dir)
        let text = try OpenSSLCLI.require(["ocsp", "-respin", "old.ocspresp", "-resp_text", "-noverify"], in: dir).text
        #expect(text.contains("This Update") && !text.contains("Next Update"), "\(text)")
        let stapled = RevocationPolicy(
            requirePositiveResponse: true, networkAccessAllowed: false,
            stapledOCSPResponses: [try world.pki.directory.read("old.ocspresp")])
        #expect(try world.evaluate(world.good, stapled, at: Date()).isTrusted)
        #expect(try world.evaluate(world.good, stapled, at: Date().addingTimeInterval(23 * 3600)).isTrusted)
        let later = try world.evaluate(world.good, stapled, at: Date().addingTimeInterval(2 * 86400))
        #expect(later.statuses[0].reasons == [.revocationUnavailable], "\(later)")
    }
}

/// Missing intermediates downloaded from the AIA caIssuers URL, from a loopback server.
@Suite("Issuer fetching: AIA caIssuers over HTTP on loopback")
struct IssuerFetchingTests {
    /// A loopback server answering `GET /NAME` with the file NAME of `directory`, counting requests.
    static func fileServer(
        _ directory: URL, contentType: String, counter: RevocationTests.RequestCounter
    ) throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer(
            .answer { request in
                counter.count(request)
                guard let body = try? Data(contentsOf: directory.appendingPathComponent(String(request.path.dropFirst())))
                else { return .notFound }
                return LoopbackHTTPServer.Response(contentType: contentType, body: body)
            })
    }

    @Test("a missing intermediate is fetched once and cached; without fetching, or from a dead URL, it stays missing")
    func fetch() throws {
        let pki = try TestPKI()
        let counter = RevocationTests.RequestCounter()
        let server = try Self.fileServer(pki.url, contentType: "application/pkix-cert", counter: counter)
        let closedPort = try LoopbackHTTPServer(.silent).port
        let root = try pki.issue(
            "root", subject: "/CN=Fetch Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let intermediate = try pki.issue(
            "inter", subject: "/CN=Fetch Intermediate", issuer: "root", extensions: TestPKI.caExtensions())
        try pki.ca.der("inter")
        let leaf = try pki.issue(
            "leaf", subject: "/CN=leaf", issuer: "inter",
            extensions: TestPKI.leafExtensions() + "\nauthorityInfoAccess = caIssuers;URI:\(server.url("/inter.der"))\n")
        let dead = try pki.issue(
            "dead", subject: "/CN=dead", issuer: "inter",
            extensions: TestPKI.leafExtensions()
                + "\nauthorityInfoAccess = caIssuers;URI:http://127.0.0.1:\(closedPort)/inter.der\n")

        let without = try TrustEvaluator(anchors: [root]).evaluate(leaf)
        #expect(without.statuses.last?.reasons == [.missingIssuer])
        #expect(counter["/inter.der"] == 0)

        let fetching = TrustEvaluator(anchors: [root], issuerFetching: IssuerFetching(timeout: .seconds(2)))
        let fetched = try fetching.evaluate(leaf)
        #expect(fetched.isTrusted, "\(fetched)")
        #expect(fetched.chain == [leaf, intermediate, root])
        #expect(try fetching.evaluate(leaf).isTrusted)
        #expect(counter["/inter.der"] == 1, "downloaded once, then cached")

        let unreachable = try fetching.evaluate(dead)
        #expect(unreachable.statuses.last?.reasons == [.missingIssuer])
        // Given the intermediate, nothing is fetched.
        #expect(try fetching.evaluate(dead, intermediates: [intermediate]).isTrusted)
    }

    @Test("a caIssuers answer that is a certs-only PKCS#7 (.p7c, made by openssl crl2pkcs7) gives all its certificates")
    func certsOnlyMessage() throws {
        let pki = try TestPKI()
        let directory = pki.url
        let counter = RevocationTests.RequestCounter()
        let server = try Self.fileServer(directory, contentType: "application/pkcs7-mime", counter: counter)
        let root = try pki.issue(
            "root", subject: "/CN=P7C Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let upper = try pki.issue("upper", subject: "/CN=P7C Upper", issuer: "root", extensions: TestPKI.caExtensions())
        let lower = try pki.issue("lower", subject: "/CN=P7C Lower", issuer: "upper", extensions: TestPKI.caExtensions())
        try pki.issue("unrelated", subject: "/CN=Unrelated", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        // Both missing intermediates and an unrelated certificate in one message.
        let made = try OpenSSLCLI.run(
            [
                "crl2pkcs7", "-nocrl", "-certfile", "unrelated.pem", "-certfile", "upper.pem", "-certfile", "lower.pem",
                "-outform", "DER", "-out", "issuers.p7c",
            ], in: directory)
        #expect(made.status == 0)
        let leaf = try pki.issue(
            "leaf", subject: "/CN=leaf", issuer: "lower",
            extensions: TestPKI.leafExtensions() + "\nauthorityInfoAccess = caIssuers;URI:\(server.url("/issuers.p7c"))\n")
        let result = try TrustEvaluator(anchors: [root], issuerFetching: IssuerFetching(timeout: .seconds(2))).evaluate(leaf)
        #expect(result.isTrusted, "\(result)")
        #expect(result.chain == [leaf, lower, upper, root])
        #expect(counter["/issuers.p7c"] == 1, "one download gave both intermediates")
        // Bytes that are neither a certificate nor a PKCS#7 message give nothing.
        try Data("not a certificate".utf8).write(to: directory.appendingPathComponent("junk.der"))
        let junk = try pki.issue(
            "junk-leaf", subject: "/CN=junk", issuer: "lower",
            extensions: TestPKI.leafExtensions() + "\nauthorityInfoAccess = caIssuers;URI:\(server.url("/junk.der"))\n")
        let missing = try TrustEvaluator(anchors: [root], issuerFetching: IssuerFetching(timeout: .seconds(2))).evaluate(junk)
        #expect(missing.statuses.last?.reasons == [.missingIssuer])
    }
}
