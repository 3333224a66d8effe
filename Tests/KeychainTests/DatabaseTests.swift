import Foundation
import Keychain
import Testing

/// The SQLite wrapper: durability settings, file mode, transactions, values, errors.
@Suite("Keychain: SQLite wrapper")
struct DatabaseTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("db-\(UUID().uuidString)")

    init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    @Test("opens with WAL, synchronous=FULL and secure_delete, and creates 0600 files")
    func settings() throws {
        let database = try Database(path: path("a.db"))
        #expect(try database.query("PRAGMA journal_mode") == [[.text("wal")]])
        #expect(try database.query("PRAGMA synchronous") == [[.integer(2)]])
        #expect(try database.query("PRAGMA secure_delete") == [[.integer(1)]])
        try database.execute("CREATE TABLE t (x)")
        try database.query("INSERT INTO t VALUES (?1)", [.integer(1)])
        for file in ["a.db", "a.db-wal"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: path(file))
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(file)")
        }
    }

    @Test("every value type round-trips, empty blobs included")
    func values() throws {
        let database = try Database(path: path("v.db"))
        try database.execute("CREATE TABLE t (a, b, c, d, e, f)")
        let row: [SQLiteValue] = [.null, .integer(-42), .real(1.5), .text("ünïcode"), .blob([0, 1, 255]), .blob([])]
        try database.query("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5, ?6)", row)
        #expect(try database.query("SELECT * FROM t") == [row])
    }

    @Test("a transaction that throws changes nothing; one that returns is committed")
    func transactions() throws {
        let database = try Database(path: path("t.db"))
        try database.execute("CREATE TABLE t (x UNIQUE)")
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try database.transaction {
                try database.query("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        #expect(try database.query("SELECT count(*) FROM t") == [[.integer(0)]])
        try database.transaction { try database.query("INSERT INTO t VALUES (1)") }
        // A unique violation is reported with its extended code and rolls its transaction back.
        do {
            try database.transaction {
                try database.query("INSERT INTO t VALUES (2)")
                try database.query("INSERT INTO t VALUES (1)")
            }
            Issue.record("duplicate accepted")
        } catch let error as SQLiteError {
            #expect(error.isUniqueViolation)
        }
        #expect(try database.query("SELECT x FROM t") == [[.integer(1)]])
    }

    @Test("a second connection sees committed writes and waits for the lock instead of failing")
    func twoConnections() throws {
        let first = try Database(path: path("c.db"))
        try first.execute("CREATE TABLE t (x)")
        // A generous timeout: on a loaded machine (CI's single-CPU VM running every suite at once) the committing
        // thread may be scheduled late, and the test is about waiting, not about how long.
        let second = try Database(path: path("c.db"), busyTimeout: 30_000)
        try first.execute("BEGIN IMMEDIATE")
        try first.query("INSERT INTO t VALUES (1)")
        let started = Date()
        // The other thread only commits, after this one is already waiting: the two never use `first` at once.
        // A thread of its own, not a global queue: the global queues' few threads can all be busy with other
        // suites' blocking work.
        nonisolated(unsafe) let holder = first
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.2)
            try? holder.execute("COMMIT")
        }
        try second.transaction { try second.query("INSERT INTO t VALUES (2)") }
        #expect(Date().timeIntervalSince(started) >= 0.15)
        #expect(try second.query("SELECT count(*) FROM t") == [[.integer(2)]])
    }

    @Test("the schema version is kept in user_version")
    func userVersion() throws {
        let database = try Database(path: path("u.db"))
        #expect(try database.userVersion == 0)
        try database.setUserVersion(3)
        #expect(try Database(path: path("u.db")).userVersion == 3)
    }
}
