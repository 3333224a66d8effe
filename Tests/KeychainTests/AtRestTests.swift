import Foundation
@testable import Keychain
import Testing

/// What is on disk: no secret and no searchable value in the database or its WAL; rows bound to themselves;
/// backups that keep secrets sealed.
@Suite("Keychain: encryption at rest and backups")
struct AtRestTests {
    @Test("the database and the WAL hold no stored secret and no searchable value in the clear")
    func bytesOnDisk() throws {
        let temporary = try TemporaryKeychain()
        let store = try KeychainStore(path: temporary.path, accessGroups: ["app.one"])  // the key file beside it
        let secrets = (0..<20).map { "Zq-secret-\($0)-\(UUID().uuidString)" }
        for (index, secret) in secrets.enumerated() {
            try store.add(
                .genericPassword,
                attributes: [.account: .string("acct-Xy\(index)@example.org"), .service: .string("svc-Wv\(index)"), .label: .string("label-Uu\(index)")],
                data: Data(secret.utf8))
            try store.add(.internetPassword, attributes: [.server: .string("server-Tt\(index).example.net"), .account: .string("acct-Xy\(index)@example.org")], data: Data(secret.utf8))
        }
        // Update one, then delete it: neither the old nor the new secret may linger in freed pages.
        try store.update(ItemQuery(.genericPassword, matching: [.account: .string("acct-Xy0@example.org"), .service: .string("svc-Wv0")]), attributes: [:], data: Data("Zq-updated-secret".utf8))
        try store.delete(ItemQuery(.genericPassword, matching: [.service: .string("svc-Wv1")]))
        var files = [temporary.path, temporary.path + "-wal"]
        files = files.filter { FileManager.default.fileExists(atPath: $0) }
        #expect(files.count == 2, "the WAL should exist while the store is open")
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(bytes.count >= 4096)
            for needle in secrets + ["Zq-updated-secret", "acct-Xy", "svc-Wv", "label-Uu", "server-Tt", "example.org"] {
                #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(needle) found in \(file)")
            }
        }
        // The search can fail: a value written in the clear through another connection is found by it.
        let raw = try Database(path: temporary.path)
        try raw.execute("CREATE TABLE control(x TEXT); INSERT INTO control VALUES ('Zq-control-in-the-clear')")
        let found = try files.contains { try Data(contentsOf: URL(fileURLWithPath: $0)).range(of: Data("Zq-control-in-the-clear".utf8)) != nil }
        #expect(found, "the control plaintext should be found in the database or its WAL")
        // And the key file is 0600, like the database and the WAL.
        for file in files + [temporary.path + ".key"] {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }
    }

    @Test("a secret or attribute blob copied onto another row fails to decrypt (errSecDecode) instead of leaking")
    func rowsAreBound() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("alice-secret".utf8))
        try store.add(.genericPassword, attributes: password("mallory", "mail"), data: Data("mallory-secret".utf8))
        let database = try Database(path: temporary.path)
        try database.execute(
            "UPDATE item SET secret = (SELECT secret FROM item WHERE id = 1) WHERE id = 2")
        expectKeychainError(.decode) { _ = try store.password(account: "mallory", service: "mail") }
        try database.execute("UPDATE item SET attributes = (SELECT attributes FROM item WHERE id = 1) WHERE id = 2")
        expectKeychainError(.decode) {
            _ = try store.find(ItemQuery(.genericPassword, matching: password("mallory", "mail"), returning: .attributes))
        }
        // Moving a row into another access group by editing the column does not work either.
        try database.execute("UPDATE item SET agrp = 'app.two' WHERE id = 1")
        let other = try temporary.open(groups: ["app.two"])
        expectKeychainError(.decode) { _ = try other.find(ItemQuery(.genericPassword, returning: .data)) }
        // Another master key finds nothing by name (the index is keyed) and decrypts nothing.
        // (Opening with another key is refused by the key check value; with that row deleted it opens, and still
        // learns nothing.)
        expectKeychainError(.masterKey) { _ = try temporary.open(key: 0x01) }
        try database.execute("DELETE FROM keycheck")
        let wrongKey = try temporary.open(key: 0x01)
        #expect(try wrongKey.password(account: "alice", service: "mail") == nil)
        expectKeychainError(.decode) { _ = try wrongKey.find(ItemQuery(.genericPassword, returning: .data)) }
    }

    @Test("a deleted item's sealed copy leaves both files shortly after the delete, by itself; removeDeletedCopies does it at once; a reader defers it")
    func deletedCopiesRemoved() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("alice-secret".utf8))
        try store.add(.genericPassword, attributes: password("bob", "mail"), data: Data("bob-secret".utf8))
        // The sealed secret as stored: what a thief holding the key file could still open.
        let reader = try Database(path: temporary.path)
        let rows = try reader.query("SELECT secret, attributes FROM item WHERE id = 1")
        guard case .blob(let sealedSecret)? = rows.first?[0], case .blob(let sealedAttributes)? = rows.first?[1] else {
            Issue.record("no sealed row")
            return
        }
        // A reader holds the WAL from before the delete: the store's own removal must wait for it.
        try reader.execute("BEGIN")
        _ = try reader.query("SELECT count(*) FROM item")
        try store.delete(ItemQuery(.genericPassword, matching: password("alice", "mail")))
        func onDisk(_ needle: [UInt8]) throws -> Bool {
            try [temporary.path, temporary.path + "-wal"].contains { path in
                guard FileManager.default.fileExists(atPath: path) else { return false }
                return try Data(contentsOf: URL(fileURLWithPath: path)).range(of: Data(needle)) != nil
            }
        }
        // The independent check can fail: the copy is there while the reader holds it.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try onDisk(sealedSecret), "the deleted row's sealed secret should still be in the WAL")
        #expect(store.removeDeletedCopies() == false, "a reader holds the WAL: nothing can be removed, and the call says so")
        try reader.execute("COMMIT")
        // The store's own removal, retried, gets through once the reader is done.
        let deadline = Date().addingTimeInterval(10)
        while try onDisk(sealedSecret) || onDisk(sealedAttributes), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try !onDisk(sealedSecret))
        #expect(try !onDisk(sealedAttributes))
        let wal = try FileManager.default.attributesOfItem(atPath: temporary.path + "-wal")[.size] as? Int
        #expect(wal == 0)
        #expect(try store.password(account: "bob", service: "mail") == "bob-secret")
        // At once, on request.
        try store.delete(ItemQuery(.genericPassword, matching: password("bob", "mail")))
        #expect(store.removeDeletedCopies())
    }

    /// The secrets of `query`'s matches, sorted (an empty list when nothing matches).
    func secrets(_ store: KeychainStore, _ itemClass: ItemClass, _ matching: ItemAttributes, synchronizable: SynchronizableMatch = .no) throws -> [String] {
        var query = ItemQuery(itemClass, matching: matching, limit: .all, returning: .data)
        query.synchronizable = synchronizable
        do {
            return try store.find(query).map { String(decoding: $0.data ?? Data(), as: UTF8.self) }.sorted()
        } catch let error as KeychainError where error.code == .itemNotFound {
            return []
        }
    }

    @Test(
        "a clear index column edited onto another row answers no query its sealed attributes do not match",
        arguments: ["svce", "acct", "labl", "srvr", "atag", "sync"])
    func indexColumnsAreChecked(column: String) throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: [.account: .string("alice"), .service: .string("mail"), .label: .string("A")], data: Data("alice-secret".utf8))
        try store.add(.genericPassword, attributes: [.account: .string("bob"), .service: .string("web"), .label: .string("B")], data: Data("bob-secret".utf8))
        try store.add(.internetPassword, attributes: [.account: .string("carol"), .server: .string("a.example")], data: Data("carol-secret".utf8))
        try store.add(.internetPassword, attributes: [.account: .string("dave"), .server: .string("b.example")], data: Data("dave-secret".utf8))
        let database = try Database(path: temporary.path)
        switch column {
        case "atag":
            try store.add(.key, attributes: [.keyClass: .number(1), .applicationTag: .data(Data("tag-1".utf8))], data: Data("key-1".utf8))
            try store.add(.key, attributes: [.keyClass: .number(1), .applicationTag: .data(Data("tag-2".utf8))], data: Data("key-2".utf8))
            try database.execute("UPDATE item SET atag = (SELECT atag FROM item WHERE id = 5) WHERE id = 6")
            #expect(try secrets(store, .key, [.applicationTag: .data(Data("tag-1".utf8))]) == ["key-1"])
        case "sync":
            // bob's row claims to be synchronizable: a query for synchronizable items must not return it.
            try database.execute("UPDATE item SET sync = 1 WHERE id = 2")
            #expect(try secrets(store, .genericPassword, [.service: .string("web")], synchronizable: .yes).isEmpty)
            #expect(try secrets(store, .genericPassword, [:], synchronizable: .yes).isEmpty)
            #expect(try secrets(store, .genericPassword, [.service: .string("web")], synchronizable: .any) == ["bob-secret"])
        case "srvr":
            try database.execute("UPDATE item SET srvr = (SELECT srvr FROM item WHERE id = 3), srvr_ci = (SELECT srvr_ci FROM item WHERE id = 3) WHERE id = 4")
            #expect(try secrets(store, .internetPassword, [.server: .string("a.example")]) == ["carol-secret"])
        default:
            // Row 1's value copied onto row 2 (alice's service, account or label onto bob's row).
            try database.execute("UPDATE item SET \(column) = (SELECT \(column) FROM item WHERE id = 1), \(column)_ci = (SELECT \(column)_ci FROM item WHERE id = 1) WHERE id = 2")
            let key: AttributeKey = column == "svce" ? .service : column == "acct" ? .account : .label
            let alice: AttributeValue = column == "svce" ? .string("mail") : column == "acct" ? .string("alice") : .string("A")
            #expect(try secrets(store, .genericPassword, [key: alice]) == ["alice-secret"])
            // Deleting and updating by that attribute touch alice's item only.
            try store.update(ItemQuery(.genericPassword, matching: [key: alice]), attributes: [.comment: .string("touched")])
            let all = try store.find(ItemQuery(.genericPassword, limit: .all, returning: .attributes))
            let bob = all.first { $0.attributes?[.account] == .string("bob") }
            #expect(bob != nil && bob?.attributes?[.comment] == nil)
            try store.delete(ItemQuery(.genericPassword, matching: [key: alice]))
            #expect(try secrets(store, .genericPassword, [:]) == ["bob-secret"])
        }
    }

    @Test("a key's link or key-class column edited does not pair a certificate with a key that is not its own")
    func identityColumnsAreChecked() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        let hash = Data(repeating: 0xAA, count: 20)
        try store.add(
            .certificate,
            attributes: [.certificateType: .number(3), .issuer: .data(Data([1])), .serialNumber: .data(Data([2])), .publicKeyHash: .data(hash)],
            data: Data("certificate".utf8))
        // Another certificate's private key, and a public key with this certificate's hash.
        try store.add(.key, attributes: [.keyClass: .number(1), .applicationLabel: .data(Data(repeating: 0xBB, count: 20))], data: Data("private".utf8))
        try store.add(.key, attributes: [.keyClass: .number(0), .applicationLabel: .data(hash)], data: Data("public".utf8))
        let identities = { () throws -> Int in
            do { return try store.find(ItemQuery(.identity, limit: .all, returning: .attributes)).count } catch let error as KeychainError where error.code == .itemNotFound { return 0 }
        }
        #expect(try identities() == 0)
        let database = try Database(path: temporary.path)
        try database.execute("UPDATE item SET link = (SELECT link FROM item WHERE id = 1) WHERE id = 2")
        #expect(try identities() == 0)
        try database.execute("UPDATE item SET kcls = 1 WHERE id = 3")
        #expect(try identities() == 0)
    }

    @Test("a backup restores every item with the same master key, and attributes only with another")
    func backupRoundTrip() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open(groups: ["app.one", "team"])
        let reference = try store.add(.genericPassword, attributes: password("alice", "mail").merging([.comment: .string("c")]) { $1 }, data: Data("pw-1".utf8), returning: .persistentReference).persistentReference
        try store.add(.internetPassword, attributes: [.server: .string("example.com"), .port: .number(443), .accessGroup: .string("team")], data: Data("pw-2".utf8))
        try store.add(.key, attributes: [.applicationTag: .data(Data("k".utf8)), .keyClass: .number(1)], data: Data([1, 2, 3]))
        let file = temporary.directory.appendingPathComponent("backup.json")
        #expect(try store.backup(to: file) == 3)
        let bytes = try Data(contentsOf: file)
        for secret in ["pw-1", "pw-2"] { #expect(bytes.range(of: Data(secret.utf8)) == nil) }
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int) == 0o600)

        // Same master key: everything back, persistent references included.
        try store.delete(ItemQuery(.genericPassword))
        try store.update(ItemQuery(.internetPassword), attributes: [:], data: Data("changed".utf8))
        let report = try store.restore(from: file)
        #expect(report.restored == 3 && report.unreadableSecrets.isEmpty)
        #expect(try store.find(ItemQuery(nil, persistentReference: reference, returning: .data))[0].data == Data("pw-1".utf8))
        #expect(try store.find(ItemQuery(.internetPassword, returning: .data))[0].data == Data("pw-2".utf8))
        #expect(try store.find(ItemQuery(.key, limit: .all)).count == 1)

        // Another master key: the attributes come back, every secret is reported unreadable and reads fail.
        let elsewhere = try TemporaryKeychain().open(groups: ["app.one", "team"], key: 0x77)
        let foreign = try elsewhere.restore(from: file)
        #expect(foreign.restored == 3 && foreign.unreadableSecrets.count == 3)
        let attributes = try elsewhere.find(ItemQuery(.genericPassword, matching: password("alice", "mail"), returning: .attributes))[0].attributes
        #expect(attributes?[.comment] == .string("c"))
        expectKeychainError(.decode) { _ = try elsewhere.password(account: "alice", service: "mail") }

        // A caller outside a group in the backup, or a damaged file, restores nothing.
        let outsider = try TemporaryKeychain().open(groups: ["app.one"])
        expectKeychainError(.missingEntitlement) { _ = try outsider.restore(from: file) }
        expectKeychainError(.itemNotFound) { _ = try outsider.find(ItemQuery(.genericPassword)) }
        try Data("{\"format\": 1}".utf8).write(to: file)
        expectKeychainError(.decode) { _ = try store.restore(from: file) }
    }

    /// Restore deletes by UUID within the caller's group: without that condition, a crafted backup carrying another
    /// group's UUID would remove that group's item.
    @Test("a restored item cannot replace another group's item by its reference")
    func restoreStaysInGroup() throws {
        let temporary = try TemporaryKeychain()
        let victim = try temporary.open(groups: ["app.victim"])
        try victim.add(.genericPassword, attributes: password("alice", "bank"), data: Data("victim".utf8))
        let attacker = try temporary.open(groups: ["app.attacker"])
        try attacker.add(.genericPassword, attributes: password("mallory", "mail"), data: Data("mine".utf8))
        let victimFile = temporary.directory.appendingPathComponent("victim.json")
        let attackerFile = temporary.directory.appendingPathComponent("attacker.json")
        _ = try victim.backup(to: victimFile)
        _ = try attacker.backup(to: attackerFile)
        // The attacker's backup with the victim item's UUID in place of its own.
        var crafted = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: attackerFile)) as? [String: Any])
        let victimItems = try #require(
            (try JSONSerialization.jsonObject(with: Data(contentsOf: victimFile)) as? [String: Any])?["items"] as? [[String: Any]])
        var items = try #require(crafted["items"] as? [[String: Any]])
        items[0]["uuid"] = victimItems[0]["uuid"]
        crafted["items"] = items
        try JSONSerialization.data(withJSONObject: crafted).write(to: attackerFile)
        expectKeychainError(.missingEntitlement) { _ = try attacker.restore(from: attackerFile) }
        #expect(try victim.password(account: "alice", service: "bank") == "victim")
    }

    /// The backup's temporary file must not be a predictable name (`.tmp-<pid>`) opened without O_EXCL or
    /// O_NOFOLLOW: a symlink planted there would receive the backup.
    @Test("a symlink planted where the backup's temporary file used to be receives nothing")
    func backupTemporaryFile() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("pw".utf8))
        let file = temporary.directory.appendingPathComponent("backup.json")
        let victim = temporary.directory.appendingPathComponent("victim.txt")
        try Data("untouched".utf8).write(to: victim)
        try FileManager.default.createSymbolicLink(atPath: file.path + ".tmp-\(getpid())", withDestinationPath: victim.path)
        #expect(try store.backup(to: file) == 1)
        #expect(try Data(contentsOf: victim) == Data("untouched".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.directory.path).filter { $0.hasPrefix("backup.json.tmp-") }
            == ["backup.json.tmp-\(getpid())"], "only the planted link is left")
    }

    @Test("the schema is versioned; a database from a newer release is refused")
    func schemaVersion() throws {
        let temporary = try TemporaryKeychain()
        _ = try temporary.open()
        let database = try Database(path: temporary.path)
        #expect(try database.userVersion == Schema.currentVersion)
        try database.setUserVersion(Schema.currentVersion + 1)
        expectKeychainError(.database) { _ = try temporary.open() }
    }
}
