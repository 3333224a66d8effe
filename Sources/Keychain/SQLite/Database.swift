internal import CSQLite
import Foundation

/// A value in a column or a parameter.
public enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// One SQLite connection, with the durability the keychain needs: WAL, `synchronous=FULL`, a busy timeout,
/// `secure_delete` (freed pages are zeroed, so deleted secrets do not linger in the file), foreign keys on.
///
/// Not thread-safe (a connection must not be used by two threads at once): its owner confines it, as
/// ``KeychainDatabase`` does with a mutex. Owns the `sqlite3*` and closes it in `deinit`.
public final class Database {
    private let connection: OpaquePointer
    private var statements: [String: Statement] = [:]
    private var keyedStatements: [StatementShape: Statement] = [:]
    public let path: String
    private let busyTimeout: Int32

    /// Opens (creating with mode 0600 if needed) the database at `path`.
    /// - Parameter busyTimeout: how long a call waits for another connection's lock, in milliseconds.
    /// - Throws: ``SQLiteError``, or a POSIX error when the file cannot be created.
    public init(path: String, busyTimeout: Int32 = 10_000) throws {
        // Create the file first, so it is 0600 from its first byte (SQLite uses the umask); SQLite gives its
        // -wal and -shm files the database file's permissions.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        // A keychain on a read-only file system (EROFS) is opened for reading: its items read as ever, and a
        // change answers SQLITE_READONLY (the store's .readOnly, Apple's errSecReadOnly).
        let readOnly = fd < 0 && errno == EROFS && access(path, R_OK) == 0
        guard fd >= 0 || readOnly else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        if fd >= 0 { close(fd) }
        var handle: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        // On read-only media a WAL database cannot make its -shm file: `immutable=1` ("the database file cannot be
        // changed, even by a process with higher privilege") lets SQLite read it without one, which holds for a
        // file system mounted read-only.
        let name = readOnly ? "file:" + Self.uriEscaped(path) + "?immutable=1" : path
        let status = sqlite3_open_v2(name, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            // sqlite3_open_v2: "a database connection handle is usually returned in *ppDb, even if an error
            // occurs"; it must be closed all the same.
            let error = SQLiteError(handle, code: status)
            sqlite3_close_v2(handle)
            throw error
        }
        connection = handle
        self.path = path
        self.busyTimeout = busyTimeout
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeout)
        if !readOnly { try enableWAL(within: busyTimeout) }
        try execute("PRAGMA synchronous=FULL")
        try execute("PRAGMA secure_delete=ON")
        // When SQLite resets the WAL after a checkpoint, it truncates the file: old frames (sealed copies of rows
        // since deleted) do not stay on disk past the reset.
        try execute("PRAGMA journal_size_limit=0")
        try execute("PRAGMA foreign_keys=ON")
        // A 16 MiB page cache (SQLite's default is 2 MiB), filled only as pages are read: a keychain row with
        // its keyed-HMAC columns and sealed blobs is about 600 bytes with its index entries, so 10,000 items
        // (6 MB) no longer fit the default, and every missed page is a pread.
        try execute("PRAGMA cache_size=-16384")
    }

    /// A path as the path part of an SQLite URI (RFC 3986 percent-encoding of what would end or change it).
    static func uriEscaped(_ path: String) -> String {
        var escaped = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7f...: escaped += String(format: "%%%02X", byte)
            default: escaped.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return escaped
    }

    /// Switches to WAL. Switching needs the database to itself, and SQLite answers SQLITE_BUSY at once rather
    /// than calling the busy handler when another connection holds it (several processes opening a new
    /// keychain together), so the switch is retried until `milliseconds` have passed.
    private func enableWAL(within milliseconds: Int32) throws {
        var waited: Int32 = 0
        while true {
            let status = sqlite3_exec(connection, "PRAGMA journal_mode=WAL", nil, nil, nil)
            if status == SQLITE_OK { return }
            guard status & 0xFF == SQLITE_BUSY, waited < milliseconds else { throw SQLiteError(connection, code: status) }
            usleep(1000)
            waited += 1
        }
    }

    deinit {
        statements.removeAll()  // finalize before closing
        keyedStatements.removeAll()
        sqlite3_close_v2(connection)
    }

    /// Copies the WAL into the database and truncates it to zero bytes, so that the frames of rows just deleted
    /// (sealed, but readable with the key) leave the disk: with `secure_delete` the freed pages of the database
    /// are zeroed too. Best effort and never waiting: while another connection reads, the checkpoint cannot run
    /// and `false` is returned (SQLite's automatic checkpoint still runs later, which does not truncate).
    @discardableResult
    public func checkpointTruncatingWAL() -> Bool {
        sqlite3_busy_timeout(connection, 0)
        defer { sqlite3_busy_timeout(connection, busyTimeout) }
        return sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil) == SQLITE_OK
    }

    /// Runs SQL without parameters (several statements allowed).
    public func execute(_ sql: String) throws {
        let status = sqlite3_exec(connection, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw SQLiteError(connection, code: status) }
    }

    /// A prepared statement for `sql`, cached per connection (reset before it is handed out).
    public func statement(_ sql: String) throws -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var handle: OpaquePointer?
        let status = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard status == SQLITE_OK, let handle else { throw SQLiteError(connection, code: status) }
        let statement = Statement(handle, connection: connection)
        statements[sql] = statement
        return statement
    }

    /// A prepared statement cached under `key`, for callers that build SQL from a few shapes: the SQL text is
    /// built (by `sql`) and parsed only the first time a key is seen, and no text is built or hashed per call.
    /// `key` must determine the text: equal keys, equal SQL. (Typed, not `AnyHashable`: boxing the key on every
    /// call was a measurable part of a find.)
    func statement(key: StatementShape, _ sql: () -> String) throws -> Statement {
        if let cached = keyedStatements[key] {
            cached.reset()
            return cached
        }
        let statement = try self.statement(sql())
        keyedStatements[key] = statement
        return statement
    }

    /// Runs `sql` with `parameters` and returns every row.
    @discardableResult
    public func query(_ sql: String, _ parameters: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(parameters)
        var rows: [[SQLiteValue]] = []
        while try statement.step() { rows.append(statement.row()) }
        return rows
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws, so a failed call
    /// changes nothing. A writing transaction (`BEGIN IMMEDIATE`) takes the write lock up front, so it never
    /// fails half-way for a lock; a reading one (`BEGIN`) sees one consistent snapshot.
    @discardableResult
    public func transaction<R>(writing: Bool = true, _ body: () throws -> R) throws -> R {
        try run(writing ? "BEGIN IMMEDIATE" : "BEGIN")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    /// Runs one parameterless statement through the statement cache (BEGIN, COMMIT: no parsing per call).
    private func run(_ sql: String) throws {
        let statement = try statement(sql)
        defer { statement.reset() }
        _ = try statement.step()
    }

    /// `PRAGMA user_version`: the schema version.
    public var userVersion: Int {
        get throws { try Self.integer(query("PRAGMA user_version").first?.first) }
    }

    public func setUserVersion(_ version: Int) throws { try execute("PRAGMA user_version=\(version)") }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(connection)) }

    /// The rowid of the last insert.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(connection) }

    static func integer(_ value: SQLiteValue?) -> Int {
        if case .integer(let number) = value { return Int(number) }
        return 0
    }
}

