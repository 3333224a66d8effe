import Foundation
@testable import Keychain
import TestVectors
import Testing

/// Fault injection: a keychain on a file system that fills up or turns read-only, a database damaged on
/// purpose, a write-ahead log torn mid-frame. Each answers its own error (`errSecDiskFull`, `errSecReadOnly`,
/// `errSecDecode` on the Security surface), changes nothing and loses no item already acknowledged; a damaged
/// keychain is refused, never read as empty. The file-system cases mount a small tmpfs of their own (as root, as
/// `make test` and CI run).
@Suite(
    "Keychain: storage faults (disk full, read-only, damaged database, torn WAL)", .serialized,
    .disabled(if: AFALGGate.required, "host only: the mounts and file surgery are the host's"))
struct StorageFaultTests {
    static func open(_ path: String) throws -> KeychainStore {
        try KeychainStore(path: path, masterKey: TemporaryKeychain.masterKey(0x42), accessGroups: ["app.one"])
    }

    static func all(_ store: KeychainStore) throws -> [KeychainItem] {
        do {
            return try store.find(ItemQuery(.genericPassword, limit: .all, returning: [.attributes, .data]))
        } catch let error as KeychainError where error.code == .itemNotFound {
            return []
        }
    }

    @Test(
        "disk full: adds fail with diskFull once the file system is full, every acknowledged item reads back, and the keychain works again with room",
        .enabled(if: SmallFileSystem.isPossible, "needs root and mount(8), as make test and CI run"))
    func diskFull() throws {
        let disk = try #require(try SmallFileSystem(size: "768k"), "mount refused a tmpfs")
        let path = disk.directory.appendingPathComponent("keychain.db").path
        let store = try Self.open(path)
        var acknowledged: [String: Data] = [:]
        var failure: KeychainError?
        // Items of 8 KiB until the 768 KiB are gone.
        for index in 0..<400 {
            let account = "account-\(index)"
            let secret = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
            do {
                try store.add(.genericPassword, attributes: password(account, "fill"), data: secret)
                acknowledged[account] = secret
            } catch let error as KeychainError {
                failure = error
                break
            }
        }
        #expect(failure?.code == .diskFull, "\(String(describing: failure))")
        #expect(acknowledged.count > 10)
        // What was acknowledged is there, byte for byte; the failed add left nothing.
        func check(_ store: KeychainStore) throws {
            let items = try Self.all(store)
            #expect(items.count == acknowledged.count)
            for item in items {
                guard case .string(let account)? = item.attributes?[.account] else { Issue.record("an item without account"); continue }
                #expect(item.data == acknowledged[account], "\(account)")
            }
        }
        try check(store)
        // With room again (the file system grown), a new connection reads the same and adds succeed.
        try #require(SmallFileSystem.run("/bin/mount", ["-o", "remount,size=4m", disk.directory.path]) == 0)
        let again = try Self.open(path)
        try check(again)
        try again.add(.genericPassword, attributes: password("after", "fill"), data: Data("small".utf8))
        acknowledged["after"] = Data("small".utf8)
        try check(again)
    }

    @Test(
        "a keychain on a file system mounted read-only: items read as ever, writes fail with readOnly and change nothing; writable again, writes work",
        .enabled(if: SmallFileSystem.isPossible, "needs root and mount(8), as make test and CI run"))
    func readOnly() throws {
        let disk = try #require(try SmallFileSystem(size: "4m"), "mount refused a tmpfs")
        let path = disk.directory.appendingPathComponent("keychain.db").path
        do {
            let store = try Self.open(path)
            try store.add(.genericPassword, attributes: password("kept", "ro"), data: Data("before".utf8))
        }  // closed: a file system with a file open for writing cannot turn read-only
        try #require(disk.remount(readOnly: true))
        let store = try Self.open(path)
        expectKeychainError(.readOnly) {
            try store.add(.genericPassword, attributes: password("new", "ro"), data: Data("x".utf8))
        }
        expectKeychainError(.readOnly) {
            try store.update(ItemQuery(.genericPassword, matching: password("kept", "ro")), attributes: [:], data: Data("changed".utf8))
        }
        let items = try Self.all(store)
        #expect(items.count == 1 && items.first?.data == Data("before".utf8))
        try #require(disk.remount(readOnly: false))
        let writable = try Self.open(path)
        try writable.add(.genericPassword, attributes: password("new", "ro"), data: Data("x".utf8))
        #expect(try Self.all(writable).count == 2)
    }

