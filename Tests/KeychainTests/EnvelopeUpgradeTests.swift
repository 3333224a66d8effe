import CryptoContract
import CryptoDispatcher
import Foundation
@testable import Keychain
import Testing

/// Secrets sealed in one AEAD under the store's keyed context (envelope version 3); rows of versions 1
/// and 2 read as before and are rewritten as version 3, at open or through `upgradeEnvelopes()`.
@Suite("Keychain: envelope version 3 and the upgrade of older rows")
struct EnvelopeUpgradeTests {
    static let columns = [("attributes", 5), ("secret", 6)]

    /// The first byte of every blob of every row: the envelope versions on disk.
    static func versions(_ store: KeychainStore) throws -> [UInt8] {
        try store.embedded!.database.query("SELECT attributes, secret FROM item ORDER BY id").flatMap { row in
            row.compactMap { value -> UInt8? in if case .blob(let blob) = value { blob.first } else { nil } }
        }
    }

    /// Reseals every blob of the keychain as `version`, as an older release wrote it.
    static func downgrade(_ store: KeychainStore, to version: UInt8) throws {
        try store.embedded!.connectionLock.withLock { _ in
            let rows = try store.embedded!.database.query("SELECT id, uuid, class, agrp, uniq, attributes, secret FROM item")
            for row in rows {
                guard case .integer(let id) = row[0], case .blob(let uuid) = row[1], case .text(let code) = row[2],
                    let itemClass = ItemClass(rawValue: code), case .text(let group) = row[3], case .blob(let uniq) = row[4]
                else { Issue.record("a malformed row"); return }
                for (part, column) in columns {
                    guard case .blob(let blob) = row[column] else { continue }
                    let wrapping = part == "secret" ? try store.embedded!.secretWrapping(itemClass) : store.embedded!.wrappingKey
                    let identity = store.embedded!.identity(part, itemClass, group: group, uniq: uniq, uuid: uuid)
                    let plaintext = try SecretEnvelope.open(blob, identity: identity, wrapping: wrapping, engine: Dispatcher.shared)
                    let old = try SecretEnvelope.seal(plaintext, identity: identity, wrapping: wrapping, engine: Dispatcher.shared, version: version)
                    try store.embedded!.database.query("UPDATE item SET \(part) = ?1 WHERE id = ?2", [.blob(old), .integer(id)])
                }
            }
        }
    }

    @Test("rows of versions 1 and 2 read as before; the upgrade rewrites each blob once as version 3; a store opening such a keychain upgrades it")
    func upgrade() throws {
        let temporary = try TemporaryKeychain()
        let store = try KeychainStore(path: temporary.path, accessGroups: ["app.one", "app.two"])
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("alice-secret".utf8))
        try store.add(.genericPassword, attributes: password("bob", "mail").merging([.accessGroup: .string("app.two")]) { $1 }, data: Data())
        try store.add(.certificate, attributes: [.label: .string("cert"), .certificateType: .number(3)], data: Data("DER bytes".utf8))
        #expect(try Self.versions(store) == Array(repeating: SecretEnvelope.version, count: 6), "every seal writes the current version")

        for version: UInt8 in [2, 1] {
            try Self.downgrade(store, to: version)
            #expect(try Self.versions(store) == Array(repeating: version, count: 6))
            #expect(try store.password(account: "alice", service: "mail") == "alice-secret", "version \(version) reads as before")
            #expect(try store.upgradeEnvelopes() == 6, "every blob of every group, once")
            #expect(try Self.versions(store) == Array(repeating: SecretEnvelope.version, count: 6))
            #expect(try store.upgradeEnvelopes() == 0, "nothing left to do")
            #expect(try store.password(account: "alice", service: "mail") == "alice-secret")
            #expect(try store.find(ItemQuery(.genericPassword, matching: password("bob", "mail"), returning: .data)).first?.data == Data())
            let certificate = try store.find(ItemQuery(.certificate, matching: [.label: .string("cert")], returning: [.data, .attributes]))
            #expect(certificate.first?.data == Data("DER bytes".utf8))
            #expect(certificate.first?.attributes?[.certificateType] == .number(3))
        }

        // Opening a keychain an older release wrote upgrades it.
        try Self.downgrade(store, to: 2)
        let reopened = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        #expect(try Self.versions(reopened) == Array(repeating: SecretEnvelope.version, count: 6))
        #expect(try reopened.password(account: "alice", service: "mail") == "alice-secret")
    }

    @Test("a blob that does not open stops the upgrade and changes nothing; the open still succeeds")
    func damagedRow() throws {
        let temporary = try TemporaryKeychain()
        let store = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        try store.setPassword("alice-secret", account: "alice", service: "mail")
        try store.setPassword("bob-secret", account: "bob", service: "mail")
        try Self.downgrade(store, to: 2)
        // Bob's secret tampered with: it authenticates no more.
        let last = try #require(store.embedded!.database.query("SELECT id, secret FROM item ORDER BY id DESC LIMIT 1").first)
        guard case .blob(var tampered) = last[1] else { Issue.record("no secret"); return }
        tampered[tampered.count - 1] ^= 1
        try store.embedded!.database.query("UPDATE item SET secret = ?1 WHERE id = ?2", [.blob(tampered), last[0]])
        expectKeychainError(.decode) { try store.upgradeEnvelopes() }
        #expect(try Self.versions(store) == Array(repeating: 2, count: 4), "one transaction: alice's rows were not rewritten either")
        let reopened = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        #expect(try Self.versions(reopened) == Array(repeating: 2, count: 4))
        #expect(try reopened.password(account: "alice", service: "mail") == "alice-secret")
    }

    @Test("a locked keychain is not upgraded (nothing changes, the open succeeds); unlocked, it is")
    func lockedKeychain() throws {
        let temporary = try TemporaryKeychain()
        let store = try PasswordLockTests.create(temporary)
        try store.setPassword("alice-secret", account: "alice", service: "mail")
        try Self.downgrade(store, to: 2)
        try store.lock()
        expectKeychainError(.interactionNotAllowed) { try store.upgradeEnvelopes() }
        let reopened = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])
        #expect(try Self.versions(reopened) == [2, 2])
        try reopened.unlock(password: Data("correct horse".utf8))
        #expect(try reopened.upgradeEnvelopes() == 2)
        #expect(try Self.versions(reopened) == [SecretEnvelope.version, SecretEnvelope.version])
        #expect(try store.password(account: "alice", service: "mail") == "alice-secret")
    }
}
