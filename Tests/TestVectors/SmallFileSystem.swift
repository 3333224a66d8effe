public import Foundation

/// A tmpfs of `size` at a fresh directory, unmounted when the value goes: storage-fault tests (a full disk, a
/// read-only file system) on a file system of their own. Nil unless running as root where mount works.
public final class SmallFileSystem {
    public let directory: URL
    private(set) var mounted = false

    /// Whether a test may mount one here: running as root with mount(8) (`make test` and CI run as root).
    public static let isPossible = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

    public init?(size: String) throws {
        guard geteuid() == 0 else { return nil }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("fault-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory.path]) == 0 else { return nil }
        mounted = true
    }

    public func remount(readOnly: Bool) -> Bool {
        Self.run("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", directory.path]) == 0
    }

    deinit {
        if mounted { _ = Self.run("/bin/umount", ["-l", directory.path]) }
        try? FileManager.default.removeItem(at: directory)
    }

    public static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
