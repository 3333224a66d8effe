internal import CSQLite

/// An error from SQLite: its extended result code and message. Equal by code. The message never contains
/// bound values (only SQLite's text, which names tables and constraints, not data).
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_BUSY`, …).
    public let code: Int32
    public let message: String

    /// The primary result code (`code & 0xff`).
    public var primaryCode: Int32 { code & 0xff }

    public var isUniqueViolation: Bool { code == csqlite_CONSTRAINT_UNIQUE || code == csqlite_CONSTRAINT_PRIMARYKEY }
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    // Primary result codes the store tells apart (sqlite3.h).
    static let full = SQLITE_FULL
    static let readOnly = SQLITE_READONLY
    static let corrupt = SQLITE_CORRUPT
    static let notADatabase = SQLITE_NOTADB
    static let ioError = SQLITE_IOERR
    static let cantOpen = SQLITE_CANTOPEN

    init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// The error of the connection's last call.
    init(_ connection: OpaquePointer?, code: Int32) {
        self.code = connection.map { sqlite3_extended_errcode($0) } ?? code
        self.message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
    }

    public static func == (lhs: SQLiteError, rhs: SQLiteError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "SQLite error \(code): \(message)" }
}
