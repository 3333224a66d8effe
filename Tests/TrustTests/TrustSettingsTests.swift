import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// User and administrator trust settings: the store's file, and what they do to evaluations (anchors with
/// Proceed, Deny, allowed errors, policy and hostname limits, user over administrator).
@Suite struct TrustSettingsTests {
    typealias Chain = GeneratedChainTests.Chain

    static func constraint(
        _ result: TrustSettings.Result, policy: TrustSettings.Policy? = nil, hostname: String? = nil,
        allowing allowed: [TrustFailureReason] = []
    ) throws -> TrustSettings.Constraint {
        try TrustSettings.Constraint(policy: policy, policyString: hostname, allowedErrors: allowed, result: result)
    }

    /// An evaluator at mid-validity with `user` over `admin` settings and the given anchors.
    static func evaluator(
        anchors: [Certificate] = [], user: [Certificate: TrustSettings] = [:], admin: [Certificate: TrustSettings] = [:],
        policy: TrustPolicy = .sslServer(hostname: "www.example.com")
    ) -> TrustEvaluator {
        TrustEvaluator(
            anchors: anchors, policies: [policy], verificationDate: midValidity,
            trustSettings: TrustSettingsSet(domains: [user, admin]))
    }

    @Test("A root the user trusts is an anchor, and the result is Proceed; without the setting it is an untrusted root")
    func trustRoot() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf")
        let without = try Self.evaluator().evaluate(leaf, intermediates: [chain.intermediate, chain.root])
        #expect(without.outcome == .recoverableTrustFailure)
        #expect(without.statuses.last?.reasons == [.untrustedRoot])

        let result = try Self.evaluator(user: [chain.root: TrustSettings()])
            .evaluate(leaf, intermediates: [chain.intermediate, chain.root])
        #expect(result.isTrusted, "\(result)")
        #expect(result.outcome == .proceed)
        #expect(result.chain == [leaf, chain.intermediate, chain.root])

