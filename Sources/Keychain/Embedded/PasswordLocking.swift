package import KeychainWire
import SecurityBase
import CryptoContract
import Entropy
public import Foundation
import Synchronization

/// A password-locked keychain's row of `passwordlock`.
struct PasswordLockRecord {
    let keychain: [UInt8]
    let derivation: PasswordDerivation
    let wrapped: [UInt8]
    let settings: KeychainLockSettings

    /// The row, or nil for a keychain that is not password-locked.
    /// - Throws: ``KeychainError`` `.decode` for a malformed row.
    static func read(_ database: Database) throws -> PasswordLockRecord? {
        let rows = try database.query("SELECT keychain, derivation, wrapped, lock_interval, lock_on_sleep FROM passwordlock WHERE id = 1")
        guard let row = rows.first else { return nil }
        guard case .blob(let keychain) = row[0], case .blob(let derivation) = row[1], case .blob(let wrapped) = row[2],
            case .integer(let lockOnSleep) = row[4]
        else { throw KeychainError(.decode, "the keychain's password lock is malformed") }
        var interval: Duration?
        if case .integer(let seconds) = row[3] { interval = .seconds(seconds) }
        return PasswordLockRecord(
            keychain: keychain, derivation: try PasswordDerivation(decoding: derivation), wrapped: wrapped,
            settings: KeychainLockSettings(interval: interval, lockOnSleep: lockOnSleep != 0))
    }

    static func intervalValue(_ settings: KeychainLockSettings) -> SQLiteValue {
        settings.interval.map { .integer(max(1, $0.components.seconds)) } ?? .null
    }
}

/// The lock state of each password-locked keychain this process has opened, by the keychain's identity: every
/// store on the same keychain shares one, so unlocking or locking through any of them does it for all.
enum SecretsLocks {
    private static let locks = Mutex<[[UInt8]: SecretsLock]>([:])

    static func lock(for record: PasswordLockRecord, path: String) -> SecretsLock {
        locks.withLock { locks in
            if let lock = locks[record.keychain] { return lock }
            let lock = SecretsLock(settings: record.settings, path: path)
            locks[record.keychain] = lock
            return lock
        }
    }
}

extension EmbeddedKeychain {
    /// Creates a password-locked keychain at `path` (its attributes under the master key in the key file beside it,
    /// as any keychain's; its secrets under a key that only `password` unwraps) and opens it, unlocked.
    /// - Parameters:
    ///   - derivation: how the password becomes a key; nil for scrypt calibrated to about 100 ms here.
    ///   - settings: when it locks itself.
    /// - Throws: ``KeychainError`` `.duplicateItem` when a keychain with items or a password already exists at
    ///   `path`, `.parameter` for an empty password, and the errors of ``init(path:accessGroups:)``.
    public static func createPasswordLocked(
        path: String, password: some DataProtocol, accessGroups: [String], derivation: PasswordDerivation.Function? = nil,
        settings: KeychainLockSettings = KeychainLockSettings()
    ) throws -> EmbeddedKeychain {
        let store = try EmbeddedKeychain(path: path, accessGroups: accessGroups)
        try store.setInitialPassword(password, derivation: derivation, settings: settings)
        return store
    }

    /// Gives this keychain, while it holds no item and has no password, a password: from then on its secrets are
    /// under a key only the password unwraps. It is unlocked after. Other stores on the keychain (in this process or
    /// others, or, through the keychain service, every process of the caller's uid) see the password at their next
    /// call that writes or reads a secret.
    /// - Parameters:
    ///   - derivation: how the password becomes a key; nil for scrypt calibrated to about 100 ms here.
    /// - Throws: ``KeychainError`` `.duplicateItem` when the keychain holds items or has a password, `.parameter`
    ///   for an empty password.
    public func setInitialPassword(
        _ password: some DataProtocol, derivation: PasswordDerivation.Function? = nil, settings: KeychainLockSettings = KeychainLockSettings()
    ) throws {
        let password = SecretBytes(password)
        guard password.count > 0 else { throw KeychainError(.parameter, "a keychain password cannot be empty") }
        let derivation = try PasswordDerivation.fresh(derivation)
        var secretsKey = SecretBytes(zeroed: PasswordDerivation.keySize)
        try secretsKey.withUnsafeMutableBytes { try EntropySource.fill($0) }
        let wrapped = try SecretsLock.wrap(secretsKey, password: password, derivation: derivation)
        let keychain = try EntropySource.bytes(count: 16)
        let lock = try connectionLock.withLock { _ in
            try Self.wrap {
                try database.transaction(writing: true) {
                    guard try database.query("SELECT 1 FROM item LIMIT 1").isEmpty,
                        try database.query("SELECT 1 FROM passwordlock").isEmpty
                    else { throw KeychainError(.duplicateItem, "a keychain with items or a password exists at that path") }
                    try database.query(
                        "INSERT INTO passwordlock(id, keychain, derivation, wrapped, lock_interval, lock_on_sleep) VALUES (1, ?1, ?2, ?3, ?4, ?5)",
                        [.blob(keychain), .blob(derivation.encoded), .blob(wrapped), PasswordLockRecord.intervalValue(settings),
                         .integer(settings.lockOnSleep ? 1 : 0)])
                }
                _ = try noticePasswordLock(database)
                return secrets
            }
        }
        try lock?.adopt(secretsKey)
    }

