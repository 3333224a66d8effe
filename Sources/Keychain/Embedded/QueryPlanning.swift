import CryptoContract
import CryptoDispatcher
import Foundation

/// What a statement's SQL text depends on, and nothing else: the statement cache's key. Equal shapes have equal
/// text, so the text is built and parsed once per shape. (It replaced an integer packed by hand, whose fields were
/// bounded by convention: a 6-bit count of uniqueness values that only the equal 8-bit group count kept from
/// colliding, and plans over 255 groups left uncached.)
///
/// Compact (16 bytes, two bits per indexed attribute): the find path hashes it on every call.
enum StatementShape: Hashable, Sendable {
    /// `indexed`: two bits per entry of ``EmbeddedKeychain/indexedAttributes`` (0 not compared, 1 exact, 2 folded);
    /// the counts are those of the uniqueness values and the groups.
    case select(
        itemClass: ItemClass, attributes: Bool, uniqueValues: Int32, indexed: UInt16, uuid: Bool,
        synchronizable: SynchronizableMatch, groups: Int32)
    case uniqueLookup(sync: Bool)
}

/// How a query is answered: the SQL conditions that use the indexes, and what is matched after decryption.
struct QueryPlan {
    let itemClass: ItemClass
    let groups: [String]
    let synchronizable: SynchronizableMatch
    /// (column, keyed-HMAC value) pairs compared in SQL.
    let indexed: [(column: String, value: [UInt8])]
    /// Attributes compared after decrypting each candidate's attributes.
    let residual: ItemAttributes
    /// The attributes `indexed` compares in SQL, compared again after decryption: the index columns (like
    /// `sync`, `link` and `kcls`) are not bound to the sealed row, so a row whose column was edited (another row's
    /// `svce` copied onto it) must not answer a query its sealed attributes do not match.
    var verified: ItemAttributes = [:]
    let caseInsensitive: Bool
    let limit: Int?
    /// From a persistent reference: the item (for an identity, its certificate and its key).
    let uuid: [UInt8]?
    let keyUUID: [UInt8]?
    let needsAttributes: Bool
    /// When the query names every uniqueness attribute of the class: the uniqueness value per group, looked up
    /// through UNIQUE(class, uniq) (one keyed HMAC per group instead of one per attribute).
    var uniq: [[UInt8]]? = nil
}

extension EmbeddedKeychain {
    // MARK: Planning and running queries

    func plan(_ query: ItemQuery) throws -> QueryPlan {
        var itemClass = query.itemClass
        var uuid: [UInt8]?
        var keyUUID: [UInt8]?
        if let reference = query.persistentReference {
            let parsed = try parseReference(reference)
            guard itemClass == nil || itemClass == parsed.itemClass else {
                throw KeychainError(.itemNotFound, "the persistent reference names an item of another class")
            }
            (itemClass, uuid, keyUUID) = (parsed.itemClass, parsed.uuid, parsed.keyUUID)
        }
        guard let itemClass else { throw KeychainError(.parameter, "a query needs a class (kSecClass)") }
        if case .count(let count) = query.limit, count < 1 {
            throw KeychainError(.parameter, "a match limit is at least 1")
        }
        let schema = ItemSchema.of(itemClass)
        var seen = SeenKeys()
        var matching = try validate(query.matching, for: schema, noting: &seen)
        guard !seen.access else {
            throw KeychainError(.parameter, "kSecAttrAccess and kSecAttrAccessControl cannot be searched for")
        }
        var synchronizable = query.synchronizable
        if seen.synchronizable, case .bool(let flag) = matching.removeValue(forKey: .synchronizable) {
            synchronizable = flag ? .yes : .no
        }
        var groups = accessGroups
        if seen.accessGroup, case .string(let group) = matching.removeValue(forKey: .accessGroup) {
            guard accessGroups.contains(group) else {
                throw KeychainError(.missingEntitlement, "the caller is not in the access group it named")
            }
            groups = [group]
        }
        var uniq: [[UInt8]]?
        // Every uniqueness attribute is there (`seen` counted them; they are never the keys removed above).
        if itemClass != .identity, !query.caseInsensitive, uuid == nil, !schema.uniqueness.isEmpty,
            !(schema.syncIsUnique && synchronizable == .any), seen.uniqueness == schema.uniqueness.count
        {
            // Every uniqueness attribute is there: when nothing else is, the query is its uniqueness value.
            let onlyUnique = matching.count == schema.uniqueness.count
            let unique = onlyUnique ? matching : matching.filter { schema.uniqueness.contains($0.key) }
            uniq = try groups.map { group in
                try keys.uniqueness(itemClass, group: group, sync: synchronizable == .yes, attributes: unique)
            }
            if onlyUnique { matching = [:] } else { for key in schema.uniqueness { matching[key] = nil } }
        }
        var indexed: [(column: String, value: [UInt8])] = []
        var verified: ItemAttributes = [:]
        if itemClass != .identity, !matching.isEmpty {
            for key in Self.indexedAttributes {
                guard let value = matching[key] else { continue }
                matching[key] = nil
                verified[key] = value
                let folded: Bool
                if case .string = value { folded = query.caseInsensitive } else { folded = false }
                indexed.append((folded ? key.rawValue + "_ci" : key.rawValue, try keys.indexValue(key, value, folded: folded)))
            }
        }
        // What SQL selects by a clear column is checked again against the sealed attributes: the indexed
        // attributes, and the synchronizable state where no uniqueness value that includes it selects the row.
        let needsAttributes = !matching.isEmpty || !verified.isEmpty
            || (synchronizable != .any && (uniq == nil || !schema.syncIsUnique))
            || !query.returning.isDisjoint(with: [.attributes, .reference])
        return QueryPlan(
            itemClass: itemClass, groups: groups, synchronizable: synchronizable, indexed: indexed, residual: matching,
            verified: verified, caseInsensitive: query.caseInsensitive, limit: query.limit.maximum, uuid: uuid,
            keyUUID: keyUUID, needsAttributes: needsAttributes, uniq: uniq)
    }

