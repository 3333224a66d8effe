import CryptoContract
import CryptoDispatcher
import Entropy
public import Foundation
import Synchronization

/// A keychain: items in one SQLite database, secrets encrypted at rest under a master key held outside it, seen
/// through the caller's access groups.
///
/// Every call is one transaction (a failed call changes nothing) on the store's one connection, which a mutex
/// confines to one thread at a time; several stores (in one process or several) may share a database file.
/// The API takes and returns plain values, so the store can later sit behind a service that identifies its
/// peers.
public final class KeychainStore: @unchecked Sendable {
    // @unchecked: the one non-Sendable member, the connection, is only touched while holding `lock`. (A
    // Mutex<Database> was tried: Swift 6.3's region checking refuses it, because every use hands the connection to
    // a caller's closure, which it cannot prove does not keep it.)
    /// The database file; in service mode, the service's socket.
    public let path: String
    /// The caller's access groups: adds go to the first unless told otherwise; queries see only these. In service
    /// mode, the groups the service granted.
    public let accessGroups: [String]
    /// The keychain service this store's calls go to; nil in embedded mode.
    public let service: KeychainServiceClient?
    /// The embedded keychain's state; nil in service mode, where every public call goes to the service before any
    /// of it would be needed.
    private let embedded: Embedded?
    /// Confines the connection to one thread at a time.
    let connectionLock = Mutex(())
    /// Whether a removal of deleted copies is scheduled (``scheduleRemovalOfDeletedCopies()``).
    private let removalScheduled = Mutex(false)

    /// A class: each read of a field retains one object, where a struct of them was copied whole (four retains and
    /// four releases per `keys` or `database`, measured as a tenth of a find).
    private final class Embedded: @unchecked Sendable {  // @unchecked: the database is used only under connectionLock, as before
        let masterKey: any MasterKeyHolder
        /// The master key as a keyed AES-GCM context: it seals and opens the envelopes (``SecretEnvelope``).
        let wrappingKey: SecretEnvelope.WrappingKey
        let keys: ItemKeys
        let database: Database

        init(masterKey: any MasterKeyHolder, wrappingKey: SecretEnvelope.WrappingKey, keys: ItemKeys, database: Database) {
            self.masterKey = masterKey
            self.wrappingKey = wrappingKey
            self.keys = keys
            self.database = database
        }
    }
    /// A password-locked keychain's secrets key, locked or not; nil for a keychain whose secrets are under the master
    /// key alone (and in service mode), as far as this store has seen: a password given to the empty keychain
    /// through another store (or process) is noticed at this store's next write, or at a secret it cannot open.
    private let secretsLock = Mutex<SecretsLock?>(nil)

    // !: the embedded paths below run only in embedded mode (each public call hands service mode over first).
    var masterKey: any MasterKeyHolder { embedded!.masterKey }
    var wrappingKey: SecretEnvelope.WrappingKey { embedded!.wrappingKey }
    var keys: ItemKeys { embedded!.keys }
    var database: Database { embedded!.database }
    var secrets: SecretsLock? { secretsLock.withLock { $0 } }

    /// Reads the keychain's password lock again (the caller holds the connection): whether another store gave the
    /// keychain a password since this one opened it.
    /// - Returns: whether this store now knows of a password it did not.
    func noticePasswordLock(_ database: Database) throws -> Bool {
        guard embedded != nil, secrets == nil, let record = try PasswordLockRecord.read(database) else { return false }
        let lock = SecretsLocks.lock(for: record, path: path)
        secretsLock.withLock { $0 = lock }
        return true
    }

    /// Opens (creating on first use) the keychain at `path` with `masterKey`, for a caller in `accessGroups`.
    /// - Throws: ``KeychainError`` `.parameter` for an empty group list, `.database` or `.io` when the file
    ///   cannot be opened or was written by a newer release.
    public init(path: String, masterKey: any MasterKeyHolder, accessGroups: [String]) throws {
        guard !accessGroups.isEmpty, accessGroups.allSatisfy({ !$0.isEmpty }) else {
            throw KeychainError(.parameter, "a keychain client needs at least one non-empty access group")
        }
        self.path = path
        self.accessGroups = accessGroups
        let keys = try ItemKeys(masterKey: masterKey)
        let wrappingKey = SecretEnvelope.WrappingKey.keyed(
            try masterKey.withMasterKey { try Dispatcher.shared.makeAEADKey(.aesGCM, key: $0) })
        let connection = try Self.wrap { try Database(path: path) }
        try Self.wrap { try Schema.migrate(connection) }
        try Self.checkKey(masterKey, connection)
        let secrets = try Self.wrap { try PasswordLockRecord.read(connection) }.map { SecretsLocks.lock(for: $0, path: path) }
        embedded = Embedded(masterKey: masterKey, wrappingKey: wrappingKey, keys: keys, database: connection)
        serviceKeychain = nil
        service = nil
        secretsLock.withLock { $0 = secrets }
        upgradeEnvelopesIfNeeded()
    }

