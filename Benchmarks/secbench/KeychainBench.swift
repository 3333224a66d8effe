import ArgumentParser
import CryptoDispatcher
import Foundation
import KernelBackend
import Keychain

/// The keychain benchmark: `items` generic passwords added, found by service + account (random order), updated
/// to a new password and deleted through ``KeychainStore``, next to ``KeychainBaseline`` doing the same in the
/// same run. Each call is timed on its own; the two sides alternate call by call (who goes first alternates
/// too), so drift on a shared machine hits both alike.
struct KeychainBench {
    enum Phase: String, CaseIterable, Codable {
        case add, find, update, delete
    }

    /// One generic password: where it is, what it is, what it becomes.
    struct Item {
        let service: String
        let account: String
        let password: [UInt8]
        let newPassword: [UInt8]
    }

    /// The per-call times of one phase, in nanoseconds.
    struct Samples {
        var keychain: [Double] = []
        var baseline: [Double] = []
    }

    let items: Int

    /// Runs the four phases in a fresh directory under `$TMPDIR` (else /tmp), removed afterwards.
    func run() throws -> KeychainReport {
        let directory = try TemporaryDirectory(prefix: "secbench-keychain")
        defer { directory.remove() }
        let filesystem = TemporaryDirectory.filesystem(of: directory.path)
        let samples = try measure(in: directory.path)
        let rows = Phase.allCases.map { phase in
            KeychainReport.Row(
                phase: phase, keychain: LatencySummary(samples[phase]?.keychain ?? []),
                baseline: LatencySummary(samples[phase]?.baseline ?? []))
        }
        return KeychainReport(items: items, filesystem: filesystem, rows: rows)
    }

    /// Both stores live only inside this call, so their databases are closed before the directory goes.
    private func measure(in directory: String) throws -> [Phase: Samples] {
        let keychain = try KeychainStore(path: directory + "/keychain.db", accessGroups: ["secbench"])
        let baseline = try KeychainBaseline(path: directory + "/baseline.db")
        let items = Self.items(count: self.items)
        var generator = SplitMix64(seed: 0x5EC_BE4C)
        let inOrder = Array(items.indices)
        var results: [Phase: Samples] = [:]
        let progress = Progress(total: Phase.allCases.count)

        func query(_ item: Item, returning: ReturnOptions = []) -> ItemQuery {
            ItemQuery(
                .genericPassword, matching: [.service: .string(item.service), .account: .string(item.account)],
                returning: returning)
        }

        progress.step("keychain add")
        results[.add] = try interleave(
            inOrder,
            keychain: { item in
                try keychain.add(
                    .genericPassword, attributes: [.service: .string(item.service), .account: .string(item.account)],
                    data: Data(item.password))
            },
            baseline: { item in
                try baseline.add(service: item.service, account: item.account, password: item.password)
            },
            items)

        progress.step("keychain find")
        results[.find] = try interleave(
            inOrder.shuffled(using: &generator),
            keychain: { item in
                // Compared as bytes in place: Data's element-wise iterator would cost the keychain side more than
                // the baseline's [UInt8] == (memcmp), which is not the store's cost.
                guard let data = try keychain.find(query(item, returning: .data)).first?.data,
                    data.withUnsafeBytes({ $0.elementsEqual(item.password) })
                else {
                    throw ValidationError("the keychain returned another password for \(item.account)")
                }
            },
            baseline: { item in
                guard try baseline.find(service: item.service, account: item.account) == item.password else {
                    throw ValidationError("the baseline returned another password for \(item.account)")
                }
            },
            items)

        progress.step("keychain update")
        let updateOrder = inOrder.shuffled(using: &generator)
        results[.update] = try interleave(
            updateOrder,
            keychain: { item in
                guard try keychain.update(query(item), attributes: [:], data: Data(item.newPassword)) == 1 else {
                    throw ValidationError("the keychain updated other than one item for \(item.account)")
                }
            },
            baseline: { item in
                guard try baseline.update(service: item.service, account: item.account, password: item.newPassword)
                else {
                    throw ValidationError("the baseline updated no item for \(item.account)")
                }
            },
            items)
        // Untimed: the updates took.
        for item in updateOrder.prefix(16).map({ items[$0] }) {
            guard try keychain.find(query(item, returning: .data)).first?.data.map({ Array($0) }) == item.newPassword,
                try baseline.find(service: item.service, account: item.account) == item.newPassword
            else { throw ValidationError("an updated password did not read back for \(item.account)") }
        }

        progress.step("keychain delete")
        results[.delete] = try interleave(
            inOrder.shuffled(using: &generator),
            keychain: { item in
                guard try keychain.delete(query(item)) == 1 else {
                    throw ValidationError("the keychain deleted other than one item for \(item.account)")
                }
            },
            baseline: { item in
                guard try baseline.delete(service: item.service, account: item.account) else {
                    throw ValidationError("the baseline deleted no item for \(item.account)")
                }
            },
            items)
        progress.finish()
        return results
    }

