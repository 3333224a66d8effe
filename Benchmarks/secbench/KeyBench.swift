import CBaselines
import Certificates
import Foundation
import Security

/// The public-key benchmark: RSA-2048 and EC P-256 operations through Apple's `Security` API against OpenSSL
/// EVP_PKEY called directly in C in the same binary, plus key generation and PKCS#12 import timed.
struct KeyBench {
    /// The goal: the Security API's rate at least this fraction of the C baseline's.
    static let minimumRatio = 0.95

    struct Operation: Sendable {
        let name: String
        let algorithm: SecKeyAlgorithm
        let isRSA: Bool
    }

    static let operations: [Operation] = [
        Operation(name: "rsa-sign", algorithm: .rsaSignatureDigestPKCS1v15SHA256, isRSA: true),
        Operation(name: "rsa-verify", algorithm: .rsaSignatureDigestPKCS1v15SHA256, isRSA: true),
        Operation(name: "rsa-encrypt", algorithm: .rsaEncryptionOAEPSHA256, isRSA: true),
        Operation(name: "rsa-decrypt", algorithm: .rsaEncryptionOAEPSHA256, isRSA: true),
        Operation(name: "ec-sign", algorithm: .ecdsaSignatureDigestX962SHA256, isRSA: false),
        Operation(name: "ec-verify", algorithm: .ecdsaSignatureDigestX962SHA256, isRSA: false),
    ]

    struct Row: Encodable {
        let op: String
        /// Median microseconds per call.
        let security: Double
        let opensslC: Double
        /// Rate ratio: C time / Security time (1.0 = as fast as C).
        var ratio: Double { opensslC / security }
        var pass: Bool { ratio >= KeyBench.minimumRatio }

        enum CodingKeys: String, CodingKey { case op, security = "security_us", opensslC = "openssl_c_us", ratio, pass }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(op, forKey: .op)
            try container.encode(security, forKey: .security)
            try container.encode(opensslC, forKey: .opensslC)
            try container.encode(ratio, forKey: .ratio)
            try container.encode(pass, forKey: .pass)
        }
    }

    struct Timing: Encodable {
        let what: String
        /// Median milliseconds.
        let medianMilliseconds: Double
        let runs: Int
        enum CodingKeys: String, CodingKey { case what, medianMilliseconds = "median_ms", runs }
    }

    let rounds: Int
    let budget: Duration
    let timedRuns: Int
    /// Only these operations, and no timings (for profiling one operation); nil: everything.
    let only: Set<String>?

    func run() throws -> (rows: [Row], timings: [Timing]) {
        let rsa = try Self.generate(kSecAttrKeyTypeRSA, bits: 2048)
        let ec = try Self.generate(kSecAttrKeyTypeECSECPrimeRandom, bits: 256)
        var rows: [Row] = []
        for operation in Self.operations where only?.contains(operation.name) ?? true {
            let key = operation.isRSA ? rsa : ec
            rows.append(try measure(operation, key: key))
        }
        return (rows, only == nil ? try timings() : [])
    }

    private static func generate(_ type: CFString, bits: Int) throws -> SecKey {
        var error: Unmanaged<CFError>?
        let parameters = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits] as CFDictionary
        guard let key = SecKeyCreateRandomKey(parameters, &error) else {
            throw BenchFailure("SecKeyCreateRandomKey: \(String(describing: error?.takeRetainedValue()))")
        }
        return key
    }

    /// One Security API call of `operation`, as a closure over prepared inputs (checked once before timing).
    private func securityCall(_ operation: Operation, key: SecKey) throws -> () -> Bool {
        let digest = Data(count: 32) as CFData
        guard let publicKey = SecKeyCopyPublicKey(key) else { throw BenchFailure("no public key") }
        let algorithm = operation.algorithm
        switch operation.name {
        case "rsa-sign", "ec-sign":
            return { SecKeyCreateSignature(key, algorithm, digest, nil) != nil }
        case "rsa-verify", "ec-verify":
            guard let signature = SecKeyCreateSignature(key, algorithm, digest, nil) else {
                throw BenchFailure("\(operation.name): signing failed")
            }
            return { SecKeyVerifySignature(publicKey, algorithm, digest, signature, nil) }
        case "rsa-encrypt":
            return { SecKeyCreateEncryptedData(publicKey, algorithm, digest, nil) != nil }
        default:
            guard let ciphertext = SecKeyCreateEncryptedData(publicKey, algorithm, digest, nil) else {
                throw BenchFailure("\(operation.name): encryption failed")
            }
            return { SecKeyCreateDecryptedData(key, algorithm, ciphertext, nil) != nil }
        }
    }

    private func measure(_ operation: Operation, key: SecKey) throws -> Row {
        let ours = try securityCall(operation, key: key)
        guard let baseline = cbaseline_pkey_new(operation.name) else {
            throw BenchFailure("no C baseline for \(operation.name)")
        }
        defer { cbaseline_pkey_free(baseline) }
        let zero = [UInt8](repeating: 0, count: 32)
        var prepared = [UInt8](repeating: 0, count: 512)
        var input = zero
        if operation.name.hasSuffix("verify") || operation.name.hasSuffix("decrypt") {
            let length = cbaseline_pkey_prepare(baseline, zero, zero.count, &prepared)
            guard length > 0 else { throw BenchFailure("\(operation.name): C preparation failed") }
            input = Array(prepared.prefix(length))
        }
        let theirs = { input.withUnsafeBufferPointer { cbaseline_pkey_run(baseline, $0.baseAddress, $0.count) == 0 } }
        guard ours(), theirs() else { throw BenchFailure("\(operation.name): a side fails before timing") }
        let times = Comparison.compare(rounds: rounds, budget: budget, ours: ours, theirs: theirs)
        return Row(op: operation.name, security: times.ours, opensslC: times.theirs)
    }

    /// Key generation and PKCS#12 import, timed (no baseline: reported for what they cost).
    private func timings() throws -> [Timing] {
        var result: [Timing] = []
        for (what, type, bits) in [
            ("generate RSA-2048", kSecAttrKeyTypeRSA, 2048), ("generate EC P-256", kSecAttrKeyTypeECSECPrimeRandom, 256),
        ] {
            var samples: [Double] = []
            for _ in 0..<timedRuns { samples.append(try Comparison.seconds { _ = try Self.generate(type, bits: bits) } * 1e3) }
            result.append(Timing(what: what, medianMilliseconds: Comparison.median(samples), runs: timedRuns))
        }
        // A PKCS#12 file of an RSA-2048 identity with a self-signed certificate, written by the openssl CLI.
        let temporary = try TemporaryDirectory(prefix: "secbench-p12")
        defer { temporary.remove() }
        let directory = URL(fileURLWithPath: temporary.path)
        try Comparison.openssl(
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "k.pem", "-out", "c.pem", "-subj", "/CN=bench", "-days", "1"],
            in: directory)
        for legacy in [false, true] {
            let algorithms = legacy ? ["-legacy"] : ["-keypbe", "AES-256-CBC", "-certpbe", "AES-256-CBC", "-macalg", "sha256"]
            try Comparison.openssl(
                ["pkcs12", "-export", "-in", "c.pem", "-inkey", "k.pem", "-out", "b.p12", "-passout", "pass:bench"] + algorithms,
                in: directory)
            let file = try Data(contentsOf: directory.appendingPathComponent("b.p12")) as CFData
            let options = [kSecImportExportPassphrase as String: "bench"] as CFDictionary
            var samples: [Double] = []
            for _ in 0..<timedRuns {
                var items: CFArray?
                var status: OSStatus = 0
                samples.append(Comparison.seconds { status = SecPKCS12Import(file, options, &items) } * 1e3)
                guard status == errSecSuccess else { throw BenchFailure("SecPKCS12Import: \(status)") }
            }
            let what = legacy ? "PKCS#12 import (legacy 3DES/RC2)" : "PKCS#12 import (AES-256, PBKDF2)"
            result.append(Timing(what: what, medianMilliseconds: Comparison.median(samples), runs: timedRuns))
        }
        return result
    }
}

