import DurableFiles
public import Foundation

/// Backup and restore. A backup holds every item of the caller's access groups with its attributes in the
/// clear and its secret still sealed exactly as in the database (the master key is not in the file): with the
/// same master key a restore gives every item back; with another, the attributes come back and each secret is
/// reported unreadable.
extension EmbeddedKeychain {
    struct BackupFile: Codable {
        var format = "SecurityServices keychain backup"
        var version = 1
        var items: [BackupItem]
    }

    struct BackupItem: Codable {
        var itemClass: ItemClass
        var uuid: Data
        var attributes: [String: AttributeValue]
        var secret: Data?
    }

    /// Writes a backup of every item in the caller's access groups to `url` (mode 0600, replaced atomically).
    /// - Returns: how many items it holds.
    @discardableResult
    public func backup(to url: URL) throws -> Int {
        let file = try read { database in
            var items: [BackupItem] = []
            let groups = accessGroups.map { SQLiteValue.text($0) }
            let marks = (1...groups.count).map { "?\($0)" }.joined(separator: ", ")
            for row in try database.query("SELECT \(Self.selectColumns) FROM item WHERE agrp IN (\(marks)) ORDER BY id", groups) {
                let item = try open(row, needAttributes: true, needSecret: false)
                var sealed: Data?
                if case .blob(let blob) = row[6] { sealed = Data(blob) }
                items.append(BackupItem(
                    itemClass: item.itemClass, uuid: Data(item.uuid),
                    attributes: Dictionary(uniqueKeysWithValues: item.attributes.map { ($0.key.rawValue, $0.value) }),
                    secret: sealed))
            }
            return BackupFile(items: items)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = try encoder.encode(file)
        // Replaced whole or not at all; the temporary file has a name nobody can predict, created exclusively and
        // never through a link (it was `.tmp-<pid>`, where a planted symlink received the backup).
        do {
            _ = try bytes.withUnsafeBytes { bytes in try DurableFile.write(bytes, to: url.path, mode: 0o600) }
        } catch let error as DurableFileError {
            throw KeychainError(.io, "cannot write the backup file", errno: error.errno)
        }
        return file.items.count
    }

    /// Restores a backup made by ``backup(to:)``: each item comes back with its persistent reference, replacing
    /// an item with the same reference or the same unique attributes. One transaction: a malformed file or an
    /// item outside the caller's groups changes nothing.
    /// - Returns: what was restored, and which secrets this keychain's master key cannot open.
    /// - Throws: ``KeychainError`` `.decode` for a file that is not a backup, `.missingEntitlement` for an item of
    ///   a group the caller lacks.
    public func restore(from url: URL) throws -> RestoreReport {
        let file: BackupFile
        do {
            file = try JSONDecoder().decode(BackupFile.self, from: Data(DurableFile.read(url.path, maximumLength: 1 << 30)))
        } catch {
            throw KeychainError(.decode, "not a keychain backup file")
        }
        guard file.format == BackupFile(items: []).format, file.version == 1 else {
            throw KeychainError(.decode, "not a version-1 keychain backup file")
        }
        var rows: [(attributes: ItemAttributes, uuid: [UInt8], itemClass: ItemClass, row: SealedRow, readable: Bool)] = []
        for item in file.items {
            guard item.itemClass != .identity, item.uuid.count == 16 else { throw KeychainError(.decode, "a backup item is malformed") }
            let attributes = try validate(
                Dictionary(uniqueKeysWithValues: item.attributes.map { (AttributeKey($0.key), $0.value) }),
                for: ItemSchema.of(item.itemClass))
            guard case .string(let group) = attributes[.accessGroup], accessGroups.contains(group) else {
                throw KeychainError(.missingEntitlement, "the backup holds items of an access group the caller is not in")
            }
            // Seal the attributes for this keychain; keep the secret's sealed bytes, and find out whether this
            // master key opens them.
            let sealed = try seal(item.itemClass, uuid: Array(item.uuid), attributes: attributes, secret: nil)
            var values = sealed.insertValues
            var readable = true
            if let secret = item.secret {
                values[SealedRow.secretColumn] = .blob(Array(secret))
                if case .blob(let uniq) = values[4] {
                    let binding = SecretBinding(accessList: attributes[.access] != nil, user: ItemAccessControl.asksForUser(in: attributes))
                    readable =
                        (try? openSecret(Array(secret), item.itemClass, group: group, uniq: uniq, uuid: Array(item.uuid), binding: binding))
                        != nil
                }
            }
            rows.append((attributes, Array(item.uuid), item.itemClass, SealedRow(insertValues: values), readable))
        }
        return try write { database in
            var report = RestoreReport(restored: 0, unreadableSecrets: [])
            for (attributes, uuid, itemClass, row, readable) in rows {
                // The item a backup's reference names may only be replaced in the caller's groups: a crafted backup
                // carrying another group's UUID must not delete that item (the (class, uniq) match is per group).
                let owners = try database.query("SELECT agrp FROM item WHERE uuid = ?1", [row.insertValues[0]])
                if case .text(let owner)? = owners.first?.first, !accessGroups.contains(owner) {
                    throw KeychainError(
                        .missingEntitlement, "a backup item's reference names an item of an access group the caller is not in")
                }
                try database.query("DELETE FROM item WHERE uuid = ?1 OR (class = ?2 AND uniq = ?3)", [row.insertValues[0], row.insertValues[1], row.insertValues[4]])
                try database.query(
                    SealedRow.insert, row.insertValues)
                report.restored += 1
                if !readable {
                    let stored = StoredItem(
                        id: database.lastInsertRowID, uuid: uuid, itemClass: itemClass, group: "", attributes: attributes)
                    report.unreadableSecrets.append(try result(for: stored, returning: [.attributes, .persistentReference]))
                }
            }
            return report
        }
    }
}
