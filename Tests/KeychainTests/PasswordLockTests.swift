import SecurityBase
import CryptoContract
import Cryptography
import Foundation
@testable import Keychain
import Synchronization
import TestVectors
import Testing

/// Password-locked keychains: attributes readable while locked, secrets and changes not; the
/// password unwraps one key; wrong passwords cost more each time; the idle interval locks.
@Suite("Keychain: password-locked keychains")
struct PasswordLockTests {
    /// scrypt at N = 2^10: the format and the code paths of the real cost, without its 100 ms per test step.
    static let fast = PasswordDerivation.Function.scrypt(Scrypt.Parameters(costLog2: 10))

    static func create(_ temporary: TemporaryKeychain, password: String = "correct horse", settings: KeychainLockSettings = KeychainLockSettings())
        throws -> KeychainStore
    {
        try KeychainStore.createPasswordLocked(
            path: temporary.path, password: Data(password.utf8), accessGroups: ["app.one"], derivation: fast, settings: settings)
    }

    @Test("locked: attributes and certificates readable, secrets and every change errSecInteractionNotAllowed; unlocked by the password for every store of the process")
    func lockedAndUnlocked() throws {
        let temporary = try TemporaryKeychain()
        let store = try Self.create(temporary)
        #expect(store.isPasswordLocked && !store.isLocked, "a keychain just created is unlocked")
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("alice-secret".utf8))
        try store.add(.certificate, attributes: [.label: .string("cert"), .certificateType: .number(3)], data: Data("DER bytes".utf8))
        // A second store on the same file, as another part of the process would open it, shares the lock state.
        let other = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        #expect(other.isPasswordLocked && !other.isLocked)
        try other.lock()
        #expect(store.isLocked && other.isLocked)

        let found = try store.find(ItemQuery(.genericPassword, matching: password("alice", "mail"), returning: .attributes))
        #expect(found.first?.attributes?[.account] == .string("alice"))
        expectKeychainError(.interactionNotAllowed) { _ = try store.password(account: "alice", service: "mail") }
        let certificate = try store.find(ItemQuery(.certificate, matching: [.label: .string("cert")], returning: .data))
        #expect(certificate.first?.data == Data("DER bytes".utf8), "a certificate is no secret")
        expectKeychainError(.interactionNotAllowed) { try store.add(.genericPassword, attributes: password("bob", "mail"), data: Data("b".utf8)) }
        expectKeychainError(.interactionNotAllowed) { try store.add(.genericPassword, attributes: password("carol", "mail")) }
        expectKeychainError(.interactionNotAllowed) {
            try store.update(ItemQuery(.genericPassword, matching: password("alice", "mail")), attributes: [.label: .string("changed")])
        }
        expectKeychainError(.interactionNotAllowed) { try store.delete(ItemQuery(.genericPassword, matching: password("alice", "mail"))) }
        // Nothing changed while locked.
        #expect(try store.find(ItemQuery(.genericPassword, matching: [:], limit: .all, returning: .attributes)).count == 1)