/// A prepared statement, owned by its ``Database``'s cache; finalized in `deinit`.
public final class Statement {
    private let handle: OpaquePointer
    private let connection: OpaquePointer

    init(_ handle: OpaquePointer, connection: OpaquePointer) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `parameters` to `?1`, `?2`, …
    public func bind(_ parameters: [SQLiteValue]) throws {
        sqlite3_clear_bindings(handle)
        for (offset, value) in parameters.enumerated() { try bind(value, to: Int32(offset + 1)) }
    }

    /// Binds `value` to `?index`.
    private func bind(_ value: SQLiteValue, to index: Int32) throws {
        let status: Int32
        switch value {
        case .null: status = sqlite3_bind_null(handle, index)
        case .integer(let number): status = sqlite3_bind_int64(handle, index, number)
        case .real(let number): status = sqlite3_bind_double(handle, index, number)
        case .text(let text):
            // The UTF-8 in place, with its length (no NUL-terminated copy of the string first).
            status = text.utf8.withContiguousStorageIfAvailable {
                sqlite3_bind_text(
                    handle, index, UnsafeRawPointer($0.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                    Int32($0.count), SQLITE_TRANSIENT_SWIFT)
            } ?? sqlite3_bind_text(handle, index, text, -1, SQLITE_TRANSIENT_SWIFT)
        case .blob(let bytes):
            status = bytes.withUnsafeBytes {
                // A zero-length blob needs a non-NULL pointer, or SQLite stores NULL.
                sqlite3_bind_blob(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), SQLITE_TRANSIENT_SWIFT)
            }
        }
        guard status == SQLITE_OK else { throw SQLiteError(connection, code: status) }
    }

    /// Advances; `true` when a row is available.
    public func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let status: throw SQLiteError(connection, code: status)
        }
    }

    public func reset() { sqlite3_reset(handle) }

    /// Column `column` of the current row as an integer (0 for NULL).
    public func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// Column `column` of the current row as text, `nil` when it is not text.
    public func text(_ column: Int32) -> String? {
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT else { return nil }
        return String(cString: sqlite3_column_text(handle, column))
    }

    /// Column `column` of the current row as bytes, `nil` when it is not a blob.
    public func blob(_ column: Int32) -> [UInt8]? { withBlob(column) { $0.map { Array($0) } } }

    /// Calls `body` with column `column` of the current row in place (`nil` when it is not a blob): the bytes
    /// are SQLite's, valid only during `body`, and not copied.
    public func withBlob<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        guard sqlite3_column_type(handle, column) == SQLITE_BLOB else { return try body(nil) }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard let base = sqlite3_column_blob(handle, column), count > 0 else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The current row.
    public func row() -> [SQLiteValue] {
        (0..<sqlite3_column_count(handle)).map { column in
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
            case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(handle, column)))
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(handle, column))
                guard let base = sqlite3_column_blob(handle, column), count > 0 else { return .blob([]) }
                return .blob(Array(UnsafeRawBufferPointer(start: base, count: count)))
            default: return .null
            }
        }
    }
}

/// SQLite's SQLITE_TRANSIENT (-1 cast to a destructor): "make a private copy before returning".
let SQLITE_TRANSIENT_SWIFT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