extension SecBench {
    /// `--keys`: the public-key benchmark alone.
    func runKeys() throws {
        let machine = Machine.current([])
        print(machine.summary)
        let bench = KeyBench(
            rounds: quick ? 5 : 11, budget: .milliseconds(budget ?? (quick ? 60 : 150)), timedRuns: quick ? 3 : 9,
            only: operations.map { Set($0.split(separator: ",").map(String.init)) })
        let (rows, timings) = try bench.run()
        var lines = [
            "public keys: Apple's Security API (SecKeyCreateSignature, ...) against OpenSSL EVP_PKEY called directly in C",
            "(RSA-2048: PKCS#1 v1.5 and OAEP over SHA-256; EC P-256: ECDSA over a SHA-256 digest; a fresh EVP_PKEY_CTX",
            "per C call); median µs per call over \(bench.rounds) alternating rounds; ratio = C time / Security time",
            "op            security µs  openssl-c µs   ratio  >=0.95",
        ]
        for row in rows {
            lines.append(
                row.op.padding(toLength: 12, withPad: " ", startingAt: 0)
                    + String(format: "%13.1f %13.1f %7.3f  %@", row.security, row.opensslC, row.ratio, row.pass ? "PASS" : "MISS"))
        }
        for timing in timings {
            lines.append(String(format: "%@: %.2f ms (median of %d)", timing.what, timing.medianMilliseconds, timing.runs))
        }
        let hardware = HardwareKeyBench(rounds: bench.rounds, budget: bench.budget).run()
        lines.append("keys held in hardware: P-256 ECDSA over a SHA-256 digest and ECDH, median µs per call against a software key")
        lines.append("(the same operation through the same API, same run); factor = held time / software time")
        for row in hardware.rows {
            lines.append(
                String(format: "%@ %@: %.1f µs (%.0f/s), software %.1f µs: %.1fx", row.holder, row.op, row.microseconds,
                    1e6 / row.microseconds, row.softwareMicroseconds, row.factor))
        }
        for note in hardware.notes { lines.append("  \(note)") }
        let worst = rows.min { $0.ratio < $1.ratio }
        lines.append("targets (worst case measured in this run):")
        lines.append(
            "  \(rows.allSatisfy(\.pass) ? "PASS" : "MISS")  Security API rate / OpenSSL C rate >= \(KeyBench.minimumRatio) "
                + "for every operation: " + (worst.map { String(format: "%.3f at %@", $0.ratio, $0.op) } ?? "not measured"))
        print(lines.joined(separator: "\n"))
        if let json {
            struct Document: Encodable {
                let machine: Machine
                let keys: Keys
            }
            struct Keys: Encodable {
                let minimumRatio: Double
                let pass: Bool
                let operations: [KeyBench.Row]
                let timings: [KeyBench.Timing]
                let hardware: [HardwareKeyBench.Row]
                enum CodingKeys: String, CodingKey { case minimumRatio = "minimum_ratio", pass, operations, timings, hardware }
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let document = Document(
                machine: machine,
                keys: Keys(
                    minimumRatio: KeyBench.minimumRatio, pass: rows.allSatisfy(\.pass), operations: rows, timings: timings,
                    hardware: hardware.rows))
            try encoder.encode(document).write(to: URL(fileURLWithPath: json))
            print("wrote \(json)")
        }
    }
}