    /// A keychain kept by the keychain service (`securityd`) listening at `socketPath`: every call goes to it, and
    /// it decides which access groups this process may use (from the kernel's word on who is calling and its
    /// policy), not this process.
    /// - Parameter accessGroups: the groups to act in, a subset of those the service grants (empty: all of them,
    ///   the first as the default for adds).
    /// - Throws: ``KeychainError`` `.io` when no service listens there, `.missingEntitlement` when the service
    ///   grants none of `accessGroups`.
    /// - Parameters:
    ///   - keychain: the caller's keychain of that name in the service (a file name: letters, digits, `.`, `_`,
    ///     `-`); nil for its default keychain.
    ///   - create: whether a named keychain that does not exist is made (else `.itemNotFound`).
    public init(service socketPath: String, accessGroups: [String] = [], keychain: String? = nil, create: Bool = true) throws {
        let client = try KeychainServiceClient(socketPath: socketPath)
        guard case .groups(let granted) = try client.call(.hello(requesting: accessGroups)), !granted.isEmpty else {
            throw KeychainError(.missingEntitlement, "the keychain service grants none of the access groups asked for")
        }
        if let keychain {
            guard case .lockStatus = try client.call(.openKeychain(name: keychain, create: create)) else { throw Self.unexpectedAnswer }
        }
        path = socketPath
        serviceKeychain = keychain
        self.accessGroups = granted
        service = client
        embedded = nil
    }

    /// The service's keychain this store acts on, by name; nil for the caller's default one (or an embedded store).
    public let serviceKeychain: String?

    /// What this store is, for people: the database's path, or the service's socket and keychain
    /// (`securityd:<name> at <socket>`).
    public var location: String {
        service == nil ? path : "securityd:\(serviceKeychain ?? "default") at \(path)"
    }

    /// Deletes the caller's keychain named `name` in the keychain service at `socketPath`.
    /// - Throws: ``KeychainError`` `.itemNotFound` when there is none, `.parameter` for a name that is not one.
    public static func deleteServiceKeychain(named name: String, service socketPath: String) throws {
        let client = try KeychainServiceClient(socketPath: socketPath)
        _ = try client.call(.hello(requesting: []))
        guard case .count = try client.call(.deleteKeychain(name: name)) else { throw unexpectedAnswer }
    }

    /// Opens the keychain at `path` with the master key in the key file beside it (`path` + ".key"), created
    /// with the database.
    /// - Throws: ``KeychainError`` `.masterKey` when the key file is missing while the database holds items or a
    ///   key check value (a new key would make them all unreadable: restore the key file, or delete the keychain).
    public convenience init(path: String, accessGroups: [String]) throws {
        let keyPath = path + ".key"
        if !FileManager.default.fileExists(atPath: keyPath), FileManager.default.fileExists(atPath: path),
            try Self.isInUse(path)
        {
            throw KeychainError(
                .masterKey,
                "the master key file \(keyPath) is missing, and the keychain \(path) holds items sealed under it: they cannot be recovered without that file. Restore it from a backup, or delete the keychain to start again (a new key would not open them)")
        }
        try self.init(path: path, masterKey: KeyFileMasterKey(path: keyPath), accessGroups: accessGroups)
    }

    /// The text whose HMAC under the master key is the keychain's key check value. (An array, not a Data: a Data
    /// kept in a global packs its storage pointer with enum tag bits, which LeakSanitizer then reports as lost.)
    private static let keyCheckText = Array("SecurityServices keychain master key check, version 1".utf8)

    /// Writes the key check value of `masterKey` when the database has none, else compares it (constant time).
    private static func checkKey(_ masterKey: any MasterKeyHolder, _ database: Database) throws {
        let value = try masterKey.withMasterKey { key in
            try keyCheckText.withUnsafeBytes { text in
                var mac = [UInt8](repeating: 0, count: 32)
                try mac.withUnsafeMutableBytes { try Dispatcher.shared.hmac(.sha256, key: key, input: text, output: $0) }
                return mac
            }
        }
        try wrap {
            try database.transaction {
                let rows = try database.query("SELECT value FROM keycheck WHERE id = 1")
                guard case .blob(let stored)? = rows.first?.first else {
                    _ = try database.query("INSERT INTO keycheck(id, value) VALUES (1, ?)", [.blob(value)])
                    return
                }
                guard constantTimeEquals(stored, value) else {
                    throw KeychainError(
                        .masterKey, "the master key does not open this keychain (its key check value differs)")
                }
            }
        }
    }