    /// The items `plan` selects; with `proof` (given for reading secrets or changing items), only those it admits
    /// (``UserProof/admits(_:)``), each read with its attributes so that its access control is known.
    func items(
        matching plan: QueryPlan, in database: Database, needSecret: Bool, needAttributes: Bool = false, proof: UserProof? = nil
    ) throws -> [StoredItem] {
        if plan.itemClass == .identity { return try identities(matching: plan, in: database, needSecret: needSecret, proof: proof) }
        let needAttributes = needAttributes || plan.needsAttributes || proof != nil
        let (shape, sql, parameters) = selectStatement(plan, attributes: needAttributes)
        let statement = try database.statement(key: shape, sql)
        defer { statement.reset() }
        try statement.bind(parameters)
        var items: [StoredItem] = []
        while try statement.step() {
            let item = try open(statement, needAttributes: needAttributes, needSecret: needSecret)
            guard matches(item.attributes, plan) else { continue }
            // Only items the query matches: a row passed over must not refuse the search.
            if needSecret, item.itemClass != .certificate { try require(.decrypt, by: item.access) }
            if let proof, !(try proof.admits(item, in: database)) { continue }
            items.append(item)
            if let limit = plan.limit, items.count >= limit { break }
        }
        return items
    }

    /// The SELECT for a plan: the uniqueness value or the indexed columns, the reference, the synchronizable
    /// state and the groups in SQL; a LIMIT (bound, -1 for none) only when nothing is left to match after
    /// decryption. The text depends only on the plan's shape, summed up in `shape` (the statement cache key).
    func selectStatement(_ plan: QueryPlan, attributes: Bool = true) -> (shape: StatementShape, sql: () -> String, parameters: [SQLiteValue]) {
        // Parameters in a fixed order: class, uniqueness values, indexed columns (in indexedAttributes order),
        // uuid, groups, limit. The text is only built (by `sql`) when the shape is new to the statement cache.
        var parameters: [SQLiteValue] = []
        parameters.reserveCapacity(3 + (plan.uniq?.count ?? 0) + plan.indexed.count + plan.groups.count)
        parameters.append(.text(plan.itemClass.rawValue))
        for value in plan.uniq ?? [] { parameters.append(.blob(value)) }
        var indexed: UInt16 = 0
        for (position, key) in Self.indexedAttributes.enumerated() {
            for (column, value) in plan.indexed where column == key.rawValue || column == key.rawValue + "_ci" {
                indexed |= (column == key.rawValue ? 1 : 2) << (2 * position)
                parameters.append(.blob(value))
            }
        }
        if let uuid = plan.uuid { parameters.append(.blob(uuid)) }
        for group in plan.groups { parameters.append(.text(group)) }
        let shape = StatementShape.select(
            itemClass: plan.itemClass, attributes: attributes, uniqueValues: Int32(clamping: plan.uniq?.count ?? 0),
            indexed: indexed, uuid: plan.uuid != nil, synchronizable: plan.synchronizable,
            groups: Int32(clamping: plan.groups.count))
        parameters.append(.integer(Int64(plan.residual.isEmpty ? plan.limit ?? -1 : -1)))
        let sql = {
            var next = 1
            func mark() -> String {
                next += 1
                return "?\(next)"
            }
            var conditions = ["class = ?1"]
            if let uniq = plan.uniq { conditions.append("uniq IN (" + uniq.map { _ in mark() }.joined(separator: ", ") + ")") }
            for key in Self.indexedAttributes {
                for (column, _) in plan.indexed where column == key.rawValue || column == key.rawValue + "_ci" {
                    conditions.append("\(column) = " + mark())
                }
            }
            if plan.uuid != nil { conditions.append("uuid = " + mark()) }
            switch plan.synchronizable {
            case .no: conditions.append("sync = 0")
            case .yes: conditions.append("sync = 1")
            case .any: break
            }
            conditions.append("agrp IN (" + plan.groups.map { _ in mark() }.joined(separator: ", ") + ")")
            let columns = attributes ? Self.selectColumns : Self.selectColumnsWithoutAttributes
            return "SELECT \(columns) FROM item WHERE " + conditions.joined(separator: " AND ") + " ORDER BY id LIMIT " + mark()
        }
        return (shape, sql, parameters)
    }