    /// Whether this keychain's secrets are locked by a password (a keychain kept by a key file alone is not).
    public var isPasswordLocked: Bool {
        return secrets != nil
    }

    /// Whether the keychain is locked now: its attributes readable, its secrets not.
    public var isLocked: Bool {
        return secrets?.isLocked ?? false
    }

    /// Whether the keychain has a password, and whether it is locked now.
    public func lockStatus() throws -> (passwordLocked: Bool, locked: Bool) {
        let secrets = try connectionLock.withLock { _ in
            _ = try Self.wrap { try noticePasswordLock(database) }
            return self.secrets
        }
        return (secrets != nil, secrets?.isLocked ?? false)
    }

    /// Unlocks the keychain for every store of this process on it, until ``lock()`` or the settings' idle interval.
    /// - Throws: ``KeychainError`` `.authFailed` for a wrong password (each wrong password in a row from the
    ///   second waits longer before it answers), `.parameter` for a keychain that has no password.
    public func unlock(password: some DataProtocol) throws {
        try unlock(password: password, waiting: true)
    }

    /// - Parameter waiting: whether a wrong password waits before it is answered (the service waits on its own).
    private func unlock(password: some DataProtocol, waiting: Bool) throws {
        let record = try passwordLock()
        try record.lock.unlock(SecretBytes(password), derivation: record.record.derivation, wrapped: record.record.wrapped, waiting: waiting)
    }

    /// Checks `password` against the keychain's without unlocking it: the proof of the user for LocalAuthentication's
    /// policy evaluation (the keychain's password stands for the user's, as the login password does on a Mac).
    /// - Throws: ``KeychainError`` `.authFailed` for a wrong password (counted and delayed as a wrong unlock),
    ///   `.parameter` for a keychain that has no password.
    public func verifyPassword(_ password: some DataProtocol) throws {
        try verifyPassword(password, waiting: true)
    }

    private func verifyPassword(_ password: some DataProtocol, waiting: Bool) throws {
        let record = try passwordLock()
        _ = try record.lock.verify(SecretBytes(password), derivation: record.record.derivation, wrapped: record.record.wrapped, waiting: waiting)
    }

    /// Locks the keychain for every store of this process on it: its secrets key is dropped (and wiped) at once.
    /// - Throws: ``KeychainError`` `.parameter` for a keychain that has no password.
    public func lock() throws {
        try passwordLock().lock.lock()
    }

    /// Answers a lock request for the keychain service (this store is the caller's keychain, embedded in it). A wrong
    /// password is answered at once here (the service delays the answer, ``consecutivePasswordFailures``, without
    /// holding a thread).
    package func serveLockRequest(_ request: KeychainWire.LockRequest) throws -> KeychainWire.Response {
        switch request {
        case .status: break
        case .setPassword(let password): try setInitialPassword(password)
        case .unlock(let password): try unlock(password: password, waiting: false)
        case .verifyPassword(let password): try verifyPassword(password, waiting: false)
        case .lock: try lock()
        case .changePassword(let old, let new): try changePassword(old: old, new: new, waiting: false)
        case .setSettings(let interval, let lockOnSleep):
            try setLockSettings(KeychainLockSettings(interval: interval.map { .seconds($0) }, lockOnSleep: lockOnSleep))
        case .settings:
            let settings = try lockSettings()
            return .lockSettings(interval: settings.interval?.components.seconds, lockOnSleep: settings.lockOnSleep)
        }
        let status = try lockStatus()
        return .lockStatus(passwordLocked: status.passwordLocked, locked: status.locked)
    }