    /// Whether the database at `path` has been used: it holds an item or a key check value.
    private static func isInUse(_ path: String) throws -> Bool {
        let database = try wrap { try Database(path: path) }
        let tables = try wrap { try database.query("SELECT name FROM sqlite_master WHERE type = 'table'") }
        let names = Set(tables.compactMap { row -> String? in if case .text(let name)? = row.first { name } else { nil } })
        for table in ["item", "keycheck"] where names.contains(table) {
            if !(try wrap { try database.query("SELECT 1 FROM \(table) LIMIT 1") }).isEmpty { return true }
        }
        return false
    }

    // MARK: The four calls

    /// Adds an item.
    /// - Parameters:
    ///   - itemClass: the item's class (not `.identity`: its certificate and key are added separately).
    ///   - attributes: its attributes; `accessGroup`, when given, must be one of the caller's.
    ///   - data: the secret (the password, the certificate or key bytes), encrypted at rest.
    ///   - returning: what to return about the new item.
    /// - Returns: the new item with what `returning` asked for.
    /// - Throws: ``KeychainError``: `.duplicateItem`, `.missingEntitlement`, `.noSuchAttribute`, `.parameter`.
    @discardableResult
    public func add(
        _ itemClass: ItemClass, attributes: ItemAttributes, data: Data? = nil, returning: ReturnOptions = []
    ) throws -> KeychainItem {
        guard itemClass != .identity else {
            throw KeychainError(.parameter, "an identity is added as its certificate and its private key")
        }
        if let service {
            guard case .item(let item) = try service.call(.add(itemClass, attributes: attributes, data: data, returning: returning))
            else { throw Self.unexpectedAnswer }
            return item
        }
        let (added, reference) = try sealingFirst {
            let item = try prepare(itemClass, attributes: attributes, data: data)
            return try write(sealedBefore: true) { database in
                let stored = try insert(item, data: data, into: database)
                return (try result(for: stored, returning: returning), KeychainEvents.isListening ? try self.reference(for: stored) : nil)
            }
        }
        KeychainEvents.post(KeychainEvent(kind: .add, path: path, itemClass: itemClass, persistentReference: reference))
        return added
    }

    /// Adds an identity: its certificate and its private key, in one transaction (both or neither).
    /// - Parameters:
    ///   - certificate: the certificate item's attributes (its `publicKeyHash` pairs it with the key) and data.
    ///   - privateKey: the key item's attributes (its `applicationLabel` must equal that hash; `keyClass` 1) and
    ///     data.
    /// - Returns: the identity with what `returning` asked for.
    /// - Throws: ``KeychainError`` `.duplicateItem` when either half exists (nothing is added), `.parameter` when
    ///   the halves do not pair, and the errors of ``add(_:attributes:data:returning:)``.
    @discardableResult
    public func addIdentity(
        certificate: (attributes: ItemAttributes, data: Data), privateKey: (attributes: ItemAttributes, data: Data),
        returning: ReturnOptions = []
    ) throws -> KeychainItem {
        if let service {
            let request = KeychainWire.Request.addIdentity(
                certificate: certificate.attributes, certificateData: certificate.data, key: privateKey.attributes,
                keyData: privateKey.data, returning: returning)
            guard case .item(let item) = try service.call(request) else { throw Self.unexpectedAnswer }
            return item
        }
        let added = try sealingFirst {
            let certificateItem = try prepare(.certificate, attributes: certificate.attributes, data: certificate.data)
            let keyItem = try prepare(.key, attributes: privateKey.attributes, data: privateKey.data)
            guard case .data(let hash) = certificateItem.attributes[.publicKeyHash], !hash.isEmpty,
                keyItem.attributes[.applicationLabel] == .data(hash), keyItem.attributes[.keyClass] == .number(1)
            else { throw KeychainError(.parameter, "the private key's application label is not the certificate's public-key hash") }
            return try write(sealedBefore: true) { database in
                let storedCertificate = try insert(certificateItem, data: certificate.data, into: database)
                let storedKey = try insert(keyItem, data: privateKey.data, into: database)
                let identity = StoredItem(
                    id: storedCertificate.id, uuid: storedCertificate.uuid, itemClass: .identity, group: storedCertificate.group,
                    attributes: storedKey.attributes.merging(storedCertificate.attributes) { $1 }, secret: certificate.data,
                    identityKey: .init(id: storedKey.id, uuid: storedKey.uuid, secret: privateKey.data))
                return try result(for: identity, returning: returning)
            }
        }
        KeychainEvents.post(KeychainEvent(kind: .add, path: path, itemClass: .identity, persistentReference: nil))
        return added
    }

