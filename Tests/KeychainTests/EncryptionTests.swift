import CryptoContract
import Foundation
import Keychain
import Testing

/// The master key file and the secret envelope.
@Suite("Keychain: master key and encryption at rest")
struct EncryptionTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mk-\(UUID().uuidString)")

    init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }

    @Test("the key file is created once, 0600, 32 bytes, and read back the same")
    func keyFile() throws {
        let path = directory.appendingPathComponent("master.key").path
        let first = try KeyFileMasterKey(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((attributes[.size] as? Int) == 32)
        let second = try KeyFileMasterKey(path: path)
        let a = try first.withMasterKey { Array($0) }, b = try second.withMasterKey { Array($0) }
        #expect(a == b)
        #expect(a.contains { $0 != 0 })
    }

    @Test("many openers racing to create the key file all get the one key, and only the key file is left")
    func racingCreation() async throws {
        for round in 0..<20 {
            let path = directory.appendingPathComponent("race-\(round).key").path
            let keys = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<8 { group.addTask { try KeyFileMasterKey(path: path).withMasterKey { Array($0) } } }
                return try await group.reduce(into: [[UInt8]]()) { $0.append($1) }
            }
            #expect(keys.count == 8 && Set(keys).count == 1 && keys[0].count == 32)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.contains(".new-") })
    }

    /// A lost key file must not silently become a new master key (even for read-only commands), over a database
    /// whose every item would then fail to open.
    @Test("a lost key file is not replaced while the keychain holds items; another key is refused")
    func lostKeyFile() throws {
        let path = directory.appendingPathComponent("lost.db").path
        do {
            let store = try KeychainStore(path: path, accessGroups: ["app"])
            try store.add(
                .genericPassword, attributes: [.account: .string("a"), .service: .string("s")], data: Data("pw".utf8))
        }
        try FileManager.default.removeItem(atPath: path + ".key")
        let lost = #expect(throws: KeychainError(.masterKey, "")) { try KeychainStore(path: path, accessGroups: ["app"]) }
        // The reason names the missing file and says what is lost without it.
        #expect(lost?.reason.contains("master key file \(path).key is missing") == true, "\(String(describing: lost))")
        #expect(lost?.reason.contains("cannot be recovered without that file") == true)
        #expect(!FileManager.default.fileExists(atPath: path + ".key"), "a new key file was made")
        // Another key is refused by the key check value, before any item is tried.
        let other = try [UInt8](repeating: 7, count: 32).withUnsafeBytes { try KeyFileMasterKey(bytes: $0) }
        let error = #expect(throws: KeychainError(.masterKey, "")) {
            try KeychainStore(path: path, masterKey: other, accessGroups: ["app"])
        }
        #expect(error?.reason.contains("key check") == true)
        // A keychain never used (created, nothing in it) may get its key again.
        let fresh = directory.appendingPathComponent("fresh.db").path
        _ = try KeychainStore(path: fresh, masterKey: other, accessGroups: ["app"])
        let unused = directory.appendingPathComponent("unused.db").path
        #expect(FileManager.default.createFile(atPath: unused, contents: nil))
        _ = try KeychainStore(path: unused, accessGroups: ["app"])
        #expect(FileManager.default.fileExists(atPath: unused + ".key"))
    }

    @Test("a key file readable by others, or of the wrong size, is refused")
    func badKeyFiles() throws {
        let open = directory.appendingPathComponent("open.key").path
        _ = FileManager.default.createFile(atPath: open, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o644])
        #expect(throws: KeychainError(.masterKey, "")) { try KeyFileMasterKey(path: open) }
        let short = directory.appendingPathComponent("short.key").path
        _ = FileManager.default.createFile(atPath: short, contents: Data(repeating: 7, count: 31), attributes: [.posixPermissions: 0o600])
        #expect(throws: KeychainError(.masterKey, "")) { try KeyFileMasterKey(path: short) }
    }

    @Test("a secret opens only for its own identity and master key; the blob holds no plaintext")
    func envelope() throws {
        let master = try [UInt8](repeating: 0x11, count: 32).withUnsafeBytes { try KeyFileMasterKey(bytes: $0) }
        let other = try [UInt8](repeating: 0x22, count: 32).withUnsafeBytes { try KeyFileMasterKey(bytes: $0) }
        let secret = Array("correct horse battery staple".utf8)
        let identity = Array("genp|service|account".utf8)
        let blob = try SecretEnvelope.seal(secret, identity: identity, masterKey: master)
        #expect(try SecretEnvelope.open(blob, identity: identity, masterKey: master) == secret)
        #expect(!Data(blob).contains(Data(secret)))
        // Two seals of the same secret differ (fresh item key and nonces).
        #expect(try SecretEnvelope.seal(secret, identity: identity, masterKey: master) != blob)
        // Copied onto another item, opened with another master key, or tampered: a decode error.
        #expect(throws: KeychainError(.decode, "")) { try SecretEnvelope.open(blob, identity: Array("genp|service|other".utf8), masterKey: master) }
        #expect(throws: KeychainError(.decode, "")) { try SecretEnvelope.open(blob, identity: identity, masterKey: other) }
        var tampered = blob
        tampered[tampered.count - 1] ^= 1
        #expect(throws: KeychainError(.decode, "")) { try SecretEnvelope.open(tampered, identity: identity, masterKey: master) }
        #expect(throws: KeychainError(.decode, "")) { try SecretEnvelope.open(Array(blob.prefix(20)), identity: identity, masterKey: master) }
        // An empty secret is a secret too.
        let empty = try SecretEnvelope.seal([], identity: identity, masterKey: master)
        #expect(try SecretEnvelope.open(empty, identity: identity, masterKey: master) == [])
    }
}
