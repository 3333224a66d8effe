import DurableFiles
import Foundation
import Testing

@Suite("DurableFile: whole files or nothing")
struct DurableFileTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "durable-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    }

    func entries() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: directory).sorted() }

    func write(_ text: String, to path: String, mode: mode_t = 0o600, _ placement: DurableFile.Placement = .replace) throws -> Bool {
        try Array(text.utf8).withUnsafeBytes { try DurableFile.write($0, to: path, mode: mode, placement: placement) }
    }

    @Test("replace: the new bytes under the name, with the mode asked for, and no temporary file left")
    func replace() throws {
        let path = directory + "/file"
        #expect(try write("old", to: path))
        #expect(try write("new contents", to: path, mode: 0o640))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new contents")
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o640 & ~umaskValue())
        #expect(try entries() == ["file"])
    }

    @Test("createOnly: a file already there is kept and the call says so; the first creation writes")
    func createOnly() throws {
        let path = directory + "/key"
        #expect(try write("first", to: path, .createOnly))
        #expect(try write("second", to: path, .createOnly) == false)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "first")
        #expect(try entries() == ["key"])
    }

    @Test("a failure at the rename leaves the destination as it was and removes the temporary file")
    func failedRename() throws {
        // A non-empty directory at the destination: rename(2) refuses to replace it.
        let path = directory + "/taken"
        try FileManager.default.createDirectory(atPath: path + "/inner", withIntermediateDirectories: true)
        #expect(throws: DurableFileError(.name, EISDIR)) { try write("bytes", to: path) }
        #expect(try entries() == ["taken"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["inner"])
    }

    @Test("a failure at the creation (no such directory) is the create step with its errno")
    func failedCreate() throws {
        #expect(throws: DurableFileError(.create, ENOENT)) { try write("bytes", to: directory + "/missing/file") }
        #expect(try entries().isEmpty)
    }

    @Test("a planted symlink at the destination is replaced, not written through")
    func symlinkReplaced() throws {
        let target = directory + "/target"
        #expect(try write("target", to: target))
        let path = directory + "/link"
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        #expect(try write("new", to: path))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "target")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType == .typeRegular)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
    }
}

private func umaskValue() -> mode_t {
    let value = umask(0)
    umask(value)
    return value
}