    /// Times each call of both sides over `order`, alternating which side goes first.
    private func interleave(
        _ order: [Int], keychain: (Item) throws -> Void, baseline: (Item) throws -> Void, _ items: [Item]
    ) throws -> Samples {
        let clock = ContinuousClock()
        func time(_ body: (Item) throws -> Void, _ item: Item) rethrows -> Double {
            let start = clock.now
            try body(item)
            return (clock.now - start).nanoseconds
        }
        var samples = Samples()
        samples.keychain.reserveCapacity(order.count)
        samples.baseline.reserveCapacity(order.count)
        for (position, index) in order.enumerated() {
            let item = items[index]
            if position.isMultiple(of: 2) {
                samples.keychain.append(try time(keychain, item))
                samples.baseline.append(try time(baseline, item))
            } else {
                samples.baseline.append(try time(baseline, item))
                samples.keychain.append(try time(keychain, item))
            }
        }
        return samples
    }

    /// `count` items over 16 services, one account each, passwords of 20-odd bytes.
    static func items(count: Int) -> [Item] {
        (0..<count).map { index in
            Item(
                service: "com.example.service\(index % 16)", account: "user\(index)@example.com",
                password: Array("password-\(index)-x7Qp2!vR".utf8),
                newPassword: Array("changed-\(index)-Lm4#tZ9w".utf8))
        }
    }
}

/// ops/s, p50 and p99 of one side of one phase.
struct LatencySummary: Codable {
    let operations: Int
    /// Operations per second of time spent in this side's calls.
    let opsPerSecond: Double
    let p50Microseconds: Double
    let p99Microseconds: Double

    enum CodingKeys: String, CodingKey {
        case operations, opsPerSecond = "ops_per_s", p50Microseconds = "p50_us", p99Microseconds = "p99_us"
    }

    init(_ nanoseconds: [Double]) {
        let sorted = nanoseconds.sorted()
        // Nearest rank: the smallest value with at least `fraction` of the samples at or below it.
        func percentile(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            return sorted[max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1)]
        }
        operations = sorted.count
        opsPerSecond = Double(sorted.count) / sorted.reduce(0, +) * 1e9
        p50Microseconds = percentile(0.50) / 1e3
        p99Microseconds = percentile(0.99) / 1e3
    }
}

/// A directory of its own under `$TMPDIR` (else /tmp).
struct TemporaryDirectory {
    let path: String

    init(prefix: String) throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/" + prefix + "-XXXXXX").utf8CString)
        // mkdtemp: "returns a pointer to the modified template string on success, NULL on failure".
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap(mkdtemp).map { String(cString: $0) }
        }
        guard let created else { throw ValidationError("cannot create a directory under \(base) (errno \(errno))") }
        path = created
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// The type of the filesystem holding `path` (the longest mount point above it in /proc/self/mounts), which
    /// decides what an fsync costs.
    static func filesystem(of path: String) -> String {
        guard let mounts = ProcFile.read("/proc/self/mounts") else { return "?" }
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var best: (mountPoint: String, type: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let mountPoint = String(fields[1]), type = String(fields[2])
            let above = mountPoint == "/" || resolved == mountPoint || resolved.hasPrefix(mountPoint + "/")
            if above, mountPoint.count >= (best?.mountPoint.count ?? 0) { best = (mountPoint, type) }
        }
        return best?.type ?? "?"
    }
}

/// A seeded generator, so every run visits the items in the same random order.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension SecBench {
    /// `--keychain`: the keychain benchmark alone.
    func runKeychain() throws {
        let machine = Machine.current([])
        print(machine.summary)
        let items = keychainItems ?? (quick ? 1000 : 10_000)
        let report = try KeychainBench(items: items).run()
        print(report.table())
        print(report.targets())
        let service = try KeychainServiceBench(items: min(items, 2000)).run()
        print(service.table())
        print("targets (measured in this run):\n" + service.targets())
        let passwordLock = try PasswordLockBench(items: min(items, 2000)).run()
        print(passwordLock.table())
        var secretService: SecretServiceBench.Result?
        if let reason = SecretServiceBench.unavailableReason {
            print("Secret Service: not measured: \(reason)")
        } else {
            secretService = try SecretServiceBench(lookups: quick ? 200 : 1000).run()
            print(secretService?.table() ?? "")
        }
        if let json {
            try report.json(machine: machine, service: service, passwordLock: passwordLock, secretService: secretService)
                .write(to: URL(fileURLWithPath: json))
            print("wrote \(json)")
        }
    }
}
