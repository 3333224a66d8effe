import Foundation

/// What the keychain benchmark measured: per operation, both sides, and the ratio of their medians.
struct KeychainReport {
    /// The goal: the keychain's median call at most this many times the baseline's.
    static let maximumRatio = 1.3

    static let baselineDescription =
        "baseline: the same SQLite wrapper and pragmas (WAL, synchronous=FULL, secure_delete=ON), one table "
        + "UNIQUE(service, account), one transaction per call, one AES-256-GCM seal (add, update) or open (find) per "
        + "item with a random nonce; delete does no GCM (nor does the keychain's)"

    struct Row: Encodable {
        let phase: KeychainBench.Phase
        let keychain: LatencySummary
        let baseline: LatencySummary

        /// keychain p50 / baseline p50.
        var ratio: Double { keychain.p50Microseconds / baseline.p50Microseconds }
        var passed: Bool { ratio <= KeychainReport.maximumRatio }

        enum CodingKeys: String, CodingKey { case op, keychain, baseline, ratio = "ratio_p50", pass }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(phase, forKey: .op)
            try container.encode(keychain, forKey: .keychain)
            try container.encode(baseline, forKey: .baseline)
            try container.encode(ratio, forKey: .ratio)
            try container.encode(passed, forKey: .pass)
        }
    }

    let items: Int
    /// The filesystem the databases were on (what an fsync costs depends on it).
    let filesystem: String
    let rows: [Row]

    func table() -> String {
        let header = ["op", "kc ops/s", "kc p50", "kc p99", "base ops/s", "base p50", "base p99", "kc/base", "<=1.3x"]
        let widths = [8, 10, 9, 9, 10, 9, 9, 8, 6]
        func row(_ cells: [String]) -> String {
            zip(cells, widths).enumerated().map { index, pair in
                let (text, width) = pair
                let padding = String(repeating: " ", count: max(0, width - text.count))
                return index == 0 ? text + padding : padding + text
            }.joined(separator: " ")
        }
        var lines = [
            "keychain: \(items) generic passwords (service + account), one fresh directory on \(filesystem)",
            Self.baselineDescription,
            "latency in µs per call (each call timed, keychain and baseline alternating); kc/base = ratio of the p50s",
            row(header),
        ]
        for entry in rows {
            let sides = [entry.keychain, entry.baseline].flatMap { side in
                [
                    String(format: "%.0f", side.opsPerSecond), String(format: "%.1f", side.p50Microseconds),
                    String(format: "%.1f", side.p99Microseconds),
                ]
            }
            let verdict = [String(format: "%.2f", entry.ratio), entry.passed ? "PASS" : "MISS"]
            lines.append(row([entry.phase.rawValue] + sides + verdict))
        }
        return lines.joined(separator: "\n")
    }

    func targets() -> String {
        let worst = rows.max { $0.ratio < $1.ratio }
        let passed = rows.allSatisfy(\.passed)
        let at = worst.map { String(format: "%.2f at %@", $0.ratio, $0.phase.rawValue) } ?? "not measured"
        return "targets (worst case measured in this run):\n"
            + "  \(passed ? "PASS" : "MISS")  keychain p50 / baseline p50 <= \(Self.maximumRatio) for every operation: "
            + at
    }

    func json(
        machine: Machine, service: KeychainServiceBench.Result?, passwordLock: PasswordLockBench.Result?,
        secretService: SecretServiceBench.Result?
    ) throws -> Data {
        struct Document: Encodable {
            let machine: Machine
            let keychain: Keychain
            let service: KeychainServiceBench.Result?
            let passwordLock: PasswordLockBench.Result?
            let secretService: SecretServiceBench.Result?

            enum CodingKeys: String, CodingKey {
                case machine, keychain, service, passwordLock = "password_lock", secretService = "secret_service"
            }
        }
        struct Keychain: Encodable {
            let items: Int
            let filesystem: String
            let baseline: String
            let maximumRatio: Double
            let pass: Bool
            let operations: [Row]

            enum CodingKeys: String, CodingKey {
                case items, filesystem, baseline, maximumRatio = "maximum_ratio", pass, operations
            }
        }
        let document = Document(
            machine: machine,
            keychain: Keychain(
                items: items, filesystem: filesystem, baseline: Self.baselineDescription,
                maximumRatio: Self.maximumRatio, pass: rows.allSatisfy(\.passed), operations: rows),
            service: service, passwordLock: passwordLock, secretService: secretService)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(document)
    }
}
