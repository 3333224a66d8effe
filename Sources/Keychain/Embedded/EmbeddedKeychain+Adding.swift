import KeychainWire
import Entropy
public import Foundation

extension EmbeddedKeychain {
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
}
