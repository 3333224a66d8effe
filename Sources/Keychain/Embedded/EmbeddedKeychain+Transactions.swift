import SecurityBase
import Foundation

extension EmbeddedKeychain {
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
    struct PasswordLockAppeared: CodedError {
        let location: ErrorLocation
        init(file: StaticString = #fileID, line: UInt = #line) { location = ErrorLocation(fileID: file, line: line) }
        var code: Int { 0 }
        var reason: String { "the keychain got a password while rows were sealed for it" }
    }

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
}