    /// An item for ``add(_:unlessAnyMatches:)``: its class (not `.identity`), attributes and secret.
    public struct NewItem: Sendable {
        public let itemClass: ItemClass
        public let attributes: ItemAttributes
        public let data: Data?

        public init(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data? = nil) {
            self.itemClass = itemClass
            self.attributes = attributes
            self.data = data
        }
    }

    /// Adds several items at once, provided no item matches any of `conditions`: the check and the adds are one
    /// write transaction (all the items or none).
    ///
    /// The transaction is `BEGIN IMMEDIATE`: it takes the database's write lock before it reads, and holds it to
    /// the commit, so of several callers — stores in this process or in others, on the same file — that race to
    /// create the same set of items, exactly one finds no match and adds, and the others wait for its commit
    /// (within the busy timeout), then see its items and add nothing. SQLite's own lock serializes them, so a
    /// crash releases it and no lock file outlives its holder.
    /// - Parameters:
    ///   - items: the items to add, in order.
    ///   - conditions: queries (in the caller's groups) that must match nothing for the items to be added.
    /// - Returns: true when the items were added; false when a condition matched (nothing was added).
    /// - Throws: ``KeychainError``: `.duplicateItem` (nothing is added), `.missingEntitlement`, `.noSuchAttribute`,
    ///   `.parameter` (an identity among `items`, or a query with return options).
    @discardableResult
    public func add(_ items: [NewItem], unlessAnyMatches conditions: [ItemQuery]) throws -> Bool {
        if let service {
            guard case .added(let added) = try service.call(.addItems(items, unlessAnyMatches: conditions)) else {
                throw Self.unexpectedAnswer
            }
            return added
        }
        guard !items.contains(where: { $0.itemClass == .identity }) else {
            throw KeychainError(.parameter, "an identity is added as its certificate and its private key")
        }
        let plans = try conditions.map { query in
            guard query.returning.isEmpty else { throw KeychainError(.parameter, "a condition returns nothing") }
            var one = query
            one.limit = .one
            return try plan(one)
        }
        let added = try sealingFirst {
            let prepared = try items.map { try prepare($0.itemClass, attributes: $0.attributes, data: $0.data) }
            return try write(sealedBefore: true) { database in
                for plan in plans where try !self.items(matching: plan, in: database, needSecret: false).isEmpty {
                    return false
                }
                for (item, new) in zip(prepared, items) { _ = try insert(item, data: new.data, into: database) }
                return true
            }
        }
        if added {
            for item in items { KeychainEvents.post(KeychainEvent(kind: .add, path: path, itemClass: item.itemClass, persistentReference: nil)) }
        }
        return added
    }

    /// An item ready to insert: validated, defaults filled in, sealed.
    private struct PreparedItem {
        let itemClass: ItemClass
        let attributes: ItemAttributes
        let group: String
        let uuid: [UInt8]
        let row: SealedRow
    }

    private func prepare(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data?) throws -> PreparedItem {
        let schema = ItemSchema.of(itemClass)
        var attributes = try validate(attributes, for: schema)
        try applyAccessControl(&attributes)
        let group = try group(named: attributes[.accessGroup])
        attributes[.accessGroup] = .string(group)
        if case .bool(true) = attributes[.synchronizable] {} else { attributes[.synchronizable] = .bool(false) }
        if attributes[.accessible] == nil { attributes[.accessible] = .string(Accessibility.whenUnlocked.rawValue) }
        let now = AttributeValue.date(Date())
        if attributes[.creationDate] == nil { attributes[.creationDate] = now }
        if attributes[.modificationDate] == nil { attributes[.modificationDate] = now }
        for key in schema.uniqueness where attributes[key] == nil {
            if let kind = schema.attributes[key], let value = ItemSchema.defaultValue(kind) { attributes[key] = value }
        }
        let uuid = try EntropySource.bytes(count: 16)
        let row = try seal(itemClass, uuid: uuid, attributes: attributes, secret: data.map { Array($0) })
        return PreparedItem(itemClass: itemClass, attributes: attributes, group: group, uuid: uuid, row: row)
    }

    private func insert(_ item: PreparedItem, data: Data?, into database: Database) throws -> StoredItem {
        do {
            try database.query(SealedRow.insert, item.row.insertValues)
        } catch let error as SQLiteError where error.isUniqueViolation {
            throw KeychainError(.duplicateItem, "an item with the same unique attributes exists")
        }
        return StoredItem(
            id: database.lastInsertRowID, uuid: item.uuid, itemClass: item.itemClass, group: item.group,
            attributes: item.attributes, secret: data)
    }

