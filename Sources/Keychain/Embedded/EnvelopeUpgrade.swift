import SecurityBase
import CryptoContract
import CryptoDispatcher

/// Rows sealed by an older release rewritten as the current ``SecretEnvelope`` version: versions 1 and 2 (a wrapped
/// item key, two AEAD openings per read, the second keying a new context), and the version-3 secrets of items with an
/// access control list (their identity did not say so: a list removed from the row left the secret readable).
extension EmbeddedKeychain {
    /// The sealed columns of an item row, in the order selected below; each name is also the part its associated
    /// data binds.
    private static let sealedColumns = ["attributes", "secret", "acl"]

    /// Rows with a blob of an older envelope version (SQLite compares blobs bytewise: the version is the first byte).
    private static let olderRows =
        "FROM item WHERE substr(attributes, 1, 1) < x'03' OR substr(secret, 1, 1) < x'03' OR substr(acl, 1, 1) < x'03' "
        + "OR (acl IS NOT NULL AND substr(secret, 1, 1) < x'04')"

    /// Rewrites every blob of the keychain still sealed as envelope version 1 or 2, and the version-3 secret of every
    /// item with an access control list, as the current version, in one transaction:
    /// every item, whatever its access group (the format is the keychain's, not a caller's). The plaintexts pass
    /// through wiped memory only. Rows already current are not touched; running it again finds nothing to do.
    ///
    /// An embedded store runs it by itself when it opens a keychain that has such rows (and is not locked). Until a
    /// row is upgraded it reads as before; every write seals the current version anyway.
    /// - Returns: how many blobs were rewritten.
    /// - Throws: ``KeychainError`` `.interactionNotAllowed` while a password-locked keychain is locked, `.decode`
    ///   for a blob that does not open under this store's keys; nothing is changed then.
    @discardableResult
    public func upgradeEnvelopes() throws -> Int {
        return try write { database in
            var rewritten = 0
            for row in try database.query("SELECT id, uuid, class, agrp, uniq, attributes, secret, acl " + Self.olderRows) {
                guard case .integer(let id) = row[0], case .blob(let uuid) = row[1], case .text(let code) = row[2],
                    let itemClass = ItemClass(rawValue: code), case .text(let group) = row[3], case .blob(let uniq) = row[4]
                else { throw KeychainError(.decode, "a stored item is malformed") }
                var binding = SecretBinding(accessList: false, user: false)
                if case .blob = row[7] { binding.accessList = true }
                for (offset, column) in Self.sealedColumns.enumerated() {
                    guard case .blob(let blob) = row[5 + offset], let version = blob.first,
                        version < 3 || (column == "secret" && binding.accessList && version < SecretBinding.accessListBound)
                    else { continue }
                    let wrapping = column == "secret" ? try secretWrapping(itemClass) : wrappingKey
                    if column == "secret" {
                        // The secret's new identity says whether the item asks for the user, which its attributes
                        // say (the row's column is not bound by the older envelope).
                        guard case .blob(let attributes) = row[5] else { throw KeychainError(.decode, "a stored item is malformed") }
                        binding.user = ItemAccessControl.asksForUser(in:
                            try AttributeCoding.decode(
                                SecretEnvelope.open(
                                    attributes, identity: self.identity("attributes", itemClass, group: group, uniq: uniq, uuid: uuid),
                                    wrapping: wrappingKey, engine: Dispatcher.shared)))
                    }
                    func identity(_ version: UInt8) -> [UInt8] {
                        column == "secret"
                            ? secretIdentity(itemClass, group: group, uniq: uniq, uuid: uuid, binding: binding, version: version)
                            : self.identity(column, itemClass, group: group, uniq: uniq, uuid: uuid)
                    }
                    let resealed = try blob.withUnsafeBytes { blob in
                        var plaintext = SecretBytes(zeroed: try SecretEnvelope.plaintextCount(blob))
                        return try plaintext.withUnsafeMutableBytes { plaintext in
                            let count = try SecretEnvelope.open(
                                blob, identity: identity(version), wrapping: wrapping, engine: Dispatcher.shared, into: plaintext)
                            return try SecretEnvelope.seal(
                                UnsafeRawBufferPointer(rebasing: plaintext[..<count]), identity: identity(SecretEnvelope.version),
                                wrapping: wrapping, engine: Dispatcher.shared)
                        }
                    }
                    try database.query("UPDATE item SET \(column) = ?1 WHERE id = ?2", [.blob(resealed), .integer(id)])
                    if column == "secret" {
                        try database.query("UPDATE item SET user = ?1 WHERE id = ?2", [.integer(binding.user ? 1 : 0), .integer(id)])
                    }
                    rewritten += 1
                }
            }
            return rewritten
        }
    }

    /// At open: upgrades the envelopes when some row needs it. Looked for with a read first, so that a current
    /// keychain costs one scan and no write lock. A failure leaves the rows as they were, readable as before (a
    /// locked keychain, say, is upgraded at a later open or by ``upgradeEnvelopes()``): opening does not fail for it.
    func upgradeEnvelopesIfNeeded() {
        let needed = (try? readStatement { database in
            try database.query("SELECT EXISTS(SELECT 1 " + Self.olderRows + ")").first?.first
        }) == .integer(1)
        guard needed else { return }
        _ = try? upgradeEnvelopes()
    }
}