    /// The commonest search, a password by service and account: every uniqueness attribute of the class in one
    /// access group, only the data asked for. At most one row matches (UNIQUE(class, uniq)), and the query
    /// already knows its class, group and uniqueness value (the value is a keyed HMAC over the group, and over
    /// the synchronizable state where that is part of uniqueness), so only the row's id, UUID and secret are
    /// read, the secret decrypted straight from SQLite's buffer. Where a secret may ask for the user (a
    /// password-locked keychain), the row's `user` column says whether this one does, which its secret binds.
    struct UniqueLookup {
        let itemClass: ItemClass
        let group: String
        let uniq: [UInt8]
        /// The synchronizable state to require, when it is not part of the uniqueness value.
        let sync: Bool?
        let data: Bool

        init?(_ plan: QueryPlan, returning: ReturnOptions) {
            guard let values = plan.uniq, values.count == 1, plan.groups.count == 1, plan.indexed.isEmpty,
                plan.residual.isEmpty, plan.uuid == nil, !plan.needsAttributes, returning.isSubset(of: .data)
            else { return nil }
            itemClass = plan.itemClass
            group = plan.groups[0]
            uniq = values[0]
            data = returning.contains(.data)
            switch (ItemSchema.of(plan.itemClass).syncIsUnique, plan.synchronizable) {
            case (true, _), (false, .any): sync = nil
            case (false, .yes): sync = true
            case (false, .no): sync = false
            }
        }

        /// The statement cache key.
        var key: StatementShape { .uniqueLookup(sync: sync != nil) }
        var sql: String {
            "SELECT id, uuid, secret, acl, user FROM item WHERE class = ?1 AND uniq = ?2" + (sync == nil ? "" : " AND sync = ?3")
        }
        var parameters: [SQLiteValue] {
            // One array, sized once (a `+` of two made three).
            guard let sync else { return [.text(itemClass.rawValue), .blob(uniq)] }
            return [.text(itemClass.rawValue), .blob(uniq), .integer(sync ? 1 : 0)]
        }
    }

    /// What a ``UniqueLookup`` found.
    enum LookupOutcome {
        case found(KeychainItem)
        case notFound
        /// The item's secret asks for the user, or its row is too old to say: the full search, which reads the
        /// attributes and checks the proof, must return it.
        case asksForUser
    }

    /// Runs `lookup`; `proving` says whether the request carries a ``UserProof`` (secrets that ask for the user are
    /// left to the full search then).
    func find(_ lookup: UniqueLookup, in database: Database, proving: Bool) throws -> LookupOutcome {
        let statement = try database.statement(key: lookup.key) { lookup.sql }
        defer { statement.reset() }
        try statement.bind(lookup.parameters)
        guard try statement.step() else { return .notFound }
        var data: Data?
        if lookup.data {
            guard let uuid = statement.blob(1) else { throw KeychainError(.decode, "a stored item is malformed") }
            let acl = statement.blob(3)
            let binding = SecretBinding(accessList: acl != nil, user: statement.integer(4) != 0)
            if proving {
                let bindsUser = statement.withBlob(2) { blob in blob.map { ($0.first ?? 0) >= SecretBinding.userBound } ?? true }
                if binding.user || !bindsUser { return .asksForUser }
            }
            if let acl {
                let access = try openAccess(acl, lookup.itemClass, group: lookup.group, uniq: lookup.uniq, uuid: uuid)
                try require(.decrypt, by: access)
            }
            data = try statement.withBlob(2) { blob in
                try blob.map {
                    try openSecret($0, lookup.itemClass, group: lookup.group, uniq: lookup.uniq, uuid: uuid, binding: binding)
                }
            } ?? Data()
        }
        return .found(KeychainItem(itemClass: lookup.itemClass, attributes: nil, data: data, persistentReference: nil, identityKeyData: nil))
    }