    @Test(
        "an I/O error (EIO from every write once the disk fails): the failing add is io, every acknowledged item reads back, the database intact",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cc"), "needs cc to build the EIO injector"))
    func ioError() throws {
        let temporary = try TemporaryKeychain()
        // The injector (Faults/eio.c), built here and preloaded into the child: after 400 writes to files under this
        // keychain's directory, every write and sync there fails with EIO.
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Faults/eio.c")
        let library = temporary.directory.appendingPathComponent("libeio.so").path
        #expect(SmallFileSystem.run("/usr/bin/cc", ["-shared", "-fPIC", "-O1", "-o", library, source.path, "-ldl"]) == 0)
        let process = Process()
        process.executableURL = try ProcessTests.child
        process.arguments = [temporary.path, "stress", "e", "100000"]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "LD_PRELOAD": library, "SECURITYSERVICES_EIO_AFTER": "400", "SECURITYSERVICES_EIO_PATH": temporary.directory.lastPathComponent,
        ]) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let acknowledged = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n").filter { $0.hasPrefix("ok ") }.count
        let reported = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "the child should stop at the failing write")
        #expect(reported.contains("KeychainError.io"), "\(reported)")
        #expect(acknowledged > 10 && acknowledged < 100_000)
        // Without the injector: every acknowledged item is there, and the database is intact.
        #expect(try Database(path: temporary.path).query("PRAGMA integrity_check") == [[.text("ok")]])
        let store = try KeychainStore(path: temporary.path, accessGroups: ["stress"])
        for index in 0..<acknowledged {
            #expect(try store.password(account: "e-\(index)", service: "stress") == "secret-e-\(index)", "item \(index)")
        }
    }

    @Test("a database damaged on purpose is refused with decode (never read as empty) and left as it was")
    func damagedDatabase() throws {
        let temporary = try TemporaryKeychain()
        let path = temporary.path
        do {
            let store = try Self.open(path)
            try store.add(.genericPassword, attributes: password("a", "damaged"), data: Data("secret".utf8))
        }
        // Overwrite SQLite's header ("SQLite format 3\0" and the page size).
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 100))
        try handle.close()
        let damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            let store = try Self.open(path)
            _ = try Self.all(store)
            Issue.record("a damaged keychain was opened and read")
        } catch let error as KeychainError {
            #expect(error.code == .decode, "\(error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged, "the damaged file was changed")
    }

    @Test("a write-ahead log torn mid-frame: the committed items before it are there, the torn commit is not, nothing crashes")
    func tornWAL() throws {
        let temporary = try TemporaryKeychain()
        let path = temporary.path
        let copy = temporary.directory.appendingPathComponent("copy.db").path
        let store = try Self.open(path)
        try store.add(.genericPassword, attributes: password("first", "wal"), data: Data("one".utf8))
        // The state of the files with the first commit in the log: a crash copy.
        let wal = path + "-wal"
        try #require(FileManager.default.fileExists(atPath: wal))
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: wal, toPath: copy + "-wal")
        let firstLength = try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? 0
        try store.add(.genericPassword, attributes: password("second", "wal"), data: Data("two".utf8))
        // The log with the second commit, cut in the middle of its frames, as a crash during the write leaves it.
        let full = try Data(contentsOf: URL(fileURLWithPath: wal))
        try #require(full.count > firstLength + 100)
        try full.prefix(firstLength + (full.count - firstLength) / 2).write(to: URL(fileURLWithPath: copy + "-wal"))
        let reopened = try KeychainStore(path: copy, masterKey: TemporaryKeychain.masterKey(0x42), accessGroups: ["app.one"])
        let accounts = try Self.all(reopened).compactMap { item -> String? in
            guard case .string(let account)? = item.attributes?[.account] else { return nil }
            return account
        }
        #expect(accounts == ["first"])
    }
}