        expectKeychainError(.authFailed) { try store.unlock(password: Data("wrong".utf8)) }
        #expect(store.isLocked)
        try other.unlock(password: Data("correct horse".utf8))
        #expect(try store.password(account: "alice", service: "mail") == "alice-secret")
        try store.setPassword("bob-secret", account: "bob", service: "mail")
        #expect(try other.password(account: "bob", service: "mail") == "bob-secret")
    }

    @Test("the database holds no secret and no unwrapped secrets key, and the key file alone opens no secret")
    func nothingUnwrappedOnDisk() throws {
        let temporary = try TemporaryKeychain()
        let store = try Self.create(temporary)
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("Zq-locked-secret".utf8))
        // The secrets key, as the password unwraps it.
        let record = try #require(try PasswordLockRecord.read(Database(path: temporary.path)))
        let secretsKey = try #require(store.embedded!.secrets).verify(SecretBytes(Data("correct horse".utf8)), derivation: record.derivation, wrapped: record.wrapped)
        let keyBytes = secretsKey.withUnsafeBytes { Data($0) }
        #expect(keyBytes.count == 32)
        try store.lock()
        for file in [temporary.path, temporary.path + "-wal"] where FileManager.default.fileExists(atPath: file) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(bytes.range(of: Data("Zq-locked-secret".utf8)) == nil, "\(file)")
            #expect(bytes.range(of: keyBytes) == nil, "the secrets key in \(file)")
        }
        // The key file's master key opens attributes, not secrets: a store holding it, the keychain locked, reads the
        // item's attributes and is refused its secret.
        let keyFileOnly = try KeychainStore(path: temporary.path, masterKey: KeyFileMasterKey(path: temporary.path + ".key"), accessGroups: ["app.one"])
        #expect(try keyFileOnly.find(ItemQuery(.genericPassword, matching: password("alice", "mail"), returning: .attributes)).count == 1)
        expectKeychainError(.interactionNotAllowed) { _ = try keyFileOnly.password(account: "alice", service: "mail") }
    }

    @Test("stores opened before another gave the keychain its password notice it: a stale store's add is sealed under the secrets key (sealed again), a stale reader opens the other's secrets, and both lock with the keychain")
    func passwordGivenMeanwhile() throws {
        let temporary = try TemporaryKeychain()
        let writer = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        let reader = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        #expect(!writer.isPasswordLocked && !reader.isPasswordLocked)
        let setter = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        try setter.setInitialPassword(Data("correct horse".utf8), derivation: Self.fast)
        try writer.setPassword("from the stale writer", account: "writer", service: "mail")
        try setter.setPassword("from the setter", account: "setter", service: "mail")
        #expect(try reader.password(account: "setter", service: "mail") == "from the setter")
        #expect(try setter.password(account: "writer", service: "mail") == "from the stale writer")
        #expect(writer.isPasswordLocked && reader.isPasswordLocked)
        expectKeychainError(.duplicateItem) { try writer.setInitialPassword(Data("another".utf8), derivation: Self.fast) }
        try setter.lock()
        #expect(writer.isLocked && reader.isLocked)
        // The stale writer's secret is under the secrets key: a store with the key file alone, locked, cannot open it.
        let fresh = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        expectKeychainError(.interactionNotAllowed) { _ = try fresh.password(account: "writer", service: "mail") }
    }

    @Test("changing the password rewraps one key: the old password stops working, the new one works, the items are untouched; a wrong old password changes nothing")
    func changePassword() throws {
        let temporary = try TemporaryKeychain()
        let store = try Self.create(temporary)
        try store.setPassword("kept", account: "alice", service: "mail")
        let before = try Database(path: temporary.path).query("SELECT secret FROM item")
        expectKeychainError(.authFailed) { try store.changePassword(old: Data("wrong".utf8), new: Data("new password".utf8), derivation: Self.fast) }
        try store.changePassword(old: Data("correct horse".utf8), new: Data("new password".utf8), derivation: .pbkdf2SHA256(rounds: 10_000))
        #expect(try Database(path: temporary.path).query("SELECT secret FROM item") == before, "no item rewritten")
        try store.lock()
        expectKeychainError(.authFailed) { try store.unlock(password: Data("correct horse".utf8)) }
        try store.unlock(password: Data("new password".utf8))
        #expect(try store.password(account: "alice", service: "mail") == "kept")
        expectKeychainError(.parameter) { try store.changePassword(old: Data("new password".utf8), new: Data(), derivation: Self.fast) }
    }

    @Test("wrong passwords in a row wait longer each time (0, 0.25 s, 0.5 s, … at most 8 s); a right one resets the count")
    func growingDelay() async throws {
        #expect((1...9).map(SecretsLock.failureDelay) == [0, 0.25, 0.5, 1, 2, 4, 8, 8, 8])
        let temporary = try TemporaryKeychain()
        let store = try Self.create(temporary)
        try store.lock()
        // The waits block the calling thread (a synchronous call): on a thread of their own, not the test pool's.
        let (first, second) = try await onOwnThread { () throws -> (Duration, Duration) in
            let clock = ContinuousClock()
            func wrong(_ text: String) -> Duration {
                clock.measure { _ = try? store.unlock(password: Data(text.utf8)) }
            }
            return (wrong("wrong 1"), wrong("wrong 2"))
        }
        #expect(second >= .milliseconds(250) && second > first, "the second wrong password waited \(second)")
        #expect(store.embedded!.secrets?.consecutiveFailures == 2)
        expectKeychainError(.authFailed) { try store.unlock(password: Data("wrong 3".utf8)) }
        #expect(store.embedded!.secrets?.consecutiveFailures == 3)
        try await onOwnThread { try store.unlock(password: Data("correct horse".utf8)) }
        #expect(store.embedded!.secrets?.consecutiveFailures == 0, "a right password resets the count")
        #expect(!store.isLocked)
    }

    @Test("the idle interval locks the keychain by itself; settings are kept in the keychain")
    func idleLock() async throws {
        let temporary = try TemporaryKeychain()
        let store = try Self.create(temporary, settings: KeychainLockSettings(interval: .seconds(1)))
        #expect(try store.lockSettings() == KeychainLockSettings(interval: .seconds(1)))
        try store.setPassword("s", account: "a", service: "b")
        try await Task.sleep(for: .milliseconds(1600))
        #expect(store.isLocked, "locked after a second idle")
        expectKeychainError(.interactionNotAllowed) { _ = try store.password(account: "a", service: "b") }
        try store.unlock(password: Data("correct horse".utf8))
        try store.setLockSettings(KeychainLockSettings(interval: nil, lockOnSleep: true))
        #expect(try KeychainStore(path: temporary.path, accessGroups: ["app.one"]).lockSettings() == KeychainLockSettings(interval: nil, lockOnSleep: true))
        try await Task.sleep(for: .milliseconds(1200))
        #expect(!store.isLocked, "no interval: it stays unlocked")
    }

    @Test("a keychain without a password has none to lock; a second create is refused; malformed parameters are errSecDecode")
    func refusals() throws {
        let temporary = try TemporaryKeychain()
        let plain = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        #expect(!plain.isPasswordLocked && !plain.isLocked)
        expectKeychainError(.parameter) { try plain.lock() }
        expectKeychainError(.parameter) { try plain.unlock(password: Data("x".utf8)) }
        try plain.setPassword("s", account: "a", service: "b")
        expectKeychainError(.duplicateItem) { _ = try Self.create(temporary) }
        expectKeychainError(.parameter) {
            _ = try KeychainStore.createPasswordLocked(path: try TemporaryKeychain().path, password: Data(), accessGroups: ["app.one"], derivation: Self.fast)
        }

        let locked = try TemporaryKeychain()
        _ = try Self.create(locked)
        let database = try Database(path: locked.path)
        for bad in [PasswordDerivation(function: .scrypt(Scrypt.Parameters(costLog2: 40)), salt: [UInt8](repeating: 1, count: 32)),
                    PasswordDerivation(function: .pbkdf2SHA256(rounds: 5), salt: [UInt8](repeating: 1, count: 32)),
                    PasswordDerivation(function: Self.fast, salt: [1, 2, 3])] {
            try database.query("UPDATE passwordlock SET derivation = ?1", [.blob(bad.encoded)])
            expectKeychainError(.decode) { _ = try KeychainStore(path: locked.path, accessGroups: ["app.one"]) }
        }
        #expect(throws: KeychainError.self) { try PasswordDerivation(decoding: [1, 1, 10]) }
        // Weak parameters are refused when a keychain is made, naming the rule, and when a file asks for them.
        for (weak, rule) in [
            (PasswordDerivation.Function.pbkdf2SHA256(rounds: 9_999), "at least 10000 rounds"),
            (.scrypt(Scrypt.Parameters(costLog2: 9)), "a cost of at least 2^10"), (.scrypt(Scrypt.Parameters(costLog2: 12, blockSize: 1)), "a block size of at least 8"),
        ] {
            let weakKeychain = try TemporaryKeychain()
            do {
                _ = try KeychainStore.createPasswordLocked(path: weakKeychain.path, password: Data("pw".utf8), accessGroups: ["app.one"], derivation: weak)
                Issue.record("\(weak) was accepted")
            } catch let error as KeychainError {
                #expect(error.code == .parameter && error.reason.contains(rule), "\(error)")
            }
        }
        for weak in [Scrypt.Parameters(costLog2: 1), Scrypt.Parameters(costLog2: 12, blockSize: 1)] {
            let bytes = PasswordDerivation(function: .scrypt(weak), salt: [UInt8](repeating: 1, count: 32)).encoded
            #expect(throws: KeychainError(.decode, "")) { try PasswordDerivation(decoding: bytes) }
        }
    }
}

