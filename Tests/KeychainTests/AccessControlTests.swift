import SecurityBase
import CryptoContract
import CryptoDispatcher
import Foundation
@testable import Keychain
import Testing

/// Items' access control lists: what each operation needs, checked against the calling
/// application (``ItemAccess/accessor`` as the keychain service sets it, else this process); the list sealed and
/// bound to its row.
@Suite("Keychain: access control lists")
struct AccessControlTests {
    /// Another application: `/bin/true`, identified by its SHA-256 (sha256sum's, the independent digest).
    static let other = ItemAccess.Application(path: "/bin/true", sha256: sha256sum("/bin/true"))

    static func sha256sum(_ path: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let output = Pipe()
        process.standardOutput = output
        try? process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix(64))
    }

    func attributes(_ account: String, trusting trusted: [ItemAccess.Application], owner: ItemAccess.Application) throws -> ItemAttributes {
        var attributes = password(account, "acl")
        attributes[.access] = .data(try ItemAccess.standard(description: account, trusted: trusted, owner: owner).encoded())
        return attributes
    }

    @Test("an application's identity is its executable's SHA-256, sha256sum's; this process's is /proc/self/exe's")
    func applications() throws {
        let application = try ItemAccess.Application(path: "/bin/true")
        #expect(application == Self.other)
        let current = try ItemAccess.Application.current
        #expect(current.path == (try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")))
        #expect(current.sha256 == Self.sha256sum(current.path))
        expectKeychainError(.parameter) { _ = try ItemAccess.Application(path: "/nonexistent/application") }
        expectKeychainError(.parameter) { _ = try ItemAccess.Application(path: "/tmp") }
    }

    @Test("an application the list does not trust: attributes readable; the secret, the delete and a change of the list refused; anyone may change the secret (Apple's standard list); nothing changes on refusal")
    func untrustedApplication() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: try attributes("alice", trusting: [Self.other], owner: Self.other), data: Data("secret".utf8))
        let query = ItemQuery(.genericPassword, matching: password("alice", "acl"))

        var attributesOnly = query
        attributesOnly.returning = .attributes
        let found = try store.find(attributesOnly)
        #expect(found.first?.attributes?[.account] == .string("alice"))
        guard case .data(let returned)? = found.first?.attributes?[.access] else {
            Issue.record("the list is returned with the attributes")
            return
        }
        #expect(try ItemAccess(encoded: returned).entries.count == 3)
        // The commonest search (by uniqueness, data only) and a general one (by label, all items) alike.
        expectKeychainError(.interactionNotAllowed) { _ = try store.password(account: "alice", service: "acl") }
        expectKeychainError(.interactionNotAllowed) {
            _ = try store.find(ItemQuery(.genericPassword, matching: [.account: .string("alice")], limit: .all, returning: [.data, .attributes]))
        }
        expectKeychainError(.interactionNotAllowed) { try store.delete(query) }
        let list = try ItemAccess.standard(description: "mine", trusted: [try .current], owner: try .current).encoded()
        expectKeychainError(.interactionNotAllowed) { try store.update(query, attributes: [.access: .data(list)]) }
        // Changing the secret is open to every application in the standard list ("encrypt": any).
        try store.update(query, attributes: [.label: .string("relabelled")], data: Data("new secret".utf8))
        // Acting for the trusted application (as the keychain service does for its caller), all is allowed.
        try ItemAccess.$accessor.withValue(Self.other) {
            #expect(try store.password(account: "alice", service: "acl") == "new secret")
            try store.update(query, attributes: [.access: .data(list)])
        }
        // Now the list trusts this process: it reads, and `other` no longer may.
        #expect(try store.password(account: "alice", service: "acl") == "new secret")
        ItemAccess.$accessor.withValue(Self.other) {
            expectKeychainError(.interactionNotAllowed) { _ = try store.password(account: "alice", service: "acl") }
        }
        try store.delete(query)
    }

    @Test("items without a list are open to every application of their groups; a list survives reopening and backup and restore")
    func persistence() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.setPassword("plain", account: "bob", service: "acl")
        try store.add(.genericPassword, attributes: try attributes("alice", trusting: [try .current], owner: try .current), data: Data("mine".utf8))
        ItemAccess.$accessor.withValue(Self.other) {
            #expect((try? store.password(account: "bob", service: "acl")) == "plain")
            expectKeychainError(.interactionNotAllowed) { _ = try store.password(account: "alice", service: "acl") }
        }
        let reopened = try temporary.open()
        #expect(try reopened.password(account: "alice", service: "acl") == "mine")
        let backup = temporary.directory.appendingPathComponent("backup.json")
        try reopened.backup(to: backup)
        try reopened.delete(ItemQuery(.genericPassword, matching: password("alice", "acl")))
        _ = try reopened.restore(from: backup)
        #expect(try reopened.password(account: "alice", service: "acl") == "mine")
        ItemAccess.$accessor.withValue(Self.other) {
            expectKeychainError(.interactionNotAllowed) { _ = try reopened.password(account: "alice", service: "acl") }
        }
    }

    @Test("a search that passes over an item it does not match is not refused by that item's list")
    func passedOver() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        var alice = try attributes("alice", trusting: [Self.other], owner: Self.other)
        alice[.comment] = .string("a")
        try store.add(.genericPassword, attributes: alice, data: Data("not mine".utf8))
        try store.add(.genericPassword, attributes: password("bob", "acl").merging([.comment: .string("b")]) { $1 }, data: Data("mine".utf8))
        // The comment is matched after decryption: both rows are read, only bob's is the answer.
        let found = try store.find(ItemQuery(.genericPassword, matching: [.comment: .string("b")], limit: .all, returning: .data))
        #expect(found.map(\.data) == [Data("mine".utf8)])
        expectKeychainError(.interactionNotAllowed) {
            _ = try store.find(ItemQuery(.genericPassword, matching: [.comment: .string("a")], limit: .all, returning: .data))
        }
    }

    @Test("the list is sealed and bound to its row: one moved to another item, or altered, does not open")
    func sealedList() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: try attributes("alice", trusting: [try .current], owner: try .current), data: Data("a".utf8))
        try store.add(.genericPassword, attributes: try attributes("bob", trusting: [Self.other], owner: Self.other), data: Data("b".utf8))
        let raw = try Database(path: temporary.path)
        let rows = try raw.query("SELECT id, acl FROM item ORDER BY id")
        #expect(rows.count == 2)
        guard case .blob(let aliceList) = rows[0][1], case .integer(let bobID) = rows[1][0] else {
            Issue.record("both rows have a list")
            return
        }
        #expect(!String(decoding: aliceList, as: UTF8.self).contains("ACLAuthorization"), "the list is encrypted")
        // Bob's item given Alice's list (which trusts this process) does not become readable.
        try raw.query("UPDATE item SET acl = ?1 WHERE id = ?2", [.blob(aliceList), .integer(bobID)])
        expectKeychainError(.decode) { _ = try store.password(account: "bob", service: "acl") }
        var altered = aliceList
        altered[altered.count / 2] ^= 1
        try raw.query("UPDATE item SET acl = ?1 WHERE id = ?2", [.blob(altered), .integer(bobID)])
        expectKeychainError(.decode) { _ = try store.password(account: "bob", service: "acl") }
    }

    /// The list is a column of its own: removing it from the row must not lift it.
    @Test("a list removed from the row (acl set to NULL) leaves a secret that does not open, by every read path; a list given later binds too")
    func removedList() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: try attributes("bob", trusting: [Self.other], owner: Self.other), data: Data("b".utf8))
        try store.setPassword("carol-secret", account: "carol", service: "acl")
        expectKeychainError(.interactionNotAllowed) { _ = try store.password(account: "bob", service: "acl") }
        let raw = try Database(path: temporary.path)
        try raw.query("UPDATE item SET acl = NULL WHERE acct IS NOT NULL AND id = (SELECT min(id) FROM item)")
        expectKeychainError(.decode) { _ = try store.password(account: "bob", service: "acl") }
        expectKeychainError(.decode) {
            _ = try store.find(ItemQuery(.genericPassword, matching: password("bob", "acl"), returning: [.data, .attributes]))
        }
        expectKeychainError(.decode) {
            _ = try store.find(ItemQuery(.genericPassword, matching: [.service: .string("acl")], limit: .all, returning: .data))
        }
        // Carol's item gets a list after it was stored (no new secret given): the secret is resealed for it.
        _ = try store.update(
            ItemQuery(.genericPassword, matching: password("carol", "acl")),
            attributes: [.access: .data(try ItemAccess.standard(description: "carol", trusted: [try .current], owner: try .current).encoded())])
        #expect(try store.password(account: "carol", service: "acl") == "carol-secret")
        try raw.query("UPDATE item SET acl = NULL WHERE id = (SELECT max(id) FROM item)")
        expectKeychainError(.decode) { _ = try store.password(account: "carol", service: "acl") }
    }

    /// A keychain an older release wrote (its secrets' identity did not say a list was there)
    /// is resealed when opened, after which removing the list no longer helps.
    @Test("an older release's secret under a list reads as before and is resealed at open; then removing the list fails")
    func olderSecretUnderList() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        try store.add(.genericPassword, attributes: try attributes("alice", trusting: [try .current], owner: try .current), data: Data("a-secret".utf8))
        // Reseal the secret as version 3 did: identity "secret", whatever the list.
        try store.embedded!.connectionLock.withLock { _ in
            let row = try #require(try store.embedded!.database.query("SELECT id, uuid, class, agrp, uniq, secret FROM item").first)
            guard case .blob(let uuid) = row[1], case .text(let group) = row[3], case .blob(let uniq) = row[4], case .blob(let blob) = row[5]
            else { Issue.record("a malformed row"); return }
            let wrapping = try store.embedded!.secretWrapping(.genericPassword)
            let current = store.embedded!.secretIdentity(.genericPassword, group: group, uniq: uniq, uuid: uuid, binding: SecretBinding(accessList: true, user: false), version: SecretEnvelope.version)
            let plaintext = try SecretEnvelope.open(blob, identity: current, wrapping: wrapping, engine: Dispatcher.shared)
            let old = try SecretEnvelope.seal(
                plaintext, identity: store.embedded!.identity("secret", .genericPassword, group: group, uniq: uniq, uuid: uuid), wrapping: wrapping,
                engine: Dispatcher.shared, version: 3)
            try store.embedded!.database.query("UPDATE item SET secret = ?1 WHERE id = ?2", [.blob(old), row[0]])
        }
        #expect(try store.password(account: "alice", service: "acl") == "a-secret", "version 3 reads as before")
        let reopened = try temporary.open()
        let raw = try Database(path: temporary.path)
        #expect(try raw.query("SELECT substr(secret, 1, 1) FROM item").first?.first == .blob([SecretEnvelope.version]), "resealed at open")
        #expect(try reopened.password(account: "alice", service: "acl") == "a-secret")
        try raw.query("UPDATE item SET acl = NULL")
        expectKeychainError(.decode) { _ = try reopened.password(account: "alice", service: "acl") }
    }

    @Test("bad lists are errSecParam and add nothing; the list cannot be searched for")
    func badLists() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        var attributes = password("alice", "acl")
        attributes[.access] = .data(Data("not a list".utf8))
        expectKeychainError(.parameter) { try store.add(.genericPassword, attributes: attributes, data: Data("x".utf8)) }
        let short = ItemAccess(entries: [.init(authorizations: [.decrypt], applications: [.init(path: "/bin/true", sha256: "abc")])])
        attributes[.access] = .data(try JSONEncoder().encode(short))
        expectKeychainError(.parameter) { try store.add(.genericPassword, attributes: attributes, data: Data("x".utf8)) }
        attributes[.access] = .string("text")
        expectKeychainError(.parameter) { try store.add(.genericPassword, attributes: attributes, data: Data("x".utf8)) }
        expectKeychainError(.itemNotFound) { _ = try store.find(ItemQuery(.genericPassword, matching: [:], limit: .all)) }
        let list = try ItemAccess.standard(description: "", trusted: [], owner: Self.other).encoded()
        expectKeychainError(.parameter) { _ = try store.find(ItemQuery(.genericPassword, matching: [.access: .data(list)])) }
        // Nor an access control, beside the uniqueness attributes (the planner learns both in its one pass).
        expectKeychainError(.parameter) {
            _ = try store.find(ItemQuery(.genericPassword, matching: password("a", "s").merging([.accessControl: .data(Data([1]))]) { $1 }))
        }
    }

    @Test("an identity's private key's list governs the identity's key")
    func identityKey() throws {
        let temporary = try TemporaryKeychain()
        let store = try temporary.open()
        let hash = Data(repeating: 7, count: 20)
        let list = try ItemAccess.standard(description: "key", trusted: [Self.other], owner: Self.other).encoded()
        _ = try store.addIdentity(
            certificate: ([.label: .string("id"), .certificateType: .number(3), .publicKeyHash: .data(hash), .serialNumber: .data(Data([1])), .issuer: .data(Data([2]))], Data("certificate".utf8)),
            privateKey: ([.label: .string("id"), .keyClass: .number(1), .applicationLabel: .data(hash), .access: .data(list)], Data("private key".utf8)))
        expectKeychainError(.interactionNotAllowed) { _ = try store.find(ItemQuery(.identity, matching: [:], returning: .reference)) }
        // The certificate alone is no secret.
        #expect(try store.find(ItemQuery(.certificate, matching: [:], returning: .data)).first?.data == Data("certificate".utf8))
        let identity = try ItemAccess.$accessor.withValue(Self.other) {
            try store.find(ItemQuery(.identity, matching: [:], returning: .reference)).first
        }
        #expect(identity?.identityKeyData == Data("private key".utf8))
    }

    @Test("kSecAttrAccessControl: a constraint asking for the user is refused (authFailed) in a keychain without a password and kept in one with; its protection becomes the item's accessibility; undefined flags and a different accessibility are parameter errors")
    func accessControl() throws {
        let temporary = try TemporaryKeychain()
        let plain = try temporary.open()
        func attributes(_ account: String, _ flags: UInt, accessible: Accessibility? = nil) throws -> ItemAttributes {
            var attributes = password(account, "accc")
            attributes[.accessControl] = .data(try ItemAccessControl(protection: .whenUnlockedThisDeviceOnly, flags: flags).encoded())
            if let accessible { attributes[.accessible] = .string(accessible.rawValue) }
            return attributes
        }
        expectKeychainError(.authFailed) { try plain.add(.genericPassword, attributes: try attributes("a", ItemAccessControl.Flag.userPresence), data: Data("x".utf8)) }
        expectKeychainError(.authFailed) {
            try plain.add(
                .genericPassword, attributes: try attributes("a", ItemAccessControl.Flag.biometryAny | ItemAccessControl.Flag.or | ItemAccessControl.Flag.devicePasscode),
                data: Data("x".utf8))
        }
        // Biometry alone, or with a companion device, cannot be satisfied here: refused in any keychain.
        expectKeychainError(.unimplemented) { try plain.add(.genericPassword, attributes: try attributes("a", ItemAccessControl.Flag.biometryAny | ItemAccessControl.Flag.or), data: Data("x".utf8)) }
        expectKeychainError(.itemNotFound) { _ = try plain.find(ItemQuery(.genericPassword, matching: [:], limit: .all)) }
        // Without a constraint on the user (the accessibility alone, or a key's private-key usage), any keychain.
        try plain.add(.genericPassword, attributes: try attributes("b", ItemAccessControl.Flag.privateKeyUsage), data: Data("x".utf8))
        let found = try plain.find(ItemQuery(.genericPassword, matching: [.account: .string("b")], returning: .attributes))
        #expect(found.first?.attributes?[.accessible] == .string("aku"))
        expectKeychainError(.parameter) { try plain.add(.genericPassword, attributes: try attributes("c", 0, accessible: .always), data: Data("x".utf8)) }
        var undefined = password("d", "accc")
        undefined[.accessControl] = .data(Data(#"{"flags":4,"protection":"ak"}"#.utf8))
        expectKeychainError(.parameter) { try plain.add(.genericPassword, attributes: undefined, data: Data("x".utf8)) }

        let lockedTemporary = try TemporaryKeychain()
        let locked = try KeychainStore.createPasswordLocked(
            path: lockedTemporary.path, password: Data("pw".utf8), accessGroups: ["app.one"], derivation: PasswordLockTests.fast)
        try locked.add(.genericPassword, attributes: try attributes("a", ItemAccessControl.Flag.userPresence), data: Data("kept".utf8))
        try locked.lock()
        expectKeychainError(.interactionNotAllowed) { _ = try locked.password(account: "a", service: "accc") }
        try locked.unlock(password: Data("pw".utf8))
        // Unlocked, the secret still asks for the user: the keychain's password is the proof.
        expectKeychainError(.interactionNotAllowed) { _ = try locked.password(account: "a", service: "accc") }
        #expect(try locked.password(account: "a", service: "accc", authentication: ItemAuthentication(password: SecretBytes(Array("pw".utf8)))) == "kept")
        for flags in [ItemAccessControl.Flag.biometryAny, ItemAccessControl.Flag.biometryCurrentSet | ItemAccessControl.Flag.and | ItemAccessControl.Flag.devicePasscode, ItemAccessControl.Flag.companion] {
            expectKeychainError(.unimplemented) { try locked.add(.genericPassword, attributes: try attributes("b", flags), data: Data("x".utf8)) }
        }
        try locked.add(
            .genericPassword, attributes: try attributes("b", ItemAccessControl.Flag.biometryAny | ItemAccessControl.Flag.or | ItemAccessControl.Flag.devicePasscode),
            data: Data("either".utf8))
        #expect(try locked.password(account: "b", service: "accc", authentication: ItemAuthentication(password: SecretBytes(Array("pw".utf8)))) == "either")
    }

    @Test("user presence enforced: no proof is interactionNotAllowed (fail or allow), skip leaves the item out, a wrong password is authFailed and delayed, the right one or a recent unlock within the reuse reads it; attributes need no proof; items without the constraint need none")
    func userPresence() throws {
        let temporary = try TemporaryKeychain()
        let store = try KeychainStore.createPasswordLocked(
            path: temporary.path, password: Data("pw".utf8), accessGroups: ["app.one"], derivation: PasswordLockTests.fast)
        var protected = password("guarded", "presence")
        protected[.accessControl] = .data(try ItemAccessControl(protection: .whenUnlocked, flags: ItemAccessControl.Flag.userPresence).encoded())
        try store.add(.genericPassword, attributes: protected, data: Data("secret".utf8))
        try store.add(.genericPassword, attributes: password("open", "presence"), data: Data("plain".utf8))
        func read(_ account: String?, _ authentication: ItemAuthentication?, limit: MatchLimit = .one) throws -> [Data] {
            let matching: ItemAttributes = account.map { [.account: .string($0)] } ?? [.service: .string("presence")]
            return try store.find(ItemQuery(.genericPassword, matching: matching, limit: limit, returning: .data, authentication: authentication))
                .compactMap(\.data)
        }
        let right = SecretBytes(Array("pw".utf8))
        // Created unlocked, not by an unlock with the password: no reuse to take.
        for interaction in [ItemAuthentication.Interaction.allow, .fail] {
            expectKeychainError(.interactionNotAllowed) { _ = try read("guarded", ItemAuthentication(reuse: .seconds(60), interaction: interaction)) }
        }
        expectKeychainError(.interactionNotAllowed) { _ = try read("guarded", nil) }
        expectKeychainError(.itemNotFound) { _ = try read("guarded", ItemAuthentication(interaction: .skip)) }
        #expect(try read(nil, ItemAuthentication(interaction: .skip), limit: .all) == [Data("plain".utf8)])
        #expect(try read("open", nil) == [Data("plain".utf8)])
        // The attributes need no proof.
        let attributes = try store.find(ItemQuery(.genericPassword, matching: [.account: .string("guarded")], returning: .attributes))
        #expect(attributes.first?.attributes?[.account] == .string("guarded"))
        // A wrong password: authFailed, and nothing returned.
        expectKeychainError(.authFailed) { _ = try read("guarded", ItemAuthentication(password: SecretBytes(Array("nope".utf8)))) }
        #expect(try read("guarded", ItemAuthentication(password: right)) == [Data("secret".utf8)])
        #expect(Set(try read(nil, ItemAuthentication(password: right), limit: .all)) == [Data("secret".utf8), Data("plain".utf8)])
        // An unlock with the password proves the user for the reuse duration that the request allows, and no longer.
        try store.lock()
        try store.unlock(password: Data("pw".utf8))
        #expect(try read("guarded", ItemAuthentication(reuse: .seconds(30))) == [Data("secret".utf8)])
        expectKeychainError(.interactionNotAllowed) { _ = try read("guarded", ItemAuthentication(reuse: .zero)) }
        Thread.sleep(forTimeInterval: 0.3)
        expectKeychainError(.interactionNotAllowed) { _ = try read("guarded", ItemAuthentication(reuse: .milliseconds(200))) }
        // Changing the item (its secret, or its constraint away) takes the proof too; unconstrained items do not.
        let change = ItemQuery(.genericPassword, matching: [.account: .string("guarded")])
        let unconstrained = try ItemAccessControl(protection: .whenUnlocked, flags: 0).encoded()
        expectKeychainError(.interactionNotAllowed) { try store.update(change, attributes: [.accessControl: .data(unconstrained)]) }
        expectKeychainError(.interactionNotAllowed) { try store.update(change, attributes: [:], data: Data("replaced".utf8)) }
        var proven = change
        proven.authentication = ItemAuthentication(password: right)
        #expect(try store.update(proven, attributes: [.label: .string("proven")]) == 1)
        #expect(try store.update(ItemQuery(.genericPassword, matching: [.account: .string("open")]), attributes: [.label: .string("free")]) == 1)
        #expect(try read("guarded", ItemAuthentication(password: right)) == [Data("secret".utf8)])
        // Locked, the right password does not unlock: the secret is not there to read.
        try store.lock()
        expectKeychainError(.interactionNotAllowed) { _ = try read("guarded", ItemAuthentication(password: right)) }
    }

    /// The commonest search reads no attributes: it learns from the row's `user` column whether the item asks for
    /// the user, and the secret binds that column, so a column cleared by someone who can write the database file
    /// gives no way around the proof.
    @Test("the row says whether an item asks for the user and its secret binds it: the column cleared leaves a secret that does not open; an older release's row still needs the proof; an update that gives or takes the constraint reseals")
    func userColumn() throws {
        let temporary = try TemporaryKeychain()
        let store = try KeychainStore.createPasswordLocked(
            path: temporary.path, password: Data("pw".utf8), accessGroups: ["app.one"], derivation: PasswordLockTests.fast)
        let presence = try ItemAccessControl(protection: .whenUnlocked, flags: ItemAccessControl.Flag.userPresence).encoded()
        var protected = password("guarded", "column")
        protected[.accessControl] = .data(presence)
        try store.add(.genericPassword, attributes: protected, data: Data("secret".utf8))
        try store.add(.genericPassword, attributes: password("open", "column"), data: Data("plain".utf8))
        let embedded = try #require(store.embedded)
        @discardableResult func sql(_ text: String) throws -> [[SQLiteValue]] { try embedded.connectionLock.withLock { _ in try embedded.database.query(text) } }
        func read(_ account: String, _ authentication: ItemAuthentication? = nil) throws -> String? {
            let query = ItemQuery(.genericPassword, matching: password(account, "column"), returning: .data, authentication: authentication)
            return try store.find(query).first?.data.map { String(decoding: $0, as: UTF8.self) }
        }
        let right = ItemAuthentication(password: SecretBytes(Array("pw".utf8)))
        #expect(try sql("SELECT user FROM item ORDER BY id") == [[.integer(1)], [.integer(0)]])

        try sql("UPDATE item SET user = 0")
        expectKeychainError(.decode) { _ = try read("guarded", right) }
        expectKeychainError(.decode) { _ = try read("guarded") }
        try sql("UPDATE item SET user = 1 WHERE id = 1")
        #expect(try read("guarded", right) == "secret")
        #expect(try read("open") == "plain")

        // As an older release sealed it: a version-4 secret, whose identity says nothing of the user, and the
        // column's default. The search cannot take the row's word for it, and reads the attributes.
        try embedded.connectionLock.withLock { _ in
            let row = try #require(try embedded.database.query("SELECT id, uuid, class, agrp, uniq, secret FROM item WHERE id = 1").first)
            guard case .blob(let uuid) = row[1], case .text(let group) = row[3], case .blob(let uniq) = row[4], case .blob(let blob) = row[5]
            else { Issue.record("a malformed row"); return }
            let wrapping = try embedded.secretWrapping(.genericPassword)
            func identity(_ user: Bool, _ version: UInt8) -> [UInt8] {
                embedded.secretIdentity(.genericPassword, group: group, uniq: uniq, uuid: uuid, binding: SecretBinding(accessList: false, user: user), version: version)
            }
            let plaintext = try SecretEnvelope.open(blob, identity: identity(true, SecretEnvelope.version), wrapping: wrapping, engine: Dispatcher.shared)
            let old = try SecretEnvelope.seal(plaintext, identity: identity(false, 4), wrapping: wrapping, engine: Dispatcher.shared, version: 4)
            try embedded.database.query("UPDATE item SET secret = ?1, user = 0 WHERE id = ?2", [.blob(old), row[0]])
        }
        expectKeychainError(.interactionNotAllowed) { _ = try read("guarded") }
        #expect(try read("guarded", right) == "secret")
        // Its next write reseals it as the current version, with the column.
        let guarded = ItemQuery(.genericPassword, matching: password("guarded", "column"), authentication: right)
        #expect(try store.update(guarded, attributes: [.label: .string("resealed")]) == 1)
        #expect(try sql("SELECT user, substr(secret, 1, 1) FROM item WHERE id = 1") == [[.integer(1), .blob([SecretEnvelope.version])]])
        expectKeychainError(.interactionNotAllowed) { _ = try read("guarded") }

        // The constraint taken away, and given to the other item, by updates.
        let unconstrained = try ItemAccessControl(protection: .whenUnlocked, flags: 0).encoded()
        #expect(try store.update(guarded, attributes: [.accessControl: .data(unconstrained)]) == 1)
        #expect(try store.update(ItemQuery(.genericPassword, matching: password("open", "column")), attributes: [.accessControl: .data(presence)]) == 1)
        #expect(try sql("SELECT user FROM item ORDER BY id") == [[.integer(0)], [.integer(1)]])
        #expect(try read("guarded") == "secret")
        expectKeychainError(.interactionNotAllowed) { _ = try read("open") }
        #expect(try read("open", right) == "plain")
        try sql("UPDATE item SET user = 0 WHERE id = 2")
        expectKeychainError(.decode) { _ = try read("open", right) }
    }
}
