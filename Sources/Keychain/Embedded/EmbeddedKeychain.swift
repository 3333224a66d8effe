import KeychainWire
import SecurityBase
import CryptoContract
import CryptoDispatcher
import Foundation
import Synchronization

/// A keychain kept in this process: items in one SQLite database, secrets encrypted at rest under a master key held
/// outside it, seen through the caller's access groups (``KeychainStore`` over it, or the keychain service for its
/// callers).
///
/// Every call is one transaction (a failed call changes nothing) on the store's one connection, which a mutex
/// confines to one thread at a time; several stores (in one process or several) may share a database file.
public final class EmbeddedKeychain: KeychainStorage, @unchecked Sendable {
    // @unchecked: the one non-Sendable member, the connection, is only touched while holding `connectionLock`. (A
    // Mutex<Database> was tried: Swift 6.3's region checking refuses it, because every use hands the connection to
    // a caller's closure, which it cannot prove does not keep it.)
    /// The database file.
    public let path: String
    /// The database file's path.
    public var location: String { path }
    /// The caller's access groups: adds go to the first unless told otherwise; queries see only these.
    public let accessGroups: [String]
    let masterKey: any MasterKeyHolder
    /// The master key as a keyed AES-GCM context: it seals and opens the envelopes (``SecretEnvelope``).
    let wrappingKey: SecretEnvelope.WrappingKey
    let keys: ItemKeys
    let database: Database
    /// Confines the connection to one thread at a time.
    let connectionLock = Mutex(())
    /// Whether a removal of deleted copies is scheduled (``scheduleRemovalOfDeletedCopies()``).
    private let removalScheduled = Mutex(false)
    /// A password-locked keychain's secrets key, locked or not; nil for a keychain whose secrets are under the master
    /// key alone, as far as this store has seen: a password given to the empty keychain through another store (or
    /// process) is noticed at this store's next write, or at a secret it cannot open.
    private let secretsLock = Mutex<SecretsLock?>(nil)

    var secrets: SecretsLock? { secretsLock.withLock { $0 } }

    /// Reads the keychain's password lock again (the caller holds the connection): whether another store gave the
    /// keychain a password since this one opened it.
    /// - Returns: whether this store now knows of a password it did not.
    func noticePasswordLock(_ database: Database) throws -> Bool {
        guard secrets == nil, let record = try PasswordLockRecord.read(database) else { return false }
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
        self.masterKey = masterKey
        self.wrappingKey = wrappingKey
        self.keys = keys
        database = connection
        secretsLock.withLock { $0 = secrets }
        upgradeEnvelopesIfNeeded()
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

    /// Removes the sealed copies of deleted and replaced items that the database and its WAL still hold: checkpoints
    /// the WAL into the database (whose freed pages `secure_delete` zeroes) and truncates it to zero bytes. A store
    /// does it by itself shortly after every delete and update (``scheduleRemovalOfDeletedCopies()``), and SQLite
    /// when the last connection to the file closes; call it to have it done now.
    /// - Returns: `false` when another connection was reading, so nothing could be removed now.
    @discardableResult
    public func removeDeletedCopies() -> Bool {
        connectionLock.withLock { _ in database.checkpointTruncatingWAL() }
    }

    /// How soon after a delete or an update the copies it left are removed, and how often that is tried again while
    /// another connection reads (up to ``removalAttempts`` times; then at the next delete or update, or at close).
    static let removalDelay = DispatchTimeInterval.milliseconds(100)
    static let removalAttempts = 50

    /// Removes the copies a delete or update just left, on a utility thread shortly after the call returns (not in it:
    /// a checkpoint's writes and syncs would multiply a delete's cost), coalescing the calls made meanwhile.
    func scheduleRemovalOfDeletedCopies() {
        guard claimRemoval() else { return }
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
}