    /// The items matching `query`, at most its limit, each with what `query.returning` asks for.
    /// - Throws: ``KeychainError``: `.itemNotFound` when nothing matches, `.missingEntitlement` for a group the
    ///   caller lacks, `.noSuchAttribute`, `.parameter`, `.decode` for a secret that does not authenticate.
    public func find(_ query: ItemQuery) throws -> [KeychainItem] {
        if let service {
            guard case .items(let items) = try service.call(.find(query)) else { throw Self.unexpectedAnswer }
            return items
        }
        let plan = try plan(query)
        if let lookup = UniqueLookup(plan, returning: query.returning) {
            guard let item = try readStatement({ try self.find(lookup, in: $0) }) else {
                throw KeychainError(.itemNotFound, "no item matches the query")
            }
            return [item]
        }
        // An identity is a join over several statements: those need the explicit transaction.
        let body = { (database: Database) throws -> [KeychainItem] in
            let items = try self.items(matching: plan, in: database, needSecret: query.returning.contains(.data) || query.returning.contains(.reference))
            guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            return try items.map { try self.result(for: $0, returning: query.returning) }
        }
        return plan.itemClass == .identity ? try read(body) : try readStatement(body)
    }

    /// Changes every item matching `query`: the attributes in `attributes` and, when given, the secret.
    /// - Returns: how many items changed.
    /// - Throws: ``KeychainError``: `.itemNotFound` when nothing matches, `.duplicateItem` when a changed item
    ///   would collide with another (nothing is changed then), `.parameter` for a case-insensitive query, return
    ///   options, or a class change; `.missingEntitlement` for a group the caller lacks.
    @discardableResult
    public func update(_ query: ItemQuery, attributes changes: ItemAttributes, data: Data? = nil) throws -> Int {
        if let service {
            guard case .count(let count) = try service.call(.update(query, attributes: changes, data: data)) else {
                throw Self.unexpectedAnswer
            }
            return count
        }
        guard !query.caseInsensitive else {
            throw KeychainError(.parameter, "kSecMatchCaseInsensitive is not supported by update")
        }
        guard query.returning.isEmpty else { throw KeychainError(.parameter, "an update returns nothing") }
        guard query.itemClass != .identity else {
            throw KeychainError(.parameter, "update an identity's certificate or key, not the identity")
        }
        var all = query
        all.limit = .all
        let plan = try plan(all)
        let schema = ItemSchema.of(plan.itemClass)
        var changes = try validate(changes, for: schema)
        try applyAccessControl(&changes)
        if let group = changes[.accessGroup] { _ = try self.group(named: group) }
        let newAccess = try changes[.access].map { value in
            guard case .data(let list) = value else { throw KeychainError(.parameter, "kSecAttrAccess is not an access control list") }
            return try ItemAccess(encoded: list)
        }
        let (count, reference) = try write { database in
            let items = try self.items(matching: plan, in: database, needSecret: false, needAttributes: true)
            guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            let reference = KeychainEvents.isListening && items.count == 1 ? try self.reference(for: items[0]) : nil
            for item in items {
                try require(.encrypt, by: item.access)
                if newAccess != nil { try require(.changeACL, by: item.access) }
            }
            for item in items {
                var attributes = item.attributes.merging(changes) { $1 }
                if changes[.modificationDate] == nil { attributes[.modificationDate] = .date(Date()) }
                // A list given to an item without one changes what its secret is bound to: the whole row is resealed.
                if !changesIdentity(item, changes) && (newAccess == nil || item.access != nil) {
                    // Same row identity: only the attribute blob and, when given, the secret and the access control
                    // list are rewritten, so the indexes are not touched and the old secret is not decrypted.
                    let sealed = try sealAttributes(attributes, item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid)
                    if let newAccess {
                        let acl = try sealAccess(newAccess, item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid)
                        try database.query("UPDATE item SET acl = ?1 WHERE id = ?2", [.blob(acl), .integer(item.id)])
                    }
                    if let data {
                        let secret = try sealSecret(
                            Array(data), item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid, hasAccess: item.access != nil)
                        try database.query("UPDATE item SET attributes = ?1, secret = ?2 WHERE id = ?3", [.blob(sealed), .blob(secret), .integer(item.id)])
                    } else {
                        try database.query("UPDATE item SET attributes = ?1 WHERE id = ?2", [.blob(sealed), .integer(item.id)])
                    }
                    continue
                }
                var secret = data.map { Array($0) }
                if secret == nil, let sealed = item.sealedSecret {
                    secret = Array(
                        try openSecret(sealed, item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid, hasAccess: item.access != nil))
                }
                defer { secret?.withUnsafeMutableBytes { secureWipe($0) } }
                let row = try seal(item.itemClass, uuid: item.uuid, attributes: attributes, secret: secret)
                do {
                    try database.query(
                        "UPDATE item SET agrp = ?3, sync = ?4, uniq = ?5, acct = ?6, acct_ci = ?7, svce = ?8, svce_ci = ?9, srvr = ?10, srvr_ci = ?11, labl = ?12, labl_ci = ?13, atag = ?14, link = ?15, kcls = ?16, attributes = ?17, secret = ?18, acl = ?19 WHERE id = ?20 AND class = ?2 AND uuid = ?1",
                        row.insertValues + [.integer(item.id)])
                } catch let error as SQLiteError where error.isUniqueViolation {
                    throw KeychainError(.duplicateItem, "the update would make two items with the same unique attributes")
                }
            }
            return (items.count, reference)
        }
        scheduleRemovalOfDeletedCopies()
        KeychainEvents.post(KeychainEvent(kind: .update, path: path, itemClass: plan.itemClass, persistentReference: reference))
        return count
    }

