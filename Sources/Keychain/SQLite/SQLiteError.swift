internal import CSQLite
public import SecurityBase

/// An error from SQLite: its extended result code and message. Equal by code. The message never contains
/// bound values (only SQLite's text, which names tables and constraints, not data).
public struct SQLiteError: CodedError {
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_BUSY`, …).
    public let code: Int32
    public let message: String
    public let location: ErrorLocation

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

    init(code: Int32, message: String, file: StaticString = #fileID, line: UInt = #line) {
        self.code = code
        self.message = message
        location = ErrorLocation(fileID: file, line: line)
    }

    /// The error of the connection's last call.
    init(_ connection: OpaquePointer?, code: Int32, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = connection.map { sqlite3_extended_errcode($0) } ?? code
        self.message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
    }

    public var reason: String { message }
    public var description: String { "SQLite error \(code): \(message)" }
}
