import CryptoContract
import CryptoDispatcher
import Foundation

/// An item read back from the database, decrypted as far as the call needs.
struct StoredItem {
    let id: Int64
    let uuid: [UInt8]
    let itemClass: ItemClass
    let group: String
    var attributes: ItemAttributes
    var secret: Data?
    /// The stored uniqueness value and sealed secret, as read (an update that keeps the item's identity keeps
    /// them without decrypting).
    var uniq: [UInt8] = []
    var sealedSecret: [UInt8]?
    /// For an identity: its private key (the item itself is the certificate).
    var identityKey: KeyHalf?
    /// The item's access control list (an identity's: its private key's); nil for none.
    var access: ItemAccess?
    /// Whether the item's access control asks for the user, as its row says (``SecretBinding/user``).
    var asksForUser = false

    /// What the item's secret is bound to besides its row's identity.
    var binding: SecretBinding { SecretBinding(accessList: access != nil, user: asksForUser) }

    struct KeyHalf {
        let id: Int64
        let uuid: [UInt8]
        let secret: Data?
    }
}

/// What an item's secret is bound to besides its row's identity, from the envelope version that binds it on: the
/// secret of a row that claims otherwise does not open.
struct SecretBinding: Equatable {
    /// The row has an access control list (from envelope version ``accessListBound`` on).
    var accessList: Bool
    /// The item's access control asks for the user (from version ``userBound`` on): the row's `user` column, which
    /// the commonest search reads instead of the attributes.
    var user: Bool

    /// The first envelope versions whose secret identity binds each claim.
    static let accessListBound: UInt8 = 4
    static let userBound: UInt8 = 5
}

/// The column values of one item, ready to insert or update (in the order of the INSERT in ``EmbeddedKeychain``).
struct SealedRow {
    let insertValues: [SQLiteValue]

    static let insert =
        "INSERT INTO item(uuid, class, agrp, sync, uniq, acct, acct_ci, svce, svce_ci, srvr, srvr_ci, labl, labl_ci, atag, link, kcls, attributes, secret, acl, user) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"
    /// Where the sealed secret is among ``insertValues``.
    static let secretColumn = 17
}

extension EmbeddedKeychain {
    /// The attributes stored as keyed HMACs in their own columns, and compared there.
    /// (At most 8: ``StatementShape`` gives each two bits of a UInt16.)
    static let indexedAttributes: [AttributeKey] = [.account, .service, .server, .label, .applicationTag]

    // MARK: Sealing and opening rows

