import CBaselines
import Certificates
import Foundation
import Security
import Trust

/// The trust benchmark: a leaf + intermediate + root chain evaluated under the SSL server policy with a hostname,
/// through Apple's `SecTrust` and through the idiomatic `TrustEvaluator`, against OpenSSL's `X509_verify_cert` +
/// `X509_check_host` with a store prepared once, in C in the same binary; and the first evaluation against the
/// system anchors (loading the CA bundle) against the ones after it.
struct TrustBench {
    /// The goal: the Security API's rate at least this fraction of the C baseline's.
    static let minimumRatio = 0.9
    static let hostname = "www.example.com"
    /// The reference row: OpenSSL in C with the evaluator's checks (policy processing, strict, partial chain).
    static let checkedC = "openssl-c checked"

    struct Row: Encodable {
        let api: String
        let microseconds: Double
        let opensslC: Double
        var ratio: Double { opensslC / microseconds }
        enum CodingKeys: String, CodingKey { case api, microseconds = "us", opensslC = "openssl_c_us", ratio }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(api, forKey: .api)
            try container.encode(microseconds, forKey: .microseconds)
            try container.encode(opensslC, forKey: .opensslC)
            try container.encode(ratio, forKey: .ratio)
        }
    }

    struct Report: Encodable {
        let rows: [Row]
        /// Milliseconds of the first evaluation that reads the system anchors, and the median of the next ones.
        let firstSystemEvaluationMilliseconds: Double
        let secondSystemEvaluationMilliseconds: Double
        let systemAnchors: Int
        var pass: Bool { rows.first { $0.api == "SecTrust" }.map { $0.ratio >= TrustBench.minimumRatio } ?? false }
    }

    let rounds: Int
    let budget: Duration

    func run() throws -> Report {
        let temporary = try TemporaryDirectory(prefix: "secbench-trust")
        defer { temporary.remove() }
        let directory = URL(fileURLWithPath: temporary.path)
        let (leaf, intermediate, root) = try Self.makeChain(in: directory)

        // The system anchors, first use: the chain's root is not among them, so the evaluation reads the whole
        // bundle and then fails (missing issuer); the second one finds the bundle already read.
        let policy = SecPolicyCreateSSL(true, Self.hostname as CFString)
        func systemEvaluation() -> Double {
            var trust: SecTrust?
            _ = SecTrustCreateWithCertificates([SecCertificate(leaf), SecCertificate(intermediate)] as CFArray, policy, &trust)
            return Comparison.seconds { _ = SecTrustEvaluateWithError(trust!, nil) } * 1e3  // !: created above
        }
        let first = systemEvaluation()
        let second = Comparison.median((0..<21).map { _ in systemEvaluation() })

        guard
            let baseline = leaf.derEncoded.withUnsafeBytes({ l in
                intermediate.derEncoded.withUnsafeBytes { i in
                    root.derEncoded.withUnsafeBytes { r in
                        cbaseline_trust_new(
                            l.bindMemory(to: UInt8.self).baseAddress, l.count, i.bindMemory(to: UInt8.self).baseAddress,
                            i.count, r.bindMemory(to: UInt8.self).baseAddress, r.count, Self.hostname)
                    }
                }
            })
        else { throw BenchFailure("no C trust baseline") }
        defer { cbaseline_trust_free(baseline) }
        let theirs = { cbaseline_trust_run(baseline) == 0 }
        // For reference: what the checks the evaluator asks of OpenSSL beyond a plain verification cost C itself.
        let checked = { cbaseline_trust_run_checked(baseline) == 0 }

        // Apple's API as an application uses it per connection: create, set the anchor, evaluate.
        let secLeaf = SecCertificate(leaf)
        let secIntermediate = SecCertificate(intermediate)
        let anchors = [SecCertificate(root)] as CFArray
        let certificates = [secLeaf, secIntermediate] as CFArray
        let viaSecTrust = {
            var trust: SecTrust?
            guard SecTrustCreateWithCertificates(certificates, policy, &trust) == errSecSuccess, let trust,
                SecTrustSetAnchorCertificates(trust, anchors) == errSecSuccess
            else { return false }
            return SecTrustEvaluateWithError(trust, nil)
        }
        let evaluator = TrustEvaluator(anchors: [root], policies: [.sslServer(hostname: Self.hostname)])
        let viaEvaluator = { (try? evaluator.evaluate(leaf, intermediates: [intermediate]))?.isTrusted ?? false }
        guard theirs(), checked(), viaSecTrust(), viaEvaluator() else { throw BenchFailure("a side rejects the chain before timing") }
        var rows: [Row] = []
        for (name, body) in [("SecTrust", viaSecTrust), ("TrustEvaluator", viaEvaluator), (Self.checkedC, checked)] {
            let times = Comparison.compare(rounds: rounds, budget: budget, ours: body, theirs: theirs)
            rows.append(Row(api: name, microseconds: times.ours, opensslC: times.theirs))
        }
        return Report(
            rows: rows, firstSystemEvaluationMilliseconds: first, secondSystemEvaluationMilliseconds: second,
            systemAnchors: SystemAnchors.all.count)
    }

    /// root (P-256) -> intermediate -> leaf for www.example.com (serverAuth), by the openssl CLI.
    static func makeChain(in directory: URL) throws -> (Certificate, Certificate, Certificate) {
        try Data(
            """
            [ ca ]
            basicConstraints = critical, CA:TRUE
            keyUsage = critical, keyCertSign, cRLSign
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            [ leaf ]
            basicConstraints = critical, CA:FALSE
            keyUsage = critical, digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = DNS:\(hostname)
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid

            """.utf8
        ).write(to: directory.appendingPathComponent("ext.cnf"))
        try Comparison.openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "root.key",
                "-out", "root.pem", "-subj", "/CN=Bench Root", "-days", "30", "-addext",
                "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: directory)
        for (name, issuer, section) in [("inter", "root", "ca"), ("leaf", "inter", "leaf")] {
            try Comparison.openssl(
                [
                    "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key",
                    "-out", "\(name).csr", "-subj", "/CN=Bench \(name)",
                ], in: directory)
            try Comparison.openssl(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuer).pem", "-CAkey", "\(issuer).key",
                    "-CAcreateserial", "-days", "20", "-extfile", "ext.cnf", "-extensions", section, "-out", "\(name).pem",
                ], in: directory)
        }
        func load(_ name: String) throws -> Certificate {
            try Certificate(pemEncoded: String(decoding: try Data(contentsOf: directory.appendingPathComponent("\(name).pem")), as: UTF8.self))
        }
        return (try load("leaf"), try load("inter"), try load("root"))
    }
}