        // The same root as an application anchor, with no setting: Unspecified.
        let plain = try Self.evaluator(anchors: [chain.root]).evaluate(leaf, intermediates: [chain.intermediate])
        #expect(plain.outcome == .trusted)
        // Settings whose anchors are left out (an evaluation with the application's anchors only).
        let only = try TrustEvaluator(
            anchors: [], policies: [.basicX509], verificationDate: midValidity,
            trustSettings: TrustSettingsSet(domains: [[chain.root: TrustSettings()]]).withoutAnchors()
        ).evaluate(leaf, intermediates: [chain.intermediate, chain.root])
        #expect(only.statuses.last?.reasons == [.untrustedRoot], "\(only)")
    }

    @Test("An intermediate trusted as a root ends the chain there")
    func trustAsRoot() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf")
        let settings = TrustSettings([try Self.constraint(.trustAsRoot)])
        let result = try Self.evaluator(user: [chain.intermediate: settings]).evaluate(leaf, intermediates: [chain.intermediate])
        #expect(result.outcome == .proceed, "\(result)")
        #expect(result.chain == [leaf, chain.intermediate])
        // Apple's rule: trustRoot is for a self-signed certificate, trustAsRoot for one that is not.
        #expect(throws: TrustError(.invalidTrustSettings, "")) {
            try TrustSettings([Self.constraint(.trustRoot)]).validate(for: chain.intermediate)
        }
        #expect(throws: TrustError(.invalidTrustSettings, "")) {
            try TrustSettings([Self.constraint(.trustAsRoot)]).validate(for: chain.root)
        }
    }

    @Test("A denied leaf, intermediate or root makes the result Deny, on that certificate, even under an anchor")
    func deny() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf")
        let deny = TrustSettings([try Self.constraint(.deny)])
        for (denied, index) in [(leaf, 0), (chain.intermediate, 1), (chain.root, 2)] {
            let result = try Self.evaluator(anchors: [chain.root], user: [denied: deny])
                .evaluate(leaf, intermediates: [chain.intermediate])
            #expect(result.outcome == .denied, "\(result)")
            #expect(!result.isTrusted)
            #expect(result.statuses.count > index)
            guard result.statuses.count > index else { continue }
            #expect(result.statuses[index].reasons.contains(.denied), "\(result)")
        }
    }

    @Test("A deny limited to the SSL policy, or to one hostname, applies only there")
    func limitedDeny() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf", san: "DNS:a.example.com,DNS:b.example.com")
        let sslOnly = TrustSettings([try Self.constraint(.deny, policy: .ssl)])
        let basic = try Self.evaluator(anchors: [chain.root], user: [chain.intermediate: sslOnly], policy: .basicX509)
            .evaluate(leaf, intermediates: [chain.intermediate])
        #expect(basic.outcome == .trusted, "\(basic)")
        let ssl = try Self.evaluator(
            anchors: [chain.root], user: [chain.intermediate: sslOnly], policy: .sslServer(hostname: "a.example.com")
        ).evaluate(leaf, intermediates: [chain.intermediate])
        #expect(ssl.outcome == .denied, "\(ssl)")
        let client = try Self.evaluator(anchors: [chain.root], user: [chain.intermediate: sslOnly], policy: .sslClient)
            .evaluate(leaf, intermediates: [chain.intermediate])
        #expect(client.reasons.contains(.denied), "the SSL policy covers the client side too: \(client)")

        let oneHost = TrustSettings([try Self.constraint(.deny, policy: .ssl, hostname: "A.Example.com.")])
        for (hostname, denied) in [("a.example.com", true), ("b.example.com", false)] {
            let result = try Self.evaluator(
                anchors: [chain.root], user: [leaf: oneHost], policy: .sslServer(hostname: hostname)
            ).evaluate(leaf, intermediates: [chain.intermediate])
            #expect((result.outcome == .denied) == denied, "\(hostname): \(result)")
            #expect(result.isTrusted == !denied)
        }
        // A hostname constraint needs the SSL policy.
        #expect(throws: TrustError(.invalidTrustSettings, "")) {
            try TrustSettings.Constraint(policy: .basicX509, policyString: "a.example.com", result: .deny)
        }
    }

    @Test("Allowed errors forgive recoverable failures on their certificate (Proceed); fatal ones cannot be allowed")
    func allowedErrors() throws {
        let chain = try Chain()
        let expired = try chain.leaf("expired", notAfter: "20250101000000Z")
        let allowExpired = TrustSettings([try Self.constraint(.unspecified, allowing: [.expired])])
        let plain = try Self.evaluator(anchors: [chain.root]).evaluate(expired, intermediates: [chain.intermediate])
        #expect(plain.statuses.first?.reasons == [.expired])
        let forgiven = try Self.evaluator(anchors: [chain.root], user: [expired: allowExpired])
            .evaluate(expired, intermediates: [chain.intermediate])
        #expect(forgiven.outcome == .proceed, "\(forgiven)")
        // On another certificate, the setting forgives nothing.
        let elsewhere = try Self.evaluator(anchors: [chain.root], user: [chain.intermediate: allowExpired])
            .evaluate(expired, intermediates: [chain.intermediate])
        #expect(elsewhere.outcome == .recoverableTrustFailure, "\(elsewhere)")
        // A hostname mismatch allowed for one name only.
        let leaf = try chain.leaf("leaf")
        let allowName = TrustSettings([
            try Self.constraint(.unspecified, policy: .ssl, hostname: "other.example.com", allowing: [.hostnameMismatch])
        ])
        #expect(
            try Self.evaluator(anchors: [chain.root], user: [leaf: allowName], policy: .sslServer(hostname: "other.example.com"))
                .evaluate(leaf, intermediates: [chain.intermediate]).outcome == .proceed)
        #expect(
            try Self.evaluator(anchors: [chain.root], user: [leaf: allowName], policy: .sslServer(hostname: "third.example.com"))
                .evaluate(leaf, intermediates: [chain.intermediate]).outcome == .recoverableTrustFailure)
        for fatal in [TrustFailureReason.badSignature, .revoked, .denied, .nameConstraints] {
            #expect(throws: TrustError(.invalidTrustSettings, "")) { try Self.constraint(.unspecified, allowing: [fatal]) }
        }
    }

    @Test("The user's decision wins over the administrator's; the first deciding constraint wins")
    func precedence() throws {
        let chain = try Chain()
        let leaf = try chain.leaf("leaf")
        let deny = TrustSettings([try Self.constraint(.deny)])
        let trust = TrustSettings()
        let userTrusts = try Self.evaluator(user: [chain.root: trust], admin: [chain.root: deny])
            .evaluate(leaf, intermediates: [chain.intermediate, chain.root])
        #expect(userTrusts.outcome == .proceed, "\(userTrusts)")
        let userDenies = try Self.evaluator(user: [chain.root: deny], admin: [chain.root: trust])
            .evaluate(leaf, intermediates: [chain.intermediate, chain.root])
        #expect(userDenies.outcome == .denied, "\(userDenies)")
        // An unspecified user setting leaves the administrator's decision standing.
        let unspecified = TrustSettings([try Self.constraint(.unspecified)])
        let adminDenies = try Self.evaluator(anchors: [chain.root], user: [chain.root: unspecified], admin: [chain.root: deny])
            .evaluate(leaf, intermediates: [chain.intermediate])
        #expect(adminDenies.outcome == .denied)
        // In order: deny for SSL first, then trust for everything: SSL is denied, basic X.509 trusted.
        let ordered = TrustSettings([try Self.constraint(.deny, policy: .ssl), try Self.constraint(.trustRoot)])
        #expect(
            try Self.evaluator(user: [chain.root: ordered]).evaluate(leaf, intermediates: [chain.intermediate, chain.root])
                .outcome == .denied)
        #expect(
            try Self.evaluator(user: [chain.root: ordered], policy: .basicX509)
                .evaluate(leaf, intermediates: [chain.intermediate, chain.root]).outcome == .proceed)
    }

    @Test("A denied cross-certificate is avoided when another path exists, and reported when none does")
    func denyAvoidedByAnotherPath() throws {
        let pki = try TestPKI()
        let oldRoot = try pki.issue(
            "old-root", subject: "/O=Trust Tests/CN=Old Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let newRoot = try pki.issue(
            "new-root", subject: "/O=Trust Tests/CN=New Root", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        try pki.issue("root-b", subject: "/O=Trust Tests/CN=Root B", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true))
        let byOld = try pki.issue(
            "b-by-old", subject: "/O=Trust Tests/CN=Root B", issuer: "old-root", key: "root-b", extensions: TestPKI.caExtensions())
        let byNew = try pki.issue(
            "b-by-new", subject: "/O=Trust Tests/CN=Root B", issuer: "new-root", key: "root-b", extensions: TestPKI.caExtensions())
        let leaf = try pki.issue(
            "leaf", subject: "/O=Trust Tests/CN=www.example.com", issuer: "root-b", extensions: TestPKI.leafExtensions())
        let deny = TrustSettings([try Self.constraint(.deny)])
        let avoided = try Self.evaluator(anchors: [oldRoot, newRoot], user: [byOld: deny])
            .evaluate(leaf, intermediates: [byOld, byNew])
        #expect(avoided.outcome == .trusted, "\(avoided)")
        #expect(avoided.chain == [leaf, byNew, newRoot])
        let noOther = try Self.evaluator(anchors: [oldRoot], user: [byOld: deny]).evaluate(leaf, intermediates: [byOld, byNew])
        #expect(noOther.outcome == .denied, "\(noOther)")
        #expect(noOther.chain == [leaf, byOld, oldRoot])
    }
}