    /// The associated data that binds a blob to its row: which blob, the class, the group, the uniqueness
    /// value and the item's UUID. A blob moved to another row, group or part of the row does not authenticate.
    func identity(_ part: String, _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8]) -> [UInt8] {
        // "SecurityServices item v1 <part>\0<class>\0<group>\0" + uniq + uuid, built in one buffer.
        var aad: [UInt8] = []
        aad.reserveCapacity(48 + group.utf8.count + uniq.count + uuid.count)
        aad.appendUTF8("SecurityServices item v1 ")
        aad.appendUTF8(part)
        aad.append(0)
        aad.appendUTF8(itemClass.rawValue)
        aad.append(0)
        aad.appendUTF8(group)
        aad.append(0)
        aad.append(contentsOf: uniq)
        aad.append(contentsOf: uuid)
        return aad
    }

    /// The row of an item; `attributes` may carry its access control list (``AttributeKey/access``), sealed into its
    /// own column.
    func seal(_ itemClass: ItemClass, uuid: [UInt8], attributes: ItemAttributes, secret: [UInt8]?) throws -> SealedRow {
        var attributes = attributes
        let access = attributes.removeValue(forKey: .access)
        guard case .string(let group) = attributes[.accessGroup] else {
            throw KeychainError(.parameter, "an item needs an access group")  // set by add and kept by update
        }
        let sync: Bool
        if case .bool(true) = attributes[.synchronizable] { sync = true } else { sync = false }
        let uniq = try keys.uniqueness(itemClass, group: group, sync: sync, attributes: attributes)
        var values: [SQLiteValue] = [
            .blob(uuid), .text(itemClass.rawValue), .text(group), .integer(sync ? 1 : 0), .blob(uniq),
        ]
        for key in Self.indexedAttributes {
            let value = attributes[key]
            values.append(try value.map { .blob(try keys.indexValue(key, $0, folded: false)) } ?? .null)
            if case .string = value {
                values.append(.blob(try keys.indexValue(key, value!, folded: true)))  // matched `.string` above
            } else if key != .applicationTag {
                values.append(.null)
            }
        }
        let link: AttributeValue? = itemClass == .certificate ? attributes[.publicKeyHash] : itemClass == .key ? attributes[.applicationLabel] : nil
        if case .data(let hash) = link { values.append(.blob(Array(hash))) } else { values.append(.null) }
        if itemClass == .key, case .number(let keyClass) = attributes[.keyClass] { values.append(.integer(keyClass)) } else { values.append(.null) }
        values.append(.blob(try sealAttributes(attributes, itemClass, group: group, uniq: uniq, uuid: uuid)))
        var binding = SecretBinding(accessList: false, user: ItemAccessControl.asksForUser(in: attributes))
        if case .data = access { binding.accessList = true }
        values.append(try secret.map { .blob(try sealSecret($0, itemClass, group: group, uniq: uniq, uuid: uuid, binding: binding)) } ?? .null)
        if case .data(let list) = access {
            values.append(.blob(try sealAccess(ItemAccess(encoded: list), itemClass, group: group, uniq: uniq, uuid: uuid)))
        } else {
            values.append(.null)
        }
        values.append(.integer(binding.user ? 1 : 0))
        return SealedRow(insertValues: values)
    }

    func sealAttributes(_ attributes: ItemAttributes, _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8]) throws -> [UInt8] {
        var attributes = attributes
        attributes[.access] = nil  // in its own column
        return try SecretEnvelope.seal(
            AttributeCoding.encode(attributes), identity: identity("attributes", itemClass, group: group, uniq: uniq, uuid: uuid),
            wrapping: wrappingKey, engine: Dispatcher.shared)
    }

    func sealSecret(
        _ secret: [UInt8], _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8], binding: SecretBinding
    ) throws -> [UInt8] {
        try SecretEnvelope.seal(
            secret,
            identity: secretIdentity(itemClass, group: group, uniq: uniq, uuid: uuid, binding: binding, version: SecretEnvelope.version),
            wrapping: try secretWrapping(itemClass), engine: Dispatcher.shared)
    }

    /// The identity a secret sealed as envelope `version` is bound to. From version 4 on it says whether the item has
    /// an access control list, from version 5 on whether its access control asks for the user: a list removed from
    /// the row, or a `user` column cleared (both columns of their own), leaves a secret that no longer opens instead
    /// of a secret anyone may read.
    func secretIdentity(
        _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8], binding: SecretBinding, version: UInt8
    ) -> [UInt8] {
        var part = version >= SecretBinding.accessListBound && binding.accessList ? "secret under an access control list" : "secret"
        if version >= SecretBinding.userBound && binding.user { part += " for the user" }
        return identity(part, itemClass, group: group, uniq: uniq, uuid: uuid)
    }

    /// An access control list sealed under the master key (readable while a password-locked keychain is locked,
    /// as the list decides who may do what once it is unlocked).
    func sealAccess(_ access: ItemAccess, _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8]) throws -> [UInt8] {
        try SecretEnvelope.seal(
            Array(access.encoded()), identity: identity("acl", itemClass, group: group, uniq: uniq, uuid: uuid),
            wrapping: wrappingKey, engine: Dispatcher.shared)
    }

    func openAccess(_ blob: [UInt8], _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8]) throws -> ItemAccess {
        let list = try SecretEnvelope.open(
            blob, identity: identity("acl", itemClass, group: group, uniq: uniq, uuid: uuid), wrapping: wrappingKey,
            engine: Dispatcher.shared)
        do {
            return try ItemAccess(encoded: Data(list))
        } catch {
            throw KeychainError(.decode, "a stored access control list is malformed")
        }
    }

    /// Refuses an operation the item's access control list does not allow the calling application
    /// (``ItemAccess/accessor``, else this process): `.interactionNotAllowed`, where macOS would ask the user.
    func require(_ operation: ItemAccess.Authorization, by access: ItemAccess?) throws {
        guard let access else { return }
        let application = try ItemAccess.accessor ?? ItemAccess.Application.current
        guard access.allows(operation, for: application) else {
            throw KeychainError(
                .interactionNotAllowed, "the item's access control list does not let this application \(operation.verb) (no dialog can ask)")
        }
    }

    /// What seals an item's secret (in envelope versions 1 and 2, what wraps its item key): in a password-locked
    /// keychain the secrets key (which a locked keychain does not have: `.interactionNotAllowed`), except for a
    /// certificate, which is no secret and stays readable while locked, as on Apple's keychains; otherwise the master
    /// key.
    func secretWrapping(_ itemClass: ItemClass) throws -> SecretEnvelope.WrappingKey {
        guard let secrets, itemClass != .certificate else { return wrappingKey }
        return try secrets.key()
    }

    /// Whether changing `changes` on `item` changes what its row is indexed, grouped or bound by (then every
    /// column is rewritten and the secret resealed); otherwise only the attribute blob (and a new secret) is.
    func changesIdentity(_ item: StoredItem, _ changes: ItemAttributes) -> Bool {
        let schema = ItemSchema.of(item.itemClass)
        return changes.contains { key, value in
            (Self.indexedAttributes.contains(key) || schema.uniqueness.contains(key)
                || [.accessGroup, .synchronizable, .publicKeyHash, .applicationLabel, .keyClass].contains(key))
                && item.attributes[key] != value
        }
    }

    /// The columns ``open(_:needAttributes:needSecret:)`` reads, in order.
    static let selectColumns = "id, uuid, class, agrp, uniq, attributes, secret, acl, user"
    static let selectColumnsWithoutAttributes = "id, uuid, class, agrp, uniq, NULL, secret, acl, user"

    func open(_ row: [SQLiteValue], needAttributes: Bool, needSecret: Bool) throws -> StoredItem {
        func blob(_ value: SQLiteValue) -> [UInt8]? { if case .blob(let bytes) = value { bytes } else { nil } }
        func text(_ value: SQLiteValue) -> String? { if case .text(let text) = value { text } else { nil } }
        guard case .integer(let id) = row[0] else { throw KeychainError(.decode, "a stored item is malformed") }
        return try open(
            id: id, uuid: blob(row[1]), code: text(row[2]), group: text(row[3]), uniq: blob(row[4]),
            attributesBlob: blob(row[5]), secretBlob: blob(row[6]), accessBlob: blob(row[7]), asksForUser: row[8] != .integer(0),
            needAttributes: needAttributes, needSecret: needSecret)
    }

    /// The current row of a statement selecting ``selectColumns`` (read column by column, without the
    /// intermediate row array). A secret it needs is decrypted straight from SQLite's buffer; otherwise the sealed
    /// secret is kept.
    func open(_ statement: Statement, needAttributes: Bool, needSecret: Bool) throws -> StoredItem {
        var item = try open(
            id: statement.integer(0), uuid: statement.blob(1), code: statement.text(2), group: statement.text(3),
            uniq: statement.blob(4), attributesBlob: needAttributes ? statement.blob(5) : nil,
            secretBlob: needSecret ? nil : statement.blob(6), accessBlob: statement.blob(7), asksForUser: statement.integer(8) != 0,
            needAttributes: needAttributes, needSecret: false)
        if needSecret {
            item.secret = try statement.withBlob(6) { blob in
                try blob.map {
                    try openSecret($0, item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid, binding: item.binding)
                }
            }
        }
        return item
    }

    private func open(
        id: Int64, uuid: [UInt8]?, code: String?, group: String?, uniq: [UInt8]?, attributesBlob: [UInt8]?,
        secretBlob: [UInt8]?, accessBlob: [UInt8]?, asksForUser: Bool, needAttributes: Bool, needSecret: Bool
    ) throws -> StoredItem {
        guard let uuid, let code, let itemClass = ItemClass(rawValue: code), let group, let uniq else {
            throw KeychainError(.decode, "a stored item is malformed")
        }
        var attributes: ItemAttributes = [:]
        if needAttributes {
            guard let attributesBlob else { throw KeychainError(.decode, "a stored item is malformed") }
            attributes = try AttributeCoding.decode(
                SecretEnvelope.open(
                    attributesBlob, identity: identity("attributes", itemClass, group: group, uniq: uniq, uuid: uuid),
                    wrapping: wrappingKey, engine: Dispatcher.shared))
        }
        let access = try accessBlob.map { try openAccess($0, itemClass, group: group, uniq: uniq, uuid: uuid) }
        if needAttributes, let access { attributes[.access] = .data(try access.encoded()) }
        var secret: Data?
        let binding = SecretBinding(accessList: access != nil, user: asksForUser)
        if needSecret, let secretBlob {
            secret = try openSecret(secretBlob, itemClass, group: group, uniq: uniq, uuid: uuid, binding: binding)
        }
        return StoredItem(
            id: id, uuid: uuid, itemClass: itemClass, group: group, attributes: attributes, secret: secret, uniq: uniq,
            sealedSecret: secretBlob, access: access, asksForUser: asksForUser)
    }

    func openSecret(_ blob: [UInt8], _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8], binding: SecretBinding) throws -> Data {
        try blob.withUnsafeBytes { try openSecret($0, itemClass, group: group, uniq: uniq, uuid: uuid, binding: binding) }
    }

    /// The secret sealed in `blob`, decrypted into the `Data` returned (no intermediate copy to wipe); `binding`
    /// says what the row claims about the item (which the secret's identity binds from its envelope version on).
    func openSecret(
        _ blob: UnsafeRawBufferPointer, _ itemClass: ItemClass, group: String, uniq: [UInt8], uuid: [UInt8], binding: SecretBinding
    ) throws -> Data {
        var secret = Data(count: try SecretEnvelope.plaintextCount(blob))
        let identity = secretIdentity(itemClass, group: group, uniq: uniq, uuid: uuid, binding: binding, version: blob[0])
        // A local function, not a closure kept in a constant: that boxed `secret` and the closure's context on the
        // heap, two allocations per find.
        func open(_ wrapping: SecretEnvelope.WrappingKey) throws -> Int {
            try secret.withUnsafeMutableBytes {
                try SecretEnvelope.open(blob, identity: identity, wrapping: wrapping, engine: Dispatcher.shared, into: $0)
            }
        }
        let count: Int
        do {
            count = try open(try secretWrapping(itemClass))
        } catch let error as KeychainError where error.code == .decode && secrets == nil && itemClass != .certificate {
            // Sealed under a secrets key this store has not seen: the keychain got a password through another
            // store since this one opened it (the caller holds the connection).
            guard try noticePasswordLock(database) else { throw error }
            count = try open(try secretWrapping(itemClass))
        }
        secret.count = count  // drops the padding (no secret), without moving a byte
        return secret
    }
}
