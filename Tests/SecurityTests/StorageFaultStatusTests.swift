import Foundation
import Keychain
import Security
import TestVectors
import Testing

/// Storage faults reach Apple's API as Apple's statuses — a keychain on a full file system answers
/// `errSecDiskFull` (the store's other faults are `StorageFaultTests`; their statuses are one switch).
@Suite(
    "Security: storage faults as Apple's statuses", .serialized,
    .disabled(if: AFALGGate.required, "host only: the mounts are the host's"))
struct StorageFaultStatusTests {
    static func keychain(at path: String) throws -> SecKeychain {
        var keychain: SecKeychain?
        #expect(SecKeychainOpen(path, &keychain) == errSecSuccess)
        return try #require(keychain)
    }

    static func add(_ account: String, _ bytes: Int, to keychain: SecKeychain) -> OSStatus {
        let secret = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ account.count) })
        return SecItemAdd([
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: account, kSecAttrService as String: "fault",
            kSecValueData as String: secret, kSecUseKeychain as String: keychain,
        ] as CFDictionary, nil)
    }

    @Test(
        "a full file system: SecItemAdd answers errSecDiskFull, every add before it succeeded",
        .enabled(if: SmallFileSystem.isPossible, "needs root and mount(8), as make test and CI run"))
    func statuses() throws {
        let disk = try #require(try SmallFileSystem(size: "512k"), "mount refused a tmpfs")
        let path = disk.directory.appendingPathComponent("fault.keychain").path
        _ = try KeychainStore(path: path, accessGroups: ["com.example.fault"])
        var statuses: [OSStatus] = []
        do {
            let keychain = try Self.keychain(at: path)
            for index in 0..<200 {
                let status = Self.add("account-\(index)", 8192, to: keychain)
                statuses.append(status)
                if status != errSecSuccess { break }
            }
        }
        #expect(statuses.last == errSecDiskFull, "\(statuses.suffix(3))")
        #expect(statuses.dropLast().allSatisfy { $0 == errSecSuccess } && statuses.count > 5)
    }
}
