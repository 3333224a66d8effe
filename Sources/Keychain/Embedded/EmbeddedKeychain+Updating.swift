import KeychainWire
import SecurityBase
import CryptoContract
public import Foundation

extension EmbeddedKeychain {
    /// Changes every item matching `query`: the attributes in `attributes` and, when given, the secret.
    /// - Returns: how many items changed.
    /// - Throws: ``KeychainError``: `.itemNotFound` when nothing matches, `.duplicateItem` when a changed item
    ///   would collide with another (nothing is changed then), `.parameter` for a case-insensitive query, return
    ///   options, or a class change; `.missingEntitlement` for a group the caller lacks; for an item whose access
    ///   control asks for the user, `.interactionNotAllowed` without the proof (``ItemQuery/authentication``) and
    ///   `.authFailed` for a wrong password.
    @discardableResult
    public func update(_ query: ItemQuery, attributes changes: ItemAttributes, data: Data? = nil) throws -> Int {
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
            // An item whose access control asks for the user changes only with the proof: otherwise its secret
            // could be replaced, or its constraint removed and the secret then read. (Taken in the transaction,
            // which has noticed a password another store gave the keychain.)
            let proof = self.userProof(for: query, needSecret: true)
            let items = try self.items(matching: plan, in: database, needSecret: false, needAttributes: true, proof: proof)
            guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            let reference = KeychainEvents.isListening && items.count == 1 ? try self.reference(for: items[0]) : nil
            for item in items {
                try require(.encrypt, by: item.access)
                if newAccess != nil { try require(.changeACL, by: item.access) }
            }
            for item in items {
                var attributes = item.attributes.merging(changes) { $1 }
                if changes[.modificationDate] == nil { attributes[.modificationDate] = .date(Date()) }
                // A list given to an item without one, or an access control that asks for the user where none did (or
                // the reverse), changes what its secret is bound to: the whole row is resealed.
                if !changesIdentity(item, changes) && (newAccess == nil || item.access != nil)
                    && ItemAccessControl.asksForUser(in: attributes) == item.asksForUser
                {
                    // Same row identity: only the attribute blob and, when given, the secret and the access control
                    // list are rewritten, so the indexes are not touched and the old secret is not decrypted.
                    let sealed = try sealAttributes(attributes, item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid)
                    if let newAccess {
                        let acl = try sealAccess(newAccess, item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid)
                        try database.query("UPDATE item SET acl = ?1 WHERE id = ?2", [.blob(acl), .integer(item.id)])
                    }
                    if let data {
                        let secret = try sealSecret(
                            Array(data), item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid, binding: item.binding)
                        try database.query("UPDATE item SET attributes = ?1, secret = ?2 WHERE id = ?3", [.blob(sealed), .blob(secret), .integer(item.id)])
                    } else {
                        try database.query("UPDATE item SET attributes = ?1 WHERE id = ?2", [.blob(sealed), .integer(item.id)])
                    }
                    continue
                }
                var secret = data.map { Array($0) }
                if secret == nil, let sealed = item.sealedSecret {
                    secret = Array(
                        try openSecret(sealed, item.itemClass, group: item.group, uniq: item.uniq, uuid: item.uuid, binding: item.binding))
                }
                defer { secret?.withUnsafeMutableBytes { secureWipe($0) } }
                let row = try seal(item.itemClass, uuid: item.uuid, attributes: attributes, secret: secret)
                do {
                    try database.query(
                        "UPDATE item SET agrp = ?3, sync = ?4, uniq = ?5, acct = ?6, acct_ci = ?7, svce = ?8, svce_ci = ?9, srvr = ?10, srvr_ci = ?11, labl = ?12, labl_ci = ?13, atag = ?14, link = ?15, kcls = ?16, attributes = ?17, secret = ?18, acl = ?19, user = ?20 WHERE id = ?21 AND class = ?2 AND uuid = ?1",
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
}