    /// SQLite's plan for the SELECT that ``find(_:)`` runs for the query (`EXPLAIN QUERY PLAN`), one line per
    /// step: the proof that a search uses an index.
    public func queryPlan(_ query: ItemQuery) throws -> [String] {
        let plan = try plan(query)
        let (sql, parameters): (String, [SQLiteValue])
        if let lookup = UniqueLookup(plan, returning: query.returning) {
            (sql, parameters) = (lookup.sql, lookup.parameters)
        } else {
            let select = selectStatement(plan)
            (sql, parameters) = (select.sql(), select.parameters)
        }
        return try read { database in
            try database.query("EXPLAIN QUERY PLAN " + sql, parameters).compactMap { row in
                if case .text(let detail) = row.last { return detail }
                return nil
            }
        }
    }

    /// Identities: each certificate paired with the private key (key class 1) whose application label is the
    /// certificate's public-key hash, in the caller's groups.
    private func identities(matching plan: QueryPlan, in database: Database, needSecret: Bool, proof: UserProof?) throws -> [StoredItem] {
        let certificatePlan = QueryPlan(
            itemClass: .certificate, groups: plan.groups, synchronizable: plan.synchronizable, indexed: [], residual: [:],
            caseInsensitive: plan.caseInsensitive, limit: nil, uuid: plan.uuid, keyUUID: nil, needsAttributes: true)
        var identities: [StoredItem] = []
        for certificate in try items(matching: certificatePlan, in: database, needSecret: needSecret) {
            guard case .data(let hash) = certificate.attributes[.publicKeyHash], !hash.isEmpty else { continue }
            var sql = "SELECT \(Self.selectColumns) FROM item WHERE class = 'keys' AND kcls = 1 AND link = ?1"
            var parameters: [SQLiteValue] = [.blob(Array(hash))]
            if let keyUUID = plan.keyUUID {
                sql += " AND uuid = ?2"
                parameters.append(.blob(keyUUID))
            }
            sql += " AND agrp IN (" + plan.groups.map { group in
                parameters.append(.text(group))
                return "?\(parameters.count)"
            }.joined(separator: ", ") + ") ORDER BY id LIMIT 1"
            guard let row = try database.query(sql, parameters).first else { continue }
            let key = try open(row, needAttributes: true, needSecret: needSecret)
            // `kcls` and `link` are clear columns: the pairing holds only if the key's sealed attributes say so.
            guard key.attributes[.keyClass] == .number(1), key.attributes[.applicationLabel] == .data(hash) else { continue }
            let identity = StoredItem(
                id: certificate.id, uuid: certificate.uuid, itemClass: .identity, group: certificate.group,
                attributes: key.attributes.merging(certificate.attributes) { $1 }, secret: certificate.secret,
                identityKey: .init(id: key.id, uuid: key.uuid, secret: key.secret), access: key.access)
            guard matches(identity.attributes, plan) else { continue }
            if needSecret { try require(.decrypt, by: key.access) }
            if let proof, !(try proof.admits(key, in: database)) { continue }
            identities.append(identity)
            if let limit = plan.limit, identities.count >= limit { break }
        }
        return identities
    }

    private func matches(_ attributes: ItemAttributes, _ plan: QueryPlan) -> Bool {
        // Only where attributes were decrypted: a plan that does not need them selects by bound columns alone.
        guard plan.needsAttributes else { return true }
        let synchronizable = attributes[.synchronizable] == .bool(true)
        switch plan.synchronizable {
        case .yes where !synchronizable, .no where synchronizable: return false
        default: break
        }
        return plan.residual.merging(plan.verified) { first, _ in first }.allSatisfy { key, wanted in
            guard let value = attributes[key] else { return false }
            if plan.caseInsensitive, case .string(let a) = value, case .string(let b) = wanted {
                return ItemKeys.fold(a) == ItemKeys.fold(b)
            }
            return value == wanted
        }
    }

    func result(for item: StoredItem, returning: ReturnOptions) throws -> KeychainItem {
        let full = returning.contains(.reference)
        return KeychainItem(
            itemClass: item.itemClass,
            attributes: returning.contains(.attributes) || full ? item.attributes : nil,
            data: returning.contains(.data) || full ? (item.secret ?? Data()) : nil,
            persistentReference: returning.contains(.persistentReference) || full ? try reference(for: item) : nil,
            identityKeyData: full && item.itemClass == .identity ? (item.identityKey?.secret ?? Data()) : nil)
    }
}