/// Keychain events, as the desktop keychain's callbacks report them.
@Suite("Keychain: events", .serialized)
struct KeychainEventTests {
    @Test("add, update, delete, lock (by call and by the idle interval), unlock and password change, in order, with the item's reference")
    func events() async throws {
        let temporary = try TemporaryKeychain()
        let store = try PasswordLockTests.create(temporary, settings: KeychainLockSettings(interval: .seconds(1)))
        final class Seen: Sendable { let events = Mutex<[KeychainEvent]>([]) }
        let seen = Seen()
        let observation = KeychainEvents.observe { event in
            if event.path == temporary.path { seen.events.withLock { $0.append(event) } }
        }
        defer { KeychainEvents.remove(observation) }
        let added = try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("a".utf8), returning: .persistentReference)
        try store.update(ItemQuery(.genericPassword, matching: password("alice", "mail")), attributes: [.label: .string("L")])
        try store.delete(ItemQuery(.genericPassword, matching: password("alice", "mail")))
        try store.lock()
        try store.lock()  // already locked: no second event
        try store.unlock(password: Data("correct horse".utf8))
        try store.changePassword(old: Data("correct horse".utf8), new: Data("other".utf8), derivation: PasswordLockTests.fast)
        try await Task.sleep(for: .milliseconds(1600))
        let events = seen.events.withLock { $0 }
        #expect(events.map(\.kind) == [.add, .update, .delete, .lock, .unlock, .passwordChanged, .lock])
        #expect(events.prefix(3).allSatisfy { $0.persistentReference == added.persistentReference && $0.itemClass == .genericPassword })
        KeychainEvents.remove(observation)
        try store.unlock(password: Data("other".utf8))
        #expect(seen.events.withLock { $0.count } == 7, "no event after the observer is removed")
    }
}
