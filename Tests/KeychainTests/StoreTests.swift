import Foundation
@testable import Keychain
import Testing

/// A keychain in a fresh temporary directory, with a fixed master key unless a key file is asked for.
struct TemporaryKeychain {
    let directory: URL
    var path: String { directory.appendingPathComponent("keychain.db").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    static func masterKey(_ byte: UInt8) throws -> KeyFileMasterKey {
        try [UInt8](repeating: byte, count: 32).withUnsafeBytes { try KeyFileMasterKey(bytes: $0) }
    }

    func open(groups: [String] = ["app.one"], key: UInt8 = 0x5a) throws -> KeychainStore {
        try KeychainStore(path: path, masterKey: Self.masterKey(key), accessGroups: groups)
    }
}

func password(_ account: String, _ service: String) -> ItemAttributes {
    [.account: .string(account), .service: .string(service)]
}

/// Expects `body` to throw a ``KeychainError`` with `code`.
func expectKeychainError(_ code: KeychainError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected KeychainError.\(code), got success", sourceLocation: sourceLocation)
    } catch let error as KeychainError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected KeychainError.\(code), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("Keychain: the item store")
struct StoreTests {
    let temporary: TemporaryKeychain
    let store: KeychainStore

    init() throws {
        temporary = try TemporaryKeychain()
        store = try temporary.open()
    }

    func count(_ query: ItemQuery) throws -> Int {
        var all = query
        all.limit = .all
        do { return try store.find(all).count } catch let error as KeychainError where error.code == .itemNotFound { return 0 }
    }

    @Test("an added password comes back with its data and Apple's default attributes")
    func addAndFind() throws {
        let before = Date()
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("s3cret".utf8))
        let found = try store.find(ItemQuery(.genericPassword, matching: password("alice", "mail"), returning: [.data, .attributes]))
        #expect(found.count == 1)
        #expect(found[0].data == Data("s3cret".utf8))
        let attributes = try #require(found[0].attributes)
        #expect(attributes[.accessGroup] == .string("app.one"))
        #expect(attributes[.synchronizable] == .bool(false))
        #expect(attributes[.accessible] == .string("ak"))
        guard case .date(let created) = attributes[.creationDate], case .date(let modified) = attributes[.modificationDate] else {
            Issue.record("no creation or modification date")
            return
        }
        #expect(created >= before.addingTimeInterval(-1) && created == modified)
        #expect(try store.password(account: "alice", service: "mail") == "s3cret")
        #expect(try store.password(account: "alice", service: "other") == nil)
    }