    /// How long the answer to the `failures`-th wrong password in a row waits.
    package static func passwordFailureDelay(_ failures: Int) -> Duration { .milliseconds(Int(SecretsLock.failureDelay(failures) * 1000)) }

    /// Wrong passwords in a row given to this keychain (to unlock it or to change its password) in this process.
    package var consecutivePasswordFailures: Int { secrets?.consecutiveFailures ?? 0 }

    /// Changes the password: the secrets key is wrapped again under the new password (with a fresh salt and the
    /// derivation asked for, or scrypt calibrated here) in one transaction — no item is rewritten, and a crash
    /// leaves the old password or the new one working, never neither.
    /// - Throws: ``KeychainError`` `.authFailed` when `old` is wrong (nothing changes), `.parameter` for an empty
    ///   new password or a keychain without one.
    public func changePassword(old: some DataProtocol, new: some DataProtocol, derivation: PasswordDerivation.Function? = nil) throws {
        try changePassword(old: old, new: new, derivation: derivation, waiting: true)
    }

    /// - Parameter waiting: whether a wrong old password waits before it is answered (the service waits on its own).
    private func changePassword(old: some DataProtocol, new: some DataProtocol, derivation: PasswordDerivation.Function? = nil, waiting: Bool) throws {
        let (record, lock) = try passwordLock()
        let newPassword = SecretBytes(new)
        guard newPassword.count > 0 else { throw KeychainError(.parameter, "a keychain password cannot be empty") }
        let secretsKey = try lock.verify(SecretBytes(old), derivation: record.derivation, wrapped: record.wrapped, waiting: waiting)
        let newDerivation = try PasswordDerivation.fresh(derivation)
        let wrapped = try SecretsLock.wrap(secretsKey, password: newPassword, derivation: newDerivation)
        try connectionLock.withLock { _ in
            try Self.wrap {
                try database.transaction(writing: true) {
                    // The old password was checked against this blob: another change since then wins, and this one
                    // is refused rather than undoing it.
                    try database.query(
                        "UPDATE passwordlock SET derivation = ?1, wrapped = ?2 WHERE id = 1 AND wrapped = ?3",
                        [.blob(newDerivation.encoded), .blob(wrapped), .blob(record.wrapped)])
                    guard database.changes == 1 else {
                        throw KeychainError(.authFailed, "the keychain's password changed meanwhile")
                    }
                }
            }
        }
        KeychainEvents.post(KeychainEvent(kind: .passwordChanged, path: path, itemClass: nil, persistentReference: nil))
    }

    /// How the keychain's password becomes its key (the function and its cost; the salt is not shown).
    /// - Throws: ``KeychainError`` `.parameter` for a keychain that has no password.
    public func passwordDerivation() throws -> PasswordDerivation.Function { try passwordLock().record.derivation.function }

    /// When the keychain locks itself.
    /// - Throws: ``KeychainError`` `.parameter` for a keychain that has no password.
    public func lockSettings() throws -> KeychainLockSettings {
        return try passwordLock().record.settings
    }

    /// Sets when the keychain locks itself, for this process's stores on it now and for every opening after.
    /// - Throws: ``KeychainError`` `.parameter` for a keychain that has no password, `.interactionNotAllowed` while
    ///   it is locked.
    public func setLockSettings(_ settings: KeychainLockSettings) throws {
        let (_, lock) = try passwordLock()
        try write { database in
            _ = try database.query(
                "UPDATE passwordlock SET lock_interval = ?1, lock_on_sleep = ?2 WHERE id = 1",
                [PasswordLockRecord.intervalValue(settings), .integer(settings.lockOnSleep ? 1 : 0)])
        }
        lock.settings = settings
    }

    /// The keychain's password lock as stored now, and this process's lock state for it.
    private func passwordLock() throws -> (record: PasswordLockRecord, lock: SecretsLock) {
        let found = try connectionLock.withLock { _ in
            try Self.wrap {
                _ = try noticePasswordLock(database)
                return (try PasswordLockRecord.read(database), secrets)
            }
        }
        guard let record = found.0, let lock = found.1 else { throw KeychainError(.parameter, "the keychain has no password") }
        return (record, lock)
    }
}
