import Foundation
import Keychain

/// A password-locked keychain against a plain one, in one run: finds of the same generic passwords (with their
/// secret) in both, call by call alternating, and the unlock's cost (the password's key derivation, calibrated to
/// about 100 ms on creation, and the unwrap).
struct PasswordLockBench {
    static let maximumFindRatio = 1.1
    let items: Int

    struct Result: Encodable {
        let items: Int
        let findLocked: LatencySummary
        let findPlain: LatencySummary
        /// Median of the unlocks, in milliseconds.
        let unlockMilliseconds: Double
        let derivation: String

        var findRatio: Double { findLocked.p50Microseconds / findPlain.p50Microseconds }

        enum CodingKeys: String, CodingKey {
            case items, findLocked = "find_password_locked", findPlain = "find_plain", unlockMilliseconds = "unlock_ms_p50"
            case derivation, findRatio = "find_ratio_p50", maximumFindRatio = "maximum_find_ratio"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(items, forKey: .items)
            try container.encode(findLocked, forKey: .findLocked)
            try container.encode(findPlain, forKey: .findPlain)
            try container.encode(unlockMilliseconds, forKey: .unlockMilliseconds)
            try container.encode(derivation, forKey: .derivation)
            try container.encode(findRatio, forKey: .findRatio)
            try container.encode(PasswordLockBench.maximumFindRatio, forKey: .maximumFindRatio)
        }

        func table() -> String {
            [
                "password-locked keychain (unlocked) against a plain keychain: \(items) generic passwords found with their secret, alternating",
                String(format: "find p50 %.1f µs against %.1f µs: %.2fx (target <= %.1fx) %@", findLocked.p50Microseconds,
                       findPlain.p50Microseconds, findRatio, PasswordLockBench.maximumFindRatio,
                       (findRatio <= PasswordLockBench.maximumFindRatio ? "PASS" : "MISS") as NSString),
                String(format: "unlock p50 %.1f ms (%@; by design about 100 ms)", unlockMilliseconds, derivation as NSString),
            ].joined(separator: "\n")
        }
    }

    func run() throws -> Result {
        let directory = try TemporaryDirectory(prefix: "secbench-passwordlock")
        defer { directory.remove() }
        let password = Data("benchmark password".utf8)
        let locked = try KeychainStore.createPasswordLocked(
            path: directory.path + "/locked.db", password: password, accessGroups: ["bench"],
            settings: KeychainLockSettings(interval: nil))
        let plain = try KeychainStore(path: directory.path + "/plain.db", accessGroups: ["bench"])
        let list = KeychainBench.items(count: items)
        for item in list {
            for store in [locked, plain] {
                try store.add(
                    .genericPassword, attributes: [.service: .string(item.service), .account: .string(item.account)],
                    data: Data(item.password))
            }
        }
        let clock = ContinuousClock()
        var lockedSamples: [Double] = [], plainSamples: [Double] = []
        for (position, item) in list.enumerated() {
            let query = ItemQuery(.genericPassword, matching: [.service: .string(item.service), .account: .string(item.account)], returning: .data)
            func time(_ store: KeychainStore) throws -> Double {
                let start = clock.now
                _ = try store.find(query)
                return (clock.now - start).nanoseconds
            }
            if position.isMultiple(of: 2) {
                lockedSamples.append(try time(locked))
                plainSamples.append(try time(plain))
            } else {
                plainSamples.append(try time(plain))
                lockedSamples.append(try time(locked))
            }
        }
        var unlocks: [Double] = []
        for _ in 0..<5 {
            try locked.lock()
            let start = clock.now
            try locked.unlock(password: password)
            unlocks.append((clock.now - start).nanoseconds / 1e6)
        }
        let derivation = switch try locked.passwordDerivation() {
        case .scrypt(let parameters): "scrypt N=2^\(parameters.costLog2) r=\(parameters.blockSize) p=\(parameters.parallelism)"
        case .pbkdf2SHA256(let rounds): "PBKDF2-SHA256, \(rounds) rounds"
        }
        return Result(
            items: items, findLocked: LatencySummary(lockedSamples), findPlain: LatencySummary(plainSamples),
            unlockMilliseconds: unlocks.sorted()[unlocks.count / 2], derivation: derivation)
    }
}