    @Test("a duplicate add fails and changes nothing; missing uniqueness attributes default to empty and collide")
    func duplicates() throws {
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("first".utf8))
        expectKeychainError(.duplicateItem) {
            try store.add(.genericPassword, attributes: password("alice", "mail").merging([.label: .string("x")]) { $1 }, data: Data("second".utf8))
        }
        #expect(try store.password(account: "alice", service: "mail") == "first")
        // Another service, another account or another synchronizable state is another item.
        try store.add(.genericPassword, attributes: password("alice", "web"), data: Data("a".utf8))
        try store.add(.genericPassword, attributes: password("bob", "mail"), data: Data("b".utf8))
        try store.add(.genericPassword, attributes: password("alice", "mail").merging([.synchronizable: .bool(true)]) { $1 }, data: Data("c".utf8))
        // Two items lacking account and service collide (both are "" and "").
        try store.add(.genericPassword, attributes: [.label: .string("one")])
        expectKeychainError(.duplicateItem) { try store.add(.genericPassword, attributes: [.label: .string("two")]) }
        expectKeychainError(.duplicateItem) { try store.add(.genericPassword, attributes: password("", "")) }
    }

    @Test("uniqueness of internet passwords, certificates and keys follows Apple's attributes")
    func classUniqueness() throws {
        let web: ItemAttributes = [
            .account: .string("alice"), .server: .string("example.com"), .protocol: .string("htps"), .port: .number(443),
            .path: .string("/"),
        ]
        try store.add(.internetPassword, attributes: web, data: Data("pw".utf8))
        expectKeychainError(.duplicateItem) { try store.add(.internetPassword, attributes: web.merging([.comment: .string("c")]) { $1 }) }
        try store.add(.internetPassword, attributes: web.merging([.port: .number(8443)]) { $1 })
        try store.add(.internetPassword, attributes: web.merging([.securityDomain: .string("realm")]) { $1 })
        try store.add(.internetPassword, attributes: web.merging([.authenticationType: .string("dflt")]) { $1 })

        let certificate: ItemAttributes = [.certificateType: .number(3), .issuer: .data(Data([1, 2])), .serialNumber: .data(Data([7]))]
        try store.add(.certificate, attributes: certificate.merging([.label: .string("a")]) { $1 }, data: Data([0x30]))
        expectKeychainError(.duplicateItem) {
            try store.add(.certificate, attributes: certificate.merging([.label: .string("b")]) { $1 }, data: Data([0x30, 1]))
        }
        try store.add(.certificate, attributes: certificate.merging([.serialNumber: .data(Data([8]))]) { $1 }, data: Data([0x30]))

        let key: ItemAttributes = [
            .keyClass: .number(1), .applicationLabel: .data(Data([9])), .applicationTag: .data(Data("tag".utf8)),
            .keyType: .number(42), .keySizeInBits: .number(2048), .effectiveKeySize: .number(2048),
        ]
        try store.add(.key, attributes: key, data: Data([1]))
        expectKeychainError(.duplicateItem) { try store.add(.key, attributes: key.merging([.canSign: .bool(true)]) { $1 }, data: Data([2])) }
        try store.add(.key, attributes: key.merging([.keyClass: .number(0)]) { $1 }, data: Data([3]))
        try store.add(.key, attributes: key.merging([.label: .string("other")]) { $1 }, data: Data([4]))
    }

    @Test("update changes attributes and data, misses with itemNotFound, and refuses a collision changing nothing")
    func update() throws {
        try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("one".utf8))
        try store.add(.genericPassword, attributes: password("bob", "mail"), data: Data("two".utf8))
        let alice = ItemQuery(.genericPassword, matching: password("alice", "mail"))
        #expect(try store.update(alice, attributes: [.comment: .string("hi")], data: Data("uno".utf8)) == 1)
        var read = alice
        read.returning = [.data, .attributes]
        let item = try store.find(read)[0]
        #expect(item.data == Data("uno".utf8))
        #expect(item.attributes?[.comment] == .string("hi"))
        // An attribute-only change keeps the secret; so does a change of an indexed attribute (resealed).
        try store.update(alice, attributes: [.comment: .string("again")])
        try store.update(alice, attributes: [.label: .string("Alice")])
        #expect(try store.find(read)[0].data == Data("uno".utf8))
        #expect(try store.find(read)[0].attributes?[.comment] == .string("again"))
        expectKeychainError(.itemNotFound) { try store.update(ItemQuery(.genericPassword, matching: password("carol", "mail")), attributes: [.comment: .string("x")]) }
        // Renaming alice to bob collides: nothing changes.
        expectKeychainError(.duplicateItem) { try store.update(alice, attributes: [.account: .string("bob")]) }
        #expect(try store.password(account: "alice", service: "mail") == "uno")
        #expect(try store.password(account: "bob", service: "mail") == "two")
        // Renaming both to one name collides between the updated items: nothing changes.
        let both = ItemQuery(.genericPassword, matching: [.service: .string("mail")])
        expectKeychainError(.duplicateItem) { try store.update(both, attributes: [.account: .string("same")]) }
        #expect(try count(both) == 2)
        // An update of all matches.
        #expect(try store.update(both, attributes: [.service: .string("post")]) == 2)
        #expect(try store.password(account: "alice", service: "post") == "uno")
        #expect(try store.password(account: "bob", service: "post") == "two")
    }

    @Test("queries over many access groups (1 to 300: one statement shape each, cached by its text's shape) find what they should")
    func manyGroups() throws {
        let temporary = try TemporaryKeychain()
        for count in [1, 6, 64, 70, 255, 256, 300] {
            let groups = (0..<count).map { "group.\($0)" }
            let store = try temporary.open(groups: groups)
            let last = groups[count - 1]
            try store.add(.genericPassword, attributes: password("a\(count)", "s").merging([.accessGroup: .string(last)]) { $1 }, data: Data("v\(count)".utf8))
            // By uniqueness (one value per group), by an indexed attribute, and by all, with and without attributes.
            for returning in [ReturnOptions.data, [.data, .attributes]] {
                let unique = try store.find(ItemQuery(.genericPassword, matching: password("a\(count)", "s"), limit: .all, returning: returning))
                #expect(unique.map { String(decoding: $0.data ?? Data(), as: UTF8.self) } == ["v\(count)"], "\(count) groups")
                let indexed = try store.find(ItemQuery(.genericPassword, matching: [.account: .string("a\(count)")], limit: .all, returning: returning))
                #expect(indexed.count == 1, "\(count) groups")
            }
        }
        let all = try temporary.open(groups: (0..<300).map { "group.\($0)" })
        #expect(try all.find(ItemQuery(.genericPassword, limit: .all, returning: .attributes)).count == 7)
    }

    @Test("delete removes every match, then finds nothing")
    func delete() throws {
        for name in ["a", "b", "c"] { try store.add(.genericPassword, attributes: password(name, "mail"), data: Data(name.utf8)) }
        try store.add(.genericPassword, attributes: password("a", "web"))
        #expect(try store.delete(ItemQuery(.genericPassword, matching: [.service: .string("mail")])) == 3)
        expectKeychainError(.itemNotFound) { try store.delete(ItemQuery(.genericPassword, matching: [.service: .string("mail")])) }
        #expect(try count(ItemQuery(.genericPassword)) == 1)
    }

    @Test("match limits: one by default, all, or a number")
    func limits() throws {
        for index in 0..<5 { try store.add(.genericPassword, attributes: password("user\(index)", "svc")) }
        let query = ItemQuery(.genericPassword, matching: [.service: .string("svc")], returning: .attributes)
        #expect(try store.find(query).count == 1)
        var all = query
        all.limit = .all
        #expect(try store.find(all).count == 5)
        all.limit = .count(3)
        #expect(try store.find(all).count == 3)
        all.limit = .count(0)
        expectKeychainError(.parameter) { _ = try store.find(all) }
        // A limit with a residual (decrypted) match still stops at the limit.
        var commented = ItemQuery(.genericPassword, matching: [.comment: .string("none")], limit: .all)
        expectKeychainError(.itemNotFound) { _ = try store.find(commented) }
        commented.matching = [.accessible: .string("ak")]
        commented.limit = .count(2)
        #expect(try store.find(commented).count == 2)
    }

    @Test("kSecMatchCaseInsensitive works in searches, on indexed and other attributes, and is refused by update and delete")
    func caseInsensitive() throws {
        try store.add(.genericPassword, attributes: password("Alice", "Mail").merging([.comment: .string("Hello")]) { $1 }, data: Data("pw".utf8))
        let exact = ItemQuery(.genericPassword, matching: password("alice", "MAIL"), returning: .data)
        expectKeychainError(.itemNotFound) { _ = try store.find(exact) }
        var folded = exact
        folded.caseInsensitive = true
        #expect(try store.find(folded)[0].data == Data("pw".utf8))
        folded.matching[.comment] = .string("hello")
        #expect(try store.find(folded).count == 1)
        folded.returning = []
        expectKeychainError(.parameter) { try store.update(folded, attributes: [.comment: .string("x")]) }
        expectKeychainError(.parameter) { try store.delete(folded) }
        #expect(try count(ItemQuery(.genericPassword)) == 1)
    }

    @Test("case folding: ASCII folds as Foundation folds it, every character; other text by Foundation, found either way")
    func caseFolding() throws {
        let ascii = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)
        #expect(ItemKeys.fold(ascii) == ascii.folding(options: [.caseInsensitive], locale: nil))
        #expect(ItemKeys.fold("Mail.Example-01") == "mail.example-01")
        #expect(ItemKeys.fold("ZOË Straße") == "ZOË Straße".folding(options: [.caseInsensitive], locale: nil))
        try store.add(.genericPassword, attributes: password("ZOË", "Service"), data: Data("pw".utf8))
        var folded = ItemQuery(.genericPassword, matching: password("zoë", "SERVICE"), returning: .data)
        folded.caseInsensitive = true
        #expect(try store.find(folded)[0].data == Data("pw".utf8))
    }

    @Test("synchronizable items match only when asked for; SynchronizableAny matches both")
    func synchronizable() throws {
        try store.add(.genericPassword, attributes: password("a", "s"))
        try store.add(.genericPassword, attributes: password("a", "s").merging([.synchronizable: .bool(true)]) { $1 })
        #expect(try count(ItemQuery(.genericPassword, matching: password("a", "s"))) == 1)
        #expect(try count(ItemQuery(.genericPassword, matching: password("a", "s"), synchronizable: .yes)) == 1)
        #expect(try count(ItemQuery(.genericPassword, matching: password("a", "s"), synchronizable: .any)) == 2)
        #expect(try store.delete(ItemQuery(.genericPassword, synchronizable: .any, limit: .all)) == 2)
    }

    @Test("a lookup by every uniqueness attribute (the direct path) answers as the general search does")
    func uniqueLookup() throws {
        try store.add(.genericPassword, attributes: password("a", "s"), data: Data("secret".utf8))
        try store.add(.genericPassword, attributes: password("b", "s"))
        // Data only takes the direct path; with attributes, the general one: the same bytes either way.
        let direct = try store.find(ItemQuery(.genericPassword, matching: password("a", "s"), returning: .data))
        let general = try store.find(ItemQuery(.genericPassword, matching: password("a", "s"), returning: [.data, .attributes]))
        #expect(direct.map(\.data) == [Data("secret".utf8)] && general.map(\.data) == direct.map(\.data))
        #expect(direct.first?.attributes == nil && direct.first?.itemClass == .genericPassword)
        // No data stored reads as empty data; nothing asked, nothing returned; a miss is itemNotFound.
        #expect(try store.find(ItemQuery(.genericPassword, matching: password("b", "s"), returning: .data)).map(\.data) == [Data()])
        #expect(try store.find(ItemQuery(.genericPassword, matching: password("b", "s"))).map(\.data) == [nil])
        expectKeychainError(.itemNotFound) { _ = try store.find(ItemQuery(.genericPassword, matching: password("c", "s"), returning: .data)) }

        // Certificates: synchronizable is not part of their uniqueness, so the lookup checks it on the row.
        let certificate: ItemAttributes = [
            .certificateType: .number(3), .issuer: .data(Data([1])), .serialNumber: .data(Data([2])), .synchronizable: .bool(true),
        ]
        try store.add(.certificate, attributes: certificate, data: Data([0x30, 0]))
        var query = ItemQuery(.certificate, matching: certificate.filter { $0.key != .synchronizable }, returning: .data)
        expectKeychainError(.itemNotFound) { _ = try store.find(query) }
        query.synchronizable = .yes
        #expect(try store.find(query).map(\.data) == [Data([0x30, 0])])
        query.synchronizable = .any
        #expect(try store.find(query).map(\.data) == [Data([0x30, 0])])
    }

    @Test("bad input is an error and changes nothing: wrong types, foreign and unknown attributes, no class")
    func badInput() throws {
        expectKeychainError(.parameter) { try store.add(.genericPassword, attributes: [.account: .number(5)]) }
        expectKeychainError(.parameter) { try store.add(.genericPassword, attributes: [.creator: .string("x")]) }
        expectKeychainError(.noSuchAttribute) { try store.add(.genericPassword, attributes: [.server: .string("example.com")]) }
        expectKeychainError(.noSuchAttribute) { _ = try store.find(ItemQuery(.internetPassword, matching: [.service: .string("s")])) }
        expectKeychainError(.parameter) { try store.add(.genericPassword, attributes: [AttributeKey("zzzz"): .string("x")]) }
        expectKeychainError(.parameter) { _ = try store.find(ItemQuery(nil)) }
        expectKeychainError(.parameter) { try store.add(.genericPassword, attributes: [.accessible: .string("never")]) }
        expectKeychainError(.parameter) { try store.add(.identity, attributes: [:]) }
        // Apple's coercions: a numeric string for a number, a string for data, a number for a bool.
        try store.add(.key, attributes: [.keyClass: .string("1"), .applicationTag: .string("tag"), .canSign: .number(1)])
        let key = try store.find(ItemQuery(.key, matching: [.applicationTag: .data(Data("tag".utf8))], returning: .attributes))[0]
        #expect(key.attributes?[.keyClass] == .number(1))
        #expect(key.attributes?[.canSign] == .bool(true))
        #expect(try count(ItemQuery(.genericPassword)) == 0)
    }

    @Test("persistent references find their item, survive update and reopening, and are useless elsewhere")
    func persistentReferences() throws {
        let added = try store.add(.genericPassword, attributes: password("alice", "mail"), data: Data("pw".utf8), returning: .persistentReference)
        let reference = try #require(added.persistentReference)
        let byReference = ItemQuery(nil, persistentReference: reference, returning: .data)
        #expect(try store.find(byReference)[0].data == Data("pw".utf8))
        try store.update(ItemQuery(.genericPassword, matching: password("alice", "mail")), attributes: [.account: .string("alicia")])
        let reopened = try temporary.open()
        #expect(try reopened.find(byReference)[0].data == Data("pw".utf8))
        #expect(try reopened.find(ItemQuery(.genericPassword, persistentReference: reference, returning: .persistentReference))[0].persistentReference == reference)
        // Another class in the query, another access group, a tampered or malformed reference: nothing.
        expectKeychainError(.itemNotFound) { _ = try store.find(ItemQuery(.internetPassword, persistentReference: reference)) }
        let stranger = try temporary.open(groups: ["app.two"])
        expectKeychainError(.itemNotFound) { _ = try stranger.find(byReference) }
        expectKeychainError(.itemNotFound) { try stranger.delete(ItemQuery(nil, persistentReference: reference)) }
        var tampered = Array(reference)
        tampered[10] ^= 1
        expectKeychainError(.itemNotFound) { _ = try store.find(ItemQuery(nil, persistentReference: Data(tampered), returning: .data)) }
        expectKeychainError(.parameter) { _ = try store.find(ItemQuery(nil, persistentReference: Data([1, 2, 3]))) }
        // Another keychain (another master key) does not accept it.
        let other = try TemporaryKeychain().open(key: 0x33)
        expectKeychainError(.itemNotFound) { _ = try other.find(byReference) }
        #expect(try store.delete(ItemQuery(nil, persistentReference: reference)) == 1)
        expectKeychainError(.itemNotFound) { _ = try store.find(byReference) }
    }

    @Test("access groups: adds go to the first group or a named one of the caller's; others see nothing")
    func accessGroups() throws {
        let shared = try temporary.open(groups: ["app.one", "team.shared"])
        try shared.add(.genericPassword, attributes: password("own", "s"), data: Data("1".utf8))
        try shared.add(.genericPassword, attributes: password("team", "s").merging([.accessGroup: .string("team.shared")]) { $1 }, data: Data("2".utf8))
        expectKeychainError(.missingEntitlement) {
            try shared.add(.genericPassword, attributes: password("x", "s").merging([.accessGroup: .string("app.other")]) { $1 })
        }
        let teammate = try temporary.open(groups: ["team.shared"])
        #expect(try teammate.password(account: "team", service: "s") == "2")
        #expect(try teammate.password(account: "own", service: "s") == nil)
        let outsider = try temporary.open(groups: ["app.other"])
        expectKeychainError(.itemNotFound) { _ = try outsider.find(ItemQuery(.genericPassword, limit: .all)) }
        expectKeychainError(.itemNotFound) { try outsider.delete(ItemQuery(.genericPassword)) }
        expectKeychainError(.missingEntitlement) { _ = try outsider.find(ItemQuery(.genericPassword, matching: [.accessGroup: .string("team.shared")])) }
        expectKeychainError(.missingEntitlement) { try shared.update(ItemQuery(.genericPassword, matching: password("own", "s")), attributes: [.accessGroup: .string("app.other")]) }
        // Moving an item into another of the caller's groups is allowed, and the item follows.
        try shared.update(ItemQuery(.genericPassword, matching: password("own", "s")), attributes: [.accessGroup: .string("team.shared")])
        #expect(try teammate.password(account: "own", service: "s") == "1")
        // The same account and service in two groups are two items.
        try outsider.add(.genericPassword, attributes: password("team", "s"), data: Data("3".utf8))
        #expect(try outsider.password(account: "team", service: "s") == "3")
        #expect(try teammate.password(account: "team", service: "s") == "2")
    }

    @Test("an identity is a certificate paired with the private key whose application label is its public-key hash")
    func identities() throws {
        let hash = Data(repeating: 0xab, count: 20)
        try store.add(.certificate, attributes: [.publicKeyHash: .data(hash), .label: .string("Alice"), .serialNumber: .data(Data([1]))], data: Data("CERT".utf8))
        let identityQuery = ItemQuery(.identity, limit: .all, returning: [.attributes, .persistentReference])
        expectKeychainError(.itemNotFound) { _ = try store.find(identityQuery) }
        try store.add(.key, attributes: [.keyClass: .number(0), .applicationLabel: .data(hash)], data: Data("PUBLIC".utf8))
        expectKeychainError(.itemNotFound) { _ = try store.find(identityQuery) }
        try store.add(.key, attributes: [.keyClass: .number(1), .applicationLabel: .data(hash)], data: Data("PRIVATE".utf8))
        let identity = try store.find(identityQuery)
        #expect(identity.count == 1)
        #expect(identity[0].itemClass == .identity)
        #expect(identity[0].attributes?[.label] == .string("Alice"))
        #expect(try store.find(ItemQuery(.identity, matching: [.label: .string("Alice")], returning: .data))[0].data == Data("CERT".utf8))
        let byReference = try store.find(ItemQuery(nil, persistentReference: identity[0].persistentReference, returning: .reference))[0]
        #expect(byReference.data == Data("CERT".utf8) && byReference.identityKeyData == Data("PRIVATE".utf8))
        // Deleting the identity deletes the certificate and the private key, not the public key.
        #expect(try store.delete(ItemQuery(.identity)) == 1)
        #expect(try count(ItemQuery(.certificate)) == 0)
        #expect(try count(ItemQuery(.key)) == 1)
    }

    @Test("an identity is added as its two halves in one transaction: both or neither")
    func addIdentity() throws {
        let hash = Data(repeating: 0x42, count: 20)
        let certificate: (attributes: ItemAttributes, data: Data) = ([.publicKeyHash: .data(hash), .serialNumber: .data(Data([1]))], Data("CERT".utf8))
        let key: (attributes: ItemAttributes, data: Data) = ([.keyClass: .number(1), .applicationLabel: .data(hash)], Data("KEY".utf8))
        let added = try store.addIdentity(certificate: certificate, privateKey: key, returning: .persistentReference)
        let found = try store.find(ItemQuery(nil, persistentReference: added.persistentReference, returning: .reference))[0]
        #expect(found.data == Data("CERT".utf8) && found.identityKeyData == Data("KEY".utf8))
        // The key exists: adding the identity again (with a new certificate) adds nothing at all.
        let other: (attributes: ItemAttributes, data: Data) = ([.publicKeyHash: .data(hash), .serialNumber: .data(Data([2]))], Data("CERT2".utf8))
        expectKeychainError(.duplicateItem) { try store.addIdentity(certificate: other, privateKey: key) }
        #expect(try count(ItemQuery(.certificate)) == 1)
        // Halves that do not pair are refused.
        let stranger: (attributes: ItemAttributes, data: Data) = ([.keyClass: .number(1), .applicationLabel: .data(Data([9]))], Data("K".utf8))
        expectKeychainError(.parameter) { try store.addIdentity(certificate: other, privateKey: stranger) }
        #expect(try count(ItemQuery(.key)) == 1)
    }

    @Test("find by service and account uses the index, not a table scan")
    func queryPlan() throws {
        for index in 0..<50 { try store.add(.genericPassword, attributes: password("user\(index)", "svc\(index % 5)")) }
        let plan = try store.queryPlan(ItemQuery(.genericPassword, matching: password("user1", "svc1"), returning: .data))
        // Both uniqueness attributes: one lookup of the keyed uniqueness value in UNIQUE(class, uniq).
        #expect(plan.contains { $0.hasPrefix("SEARCH item USING INDEX sqlite_autoindex_item") && $0.contains("uniq=?") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
        let byService = try store.queryPlan(ItemQuery(.genericPassword, matching: [.service: .string("svc1")], limit: .all))
        #expect(byService.contains { $0.contains("USING INDEX item_service_account") }, "\(byService)")
        #expect(try store.find(ItemQuery(.genericPassword, matching: password("user1", "svc1"), returning: .attributes))[0].attributes?[.account] == .string("user1"))
        let server = try store.queryPlan(ItemQuery(.internetPassword, matching: [.server: .string("example.com"), .account: .string("a")]))
        #expect(server.contains { $0.contains("USING INDEX item_server_account") }, "\(server)")
    }

    @Test("many threads add and read on one store and on two stores of one file at once")
    func threads() async throws {
        let second = try temporary.open()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                let store = worker.isMultiple(of: 2) ? self.store : second
                group.addTask {
                    for index in 0..<25 {
                        try store.add(.genericPassword, attributes: password("w\(worker)-\(index)", "threads"), data: Data("\(worker)/\(index)".utf8))
                        #expect(try store.password(account: "w\(worker)-\(index)", service: "threads") == "\(worker)/\(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try count(ItemQuery(.genericPassword, matching: [.service: .string("threads")])) == 200)
    }
}

@Suite("Keychain: several items added unless a condition matches")
struct ConditionalAddTests {
    @Test("added together when nothing matches; nothing added when a condition matches or one item collides")
    func conditionalAdd() throws {
        let keychain = try TemporaryKeychain()
        let store = try keychain.open()
        let marker = ItemQuery(.genericPassword, matching: [.service: .string("set")], limit: .all)
        let first = [
            KeychainStore.NewItem(.genericPassword, attributes: password("a", "set"), data: Data("1".utf8)),
            KeychainStore.NewItem(.genericPassword, attributes: password("b", "set"), data: Data("2".utf8)),
        ]
        #expect(try store.add(first, unlessAnyMatches: [marker]))
        #expect(try store.find(marker).count == 2)

        // A condition matches: nothing is added.
        let second = [KeychainStore.NewItem(.genericPassword, attributes: password("c", "set"))]
        #expect(try store.add(second, unlessAnyMatches: [marker]) == false)
        #expect(try store.find(marker).count == 2)

        // No condition matches but the last item collides: neither item is added.
        let other = ItemQuery(.genericPassword, matching: [.service: .string("other")])
        let colliding = [
            KeychainStore.NewItem(.genericPassword, attributes: password("x", "other")),
            KeychainStore.NewItem(.genericPassword, attributes: password("a", "set")),
        ]
        expectKeychainError(.duplicateItem) { try store.add(colliding, unlessAnyMatches: [other]) }
        expectKeychainError(.itemNotFound) { _ = try store.find(other) }

        // Another group's items are not the caller's condition; an identity is not one item.
        let stranger = try keychain.open(groups: ["app.two"])
        #expect(try stranger.add(second, unlessAnyMatches: [marker]))
        expectKeychainError(.parameter) {
            try store.add([KeychainStore.NewItem(.identity, attributes: [:])], unlessAnyMatches: [])
        }
        expectKeychainError(.parameter) {
            var returning = marker
            returning.returning = .data
            try store.add(second, unlessAnyMatches: [returning])
        }
    }
}