    /// Deletes every item matching `query` (an identity: its certificate and its private key).
    /// - Returns: how many items (identities count once) were deleted.
    /// - Throws: ``KeychainError`` `.itemNotFound` when nothing matches, `.parameter` for return options or
    ///   a case-insensitive query.
    @discardableResult
    public func delete(_ query: ItemQuery) throws -> Int {
        if let service {
            guard case .count(let count) = try service.call(.delete(query)) else { throw Self.unexpectedAnswer }
            return count
        }
        guard !query.caseInsensitive else {
            throw KeychainError(.parameter, "kSecMatchCaseInsensitive is not supported by delete")
        }
        guard query.returning.isEmpty else { throw KeychainError(.parameter, "a delete returns nothing") }
        var all = query
        all.limit = .all
        let plan = try plan(all)
        let (count, reference) = try write { database in
            let items = try self.items(matching: plan, in: database, needSecret: false)
            guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            let reference = KeychainEvents.isListening && items.count == 1 ? try self.reference(for: items[0]) : nil
            for item in items { try require(.delete, by: item.access) }
            for item in items {
                try database.query("DELETE FROM item WHERE id = ?1", [.integer(item.id)])
                if let key = item.identityKey { try database.query("DELETE FROM item WHERE id = ?1", [.integer(key.id)]) }
            }
            return (items.count, reference)
        }
        scheduleRemovalOfDeletedCopies()
        KeychainEvents.post(KeychainEvent(kind: .delete, path: path, itemClass: plan.itemClass, persistentReference: reference))
        return count
    }

    /// Removes the sealed copies of deleted and replaced items that the database and its WAL still hold: checkpoints
    /// the WAL into the database (whose freed pages `secure_delete` zeroes) and truncates it to zero bytes. A store
    /// does it by itself shortly after every delete and update (``scheduleRemovalOfDeletedCopies()``), and SQLite
    /// when the last connection to the file closes; call it to have it done now.
    /// - Returns: `false` when another connection was reading, so nothing could be removed now.
    @discardableResult
    public func removeDeletedCopies() -> Bool {
        // The service's keychains are its to maintain.
        guard embedded != nil else { return false }
        return connectionLock.withLock { _ in database.checkpointTruncatingWAL() }
    }

    /// How soon after a delete or an update the copies it left are removed, and how often that is tried again while
    /// another connection reads (up to ``removalAttempts`` times; then at the next delete or update, or at close).
    static let removalDelay = DispatchTimeInterval.milliseconds(100)
    static let removalAttempts = 50

    /// Removes the copies a delete or update just left, on a utility thread shortly after the call returns (not in it:
    /// a checkpoint's writes and syncs would multiply a delete's cost), coalescing the calls made meanwhile.
    func scheduleRemovalOfDeletedCopies() {
        guard embedded != nil, claimRemoval() else { return }
        removeDeletedCopiesLater(attempt: 1)
    }

    /// Marks a removal scheduled; false when one already is.
    private func claimRemoval() -> Bool {
        removalScheduled.withLock { scheduled in
            defer { scheduled = true }
            return !scheduled
        }
    }