/// The store's file: Apple's layout, atomic changes, serialized writers, damaged files refused.
@Suite struct TrustSettingsStoreTests {
    @Test("Set, read back (also by a new store on the file), remove; the file is Apple's layout, keyed by SHA-1")
    func roundTrip() throws {
        let chain = try GeneratedChainTests.Chain()
        let directory = try TemporaryDirectory("trust-settings")
        let path = directory.url.appendingPathComponent("sub/user.plist").path
        let store = TrustSettingsStore(path: path)
        #expect(try store.all().isEmpty, "a missing file is no settings")
        let settings = TrustSettings([
            try TrustSettings.Constraint(policy: .ssl, policyString: "www.example.com", allowedErrors: [.expired], result: .unspecified),
            try TrustSettings.Constraint(result: .deny),
        ])
        try store.set(settings, for: chain.intermediate)
        try store.set(TrustSettings(), for: chain.root)
        #expect(try store.settings(for: chain.intermediate) == settings)
        #expect(try TrustSettingsStore(path: path).settings(for: chain.root) == TrustSettings())
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        // The directory it made is the user's alone (0700, not 0755: it may be the keychain's directory).
        #expect(stat(directory.url.appendingPathComponent("sub").path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        let administrator = directory.url.appendingPathComponent("etc/admin.plist").path
        try TrustSettingsStore(path: administrator, mode: 0o644).set(TrustSettings(), for: chain.root)
        #expect(stat(directory.url.appendingPathComponent("etc").path, &info) == 0 && info.st_mode & 0o777 == 0o755)

        // The file: trustVersion 1, trustList keyed by the upper-case SHA-1 `openssl x509 -fingerprint` prints.
        let fingerprint = try OpenSSLCLI.run(["x509", "-noout", "-fingerprint", "-sha1", "-in", "intermediate.pem"], in: chain.pki.url)
        let sha1 = String(decoding: fingerprint.stdout, as: UTF8.self).split(separator: "=").last.map { $0.replacingOccurrences(of: ":", with: "") }?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: path)), format: nil)
        let root = try #require(plist as? [String: Any])
        #expect((root["trustVersion"] as? NSNumber)?.intValue == 1)
        let list = try #require(root["trustList"] as? [String: Any])
        #expect(list.count == 2)
        let key = try #require(sha1)
        let record = try #require(list[key] as? [String: Any], "\(list.keys)")
        #expect(record["issuerName"] as? Data == chain.intermediate.issuer.derEncoded)
        #expect(record["serialNumber"] as? Data == chain.intermediate.serialNumber)
        let array = try #require(record["trustSettings"] as? [[String: Any]])
        #expect(array.count == 2)
        #expect(array[0]["kSecTrustSettingsPolicyString"] as? String == "www.example.com")
        #expect((array[1]["kSecTrustSettingsResult"] as? NSNumber)?.intValue == 3)

        #expect(try store.remove(for: chain.intermediate))
        #expect(try store.remove(for: chain.intermediate) == false)
        #expect(try store.settings(for: chain.intermediate) == nil)
        #expect(try TrustSettingsStore(path: path).all().keys.sorted { $0.derEncoded.count < $1.derEncoded.count } == [chain.root])
    }

    @Test("Invalid settings and damaged files are refused; nothing changes")
    func badInput() throws {
        let chain = try GeneratedChainTests.Chain()
        let directory = try TemporaryDirectory("trust-settings")
        let path = directory.url.appendingPathComponent("user.plist").path
        let store = TrustSettingsStore(path: path)
        try store.set(TrustSettings(), for: chain.root)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: TrustError(.invalidTrustSettings, "")) {
            try store.set(TrustSettings([TrustSettings.Constraint(result: .trustRoot)]), for: chain.intermediate)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        for damaged in ["not a plist", "<plist><dict><key>trustVersion</key><integer>2</integer></dict></plist>"] {
            try Data(damaged.utf8).write(to: URL(fileURLWithPath: path))
            #expect(throws: TrustError(.corruptTrustSettings, "")) { try store.all() }
            #expect(throws: TrustError(.corruptTrustSettings, "")) { try store.set(TrustSettings(), for: chain.root) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(damaged.utf8))
        }
        // A record whose key is not its certificate's SHA-1.
        let plist: [String: Any] = [
            "trustVersion": 1,
            "trustList": ["00": ["certificate": chain.root.derEncoded, "trustSettings": [Any]()]],
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: path))
        #expect(throws: TrustError(.corruptTrustSettings, "")) { try store.all() }
        // An evaluation refuses to run rather than ignore settings it cannot read.
        #expect(throws: TrustError(.corruptTrustSettings, "")) {
            try TrustSettingsDomains(user: store, administrator: TrustSettingsStore(path: path + ".admin")).snapshot()
        }
    }

    @Test("Writers on separate stores of one file never lose each other's change")
    func concurrentWriters() async throws {
        let pki = try TestPKI()
        var certificates: [Certificate] = []
        for index in 0..<8 {
            certificates.append(
                try pki.issue("root\(index)", subject: "/CN=Root \(index)", issuer: nil, extensions: TestPKI.caExtensions(selfSigned: true)))
        }
        let path = pki.url.appendingPathComponent("settings.plist").path
        await withTaskGroup(of: Void.self) { group in
            for certificate in certificates {
                group.addTask {
                    do {
                        try TrustSettingsStore(path: path).set(TrustSettings(), for: certificate)
                    } catch {
                        Issue.record("\(error)")
                    }
                }
            }
        }
        #expect(try Set(TrustSettingsStore(path: path).all().keys) == Set(certificates))
    }
}