extension SecBench {
    /// `--trust`: the trust benchmark alone.
    func runTrust() throws {
        let machine = Machine.current([])
        print(machine.summary)
        let bench = TrustBench(rounds: quick ? 5 : 11, budget: .milliseconds(budget ?? (quick ? 60 : 150)))
        let report = try bench.run()
        var lines = [
            "trust: leaf + intermediate + root (P-256), SSL server policy with a hostname, against OpenSSL's",
            "X509_verify_cert + X509_check_host with a store prepared once, in C; median µs per evaluation over",
            "\(bench.rounds) alternating rounds; ratio = C time / ours (target for SecTrust >= \(TrustBench.minimumRatio))",
            "api                µs per eval  openssl-c µs   ratio",
        ]
        for row in report.rows {
            lines.append(
                row.api.padding(toLength: 18, withPad: " ", startingAt: 0)
                    + String(format: "%12.1f %13.1f %7.3f", row.microseconds, row.opensslC, row.ratio))
        }
        lines.append(
            String(
                format: "system anchors (%d certificates): first evaluation %.1f ms (reads the CA bundle), the next ones %.2f ms (median)",
                report.systemAnchors, report.firstSystemEvaluationMilliseconds, report.secondSystemEvaluationMilliseconds))
        lines.append("\(TrustBench.checkedC): C with the evaluator's checks (RFC 5280 policy processing, strict, partial chain) against plain C")
        let secTrust = report.rows.first { $0.api == "SecTrust" }
        lines.append("targets (measured in this run):")
        lines.append(
            "  \(report.pass ? "PASS" : "MISS")  SecTrust evaluation rate / OpenSSL C rate >= \(TrustBench.minimumRatio): "
                + (secTrust.map { String(format: "%.3f", $0.ratio) } ?? "not measured"))
        print(lines.joined(separator: "\n"))
        if let json {
            struct Document: Encodable {
                let machine: Machine
                let trust: TrustBench.Report
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(Document(machine: machine, trust: report)).write(to: URL(fileURLWithPath: json))
            print("wrote \(json)")
        }
    }
}