    /// The store is held until the removal has run (at most ``removalAttempts`` delays): not weakly, because a weak
    /// reference outliving its store is a side table LeakSanitizer reports as lost (the fuzz lane).
    private func removeDeletedCopiesLater(attempt: Int) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.removalDelay) { [self] in
            // Cleared first: a delete committed during the checkpoint schedules one of its own.
            removalScheduled.withLock { $0 = false }
            if !removeDeletedCopies(), attempt < Self.removalAttempts, claimRemoval() {
                removeDeletedCopiesLater(attempt: attempt + 1)
            }
        }
    }

    /// A private-key operation done by the keychain service with the key of the key or identity item
    /// `reference` names, in the caller's groups: the key does not leave the service.
    /// - Parameter algorithm: Apple's `SecKeyAlgorithm` string.
    /// - Returns: the signature or the plaintext.
    /// - Throws: ``KeychainError`` `.unimplemented` for an embedded keychain (its caller holds the key and does the
    ///   operation itself); `.itemNotFound` when no key or identity of the caller's groups has the reference;
    ///   `.parameter` for a public key, an algorithm the key does not run, or input it does not take.
    public func keyOperation(_ kind: KeychainWire.KeyOperationKind, reference: Data, algorithm: String, input: Data) throws -> Data {
        guard let service else {
            throw KeychainError(.unimplemented, "key operations are the keychain service's; an embedded keychain's caller holds the key")
        }
        let request = KeychainWire.Request.keyOperation(kind, reference: reference, algorithm: algorithm, input: input)
        guard case .bytes(let output) = try service.call(request) else { throw Self.unexpectedAnswer }
        return output
    }

    /// A private key generated and kept by the keychain service (the key never exists in this process).
    /// - Parameters:
    ///   - keyType: Apple's `kSecAttrKeyType` code, 42 (RSA, 1024–4096 bits in whole bytes) or 73 (EC, 256, 384
    ///     or 521 bits).
    ///   - attributes: added to those the key derives (application tag, label, access group, …).
    /// - Returns: the key item as the service seals it (``KeychainWire/heldKeyTokenID``), with what `returning` asks.
    /// - Throws: ``KeychainError`` `.unimplemented` for an embedded keychain; `.parameter` for another type or
    ///   size; the store's errors (`duplicateItem`, `missingEntitlement`, …).
    public func generateKey(keyType: Int64, bits: Int, attributes: ItemAttributes, returning: ReturnOptions) throws -> KeychainItem {
        guard let service else {
            throw KeychainError(.unimplemented, "key generation in the keychain is the keychain service's; an embedded keychain stores keys made by its caller")
        }
        let request = KeychainWire.Request.generateKey(keyType: keyType, bits: bits, attributes: attributes, returning: returning)
        guard case .item(let item) = try service.call(request) else { throw Self.unexpectedAnswer }
        return item
    }

    /// An answer of the wrong kind for its request.
    static let unexpectedAnswer = KeychainError(.parameter, "the keychain service answered with something else")

    /// For the calls only an embedded keychain offers.
    func requireEmbedded(_ what: String) throws {
        guard embedded != nil else {
            throw KeychainError(.unimplemented, "\(what) is not offered through the keychain service")
        }
    }

    // MARK: Transactions

    static func wrap<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw KeychainError(storageCode(error), error.description, sqliteCode: error.code)
        } catch let error as POSIXError {
            throw KeychainError(.io, "cannot open the keychain database", errno: error.code.rawValue)
        }
    }

    /// What a SQLite failure means to a caller: a full disk, a read-only file, a damaged database (never read as
    /// empty), an I/O error, else the database's own failure.
    static func storageCode(_ error: SQLiteError) -> KeychainError.Code {
        switch error.primaryCode {
        case SQLiteError.full: .diskFull
        case SQLiteError.readOnly: .readOnly
        case SQLiteError.corrupt, SQLiteError.notADatabase: .decode
        case SQLiteError.ioError, SQLiteError.cantOpen: .io
        default: .database
        }
    }

    /// A write transaction. A locked keychain takes none: its secrets could not be sealed or resealed, and Apple's
    /// keychain asks for the password before any change.
    /// - Parameter sealedBefore: whether the caller sealed its rows before the transaction: if the keychain got a
    ///   password since this store last looked, they are sealed under the wrong key, and ``PasswordLockAppeared``
    ///   has ``sealingFirst(_:)`` seal them again.
    func write<R: Sendable>(sealedBefore: Bool = false, _ body: (Database) throws -> R) throws -> R {
        if let secrets { _ = try secrets.key() }
        return try connectionLock.withLock { _ in
            try Self.wrap {
                try database.transaction(writing: true) {
                    // Under the write lock: a password given meanwhile through another store is seen before this
                    // transaction seals a secret under the master key (or stores one sealed so).
                    if secrets == nil, try noticePasswordLock(database) {
                        if sealedBefore { throw PasswordLockAppeared() }
                        _ = try secrets?.key()
                    }
                    return try body(database)
                }
            }
        }
    }

    /// Thrown by ``write(sealedBefore:_:)`` when rows sealed before it are under the wrong key.
    struct PasswordLockAppeared: Error {}

    /// Runs `body` (which seals rows, then writes them) again if the keychain got a password in between.
    func sealingFirst<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch is PasswordLockAppeared {
            return try body()
        }
    }

    func read<R: Sendable>(_ body: (Database) throws -> R) throws -> R {
        try connectionLock.withLock { _ in try Self.wrap { try database.transaction(writing: false) { try body(database) } } }
    }

    /// A read that is one SELECT: SQLite runs a lone statement as its own transaction (one snapshot), so the
    /// explicit BEGIN/COMMIT would only add two round trips through the library.
    func readStatement<R: Sendable>(_ body: (Database) throws -> R) throws -> R {
        try connectionLock.withLock { _ in try Self.wrap { try body(database) } }
    }

    // MARK: Validation

    /// Checks every attribute against the class's schema and coerces it to the attribute's type.
    func validate(_ attributes: ItemAttributes, for schema: ItemSchema) throws -> ItemAttributes {
        var seen = SeenKeys()
        return try validate(attributes, for: schema, noting: &seen)
    }

    /// What the query planner asks of a query's attributes, learned in the validation's one pass over them: each
    /// lookup in the dictionary hashes its key (SipHash), and the planner's seven lookups for these were a twentieth
    /// of a find.
    struct SeenKeys {
        /// `kSecAttrAccess` or `kSecAttrAccessControl`.
        var access = false
        var synchronizable = false
        var accessGroup = false
        /// How many of the class's uniqueness attributes.
        var uniqueness = 0
    }

    func validate(_ attributes: ItemAttributes, for schema: ItemSchema, noting seen: inout SeenKeys) throws -> ItemAttributes {
        // The caller's dictionary, shared until a value must change type (most never do).
        var valid = attributes
        for (key, value) in attributes {
            switch key {
            case .access, .accessControl: seen.access = true
            case .synchronizable: seen.synchronizable = true
            case .accessGroup: seen.accessGroup = true
            default: if schema.uniqueness.contains(key) { seen.uniqueness += 1 }
            }
            guard let kind = schema.attributes[key] else {
                if ItemSchema.isKnown(key) {
                    throw KeychainError(.noSuchAttribute, "the \(schema.itemClass.rawValue) class has no attribute \(key)")
                }
                throw KeychainError(.parameter, "unknown attribute \(key)")
            }
            guard let coerced = ItemSchema.coerce(value, to: kind) else {
                throw KeychainError(.parameter, "attribute \(key) has a value of the wrong type")
            }
            if key == .accessible, case .string(let code) = coerced, Accessibility(rawValue: code) == nil {
                throw KeychainError(.parameter, "unknown kSecAttrAccessible value")
            }
            if key == .accessGroup, case .string(let group) = coerced, group.isEmpty {
                throw KeychainError(.parameter, "an access group cannot be empty")
            }
            if !ItemSchema.isOfKind(value, kind) { valid[key] = coerced }
        }
        return valid
    }

    /// Applies `kSecAttrAccessControl` among `attributes`: checks it, sets the accessibility it carries (giving a
    /// different `kSecAttrAccessible` beside it is `.parameter`), and refuses a constraint that asks for the user
    /// where the keychain has no password to stand for the user (`.authFailed`).
    func applyAccessControl(_ attributes: inout ItemAttributes) throws {
        guard let value = attributes[.accessControl] else { return }
        guard case .data(let data) = value else { throw KeychainError(.parameter, "kSecAttrAccessControl is not an access control") }
        let control = try ItemAccessControl(encoded: data)
        let protection = AttributeValue.string(control.protection.rawValue)
        if let given = attributes[.accessible], given != protection {
            throw KeychainError(.parameter, "kSecAttrAccessible and kSecAttrAccessControl name different accessibilities")
        }
        attributes[.accessible] = protection
        if control.requiresUser, !(try lockStatus().passwordLocked) {
            throw KeychainError(
                .authFailed, "the access control asks for the user, which only a keychain with a password can stand for here")
        }
    }

    /// The group an item goes to: the named one if the caller is in it, else the caller's first.
    private func group(named value: AttributeValue?) throws -> String {
        guard case .string(let group) = value else { return accessGroups[0] }
        guard accessGroups.contains(group) else {
            throw KeychainError(.missingEntitlement, "the caller is not in the access group it named")
        }
        return group
    }
}

extension ItemSchema {
    private static let known: Set<AttributeKey> = Set(ItemClass.allCases.flatMap { of($0).attributes.keys })
    static func isKnown(_ key: AttributeKey) -> Bool { known.contains(key) }
}
