#if canImport(Glibc)
public import Glibc
private let systemWrite = Glibc.write
private let systemRead = Glibc.read
#elseif canImport(Musl)
public import Musl
private let systemWrite = Musl.write
private let systemRead = Musl.read
#endif
public import SecurityBase

/// Writing a whole file so that a crash leaves either the old file or the new one, never a part: every file the
/// project writes (keychain master keys, backups, trust settings, dispatch profiles) goes through here.
///
/// The bytes go to a new file of this process's own in the same directory (a random name, `O_EXCL | O_NOFOLLOW`:
/// nothing planted at a guessable name receives them), are written whole (`EINTR` and short writes continued)
/// and `fsync`ed; the file then takes its name, and the directory is `fsync`ed so the name survives a crash too.
/// On any failure the temporary file is removed and the destination is as it was.
public enum DurableFile {
    /// How the new file takes its name.
    public enum Placement: Sendable {
        /// `rename(2)`: replaces what is there, atomically.
        case replace
        /// `link(2)`: never replaces; when a file is already there, it is kept and ``write(_:to:mode:placement:)``
        /// returns `false`. Of several processes racing to create one file, exactly one wins.
        case createOnly
    }

    /// Writes `bytes` to `path` with permissions `mode`.
    /// - Returns: `true` when the file now holds `bytes`; `false` only for `.createOnly` when the file existed.
    /// - Throws: ``DurableFileError`` naming the step that failed and its errno.
    @discardableResult
    public static func write(
        _ bytes: UnsafeRawBufferPointer, to path: String, mode: mode_t = 0o600, placement: Placement = .replace
    ) throws(DurableFileError) -> Bool {
        let directory = directoryName(of: path)
        let temporary = path + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw DurableFileError(.create, errno) }
        var linked = false
        defer { if placement == .createOnly || !linked { unlink(temporary) } }
        do {
            defer { close(fd) }
            try writeAll(fd, bytes)
            guard fsync(fd) == 0 else { throw DurableFileError(.sync, errno) }
        }
        switch placement {
        case .replace:
            guard rename(temporary, path) == 0 else { throw DurableFileError(.name, errno) }
            linked = true
        case .createOnly:
            guard link(temporary, path) == 0 else {
                if errno == EEXIST { return false }
                throw DurableFileError(.name, errno)
            }
        }
        try syncDirectory(directory)
        return true
    }

    /// `fsync`s a directory, so the names created or renamed in it survive a crash.
    public static func syncDirectory(_ path: String) throws(DurableFileError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw DurableFileError(.syncDirectory, errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw DurableFileError(.syncDirectory, errno) }
    }

    /// Writes all of `bytes` to `fd`, continuing after `EINTR` and short writes.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(DurableFileError) {
        guard let base = bytes.baseAddress else { return }
        var written = 0
        while written < bytes.count {
            let count = systemWrite(fd, base + written, bytes.count - written)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw DurableFileError(.write, count < 0 ? errno : EIO) }
            written += count
        }
    }

    /// The whole of the file at `path`, read with `read(2)` (retried on `EINTR`), at most `maximumLength` bytes.
    /// (Foundation's `Data(contentsOf:)` leaks a page each time it reads an empty file, which a fuzz run found;
    /// and a file read from input must have a bound before it is allocated.)
    /// - Throws: ``DurableFileError`` `.open` with its errno (`ENOENT` for a missing file), `.read` with its errno,
    ///   or `.read` with `EFBIG` when the file is longer than `maximumLength`.
    public static func read(_ path: String, maximumLength: Int = 64 << 20) throws(DurableFileError) -> [UInt8] {
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw DurableFileError(.open, errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw DurableFileError(.read, errno) }
            if count == 0 { return bytes }
            guard bytes.count + count <= maximumLength else { throw DurableFileError(.read, EFBIG) }
            bytes += chunk[..<count]
        }
    }

    private static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Why a ``DurableFile`` write or read failed: the step, and the errno it failed with.
public struct DurableFileError: CodedError {
    public typealias Code = Step

    public enum Step: String, Sendable, CustomStringConvertible {
        case open = "open the file"
        case read = "read the file"
        case create = "create the temporary file"
        case write = "write"
        case sync = "sync the file"
        case name = "give the file its name"
        case syncDirectory = "sync the directory"

        public var description: String { rawValue }
    }

    public let step: Step
    public let errno: Int32
    public let location: ErrorLocation

    public init(_ step: Step, _ errno: Int32, file: StaticString = #fileID, line: UInt = #line) {
        self.step = step
        self.errno = errno
        location = ErrorLocation(fileID: file, line: line)
    }

    /// The step that failed: equal errors failed at the same step.
    public var code: Step { step }
    public var reason: String { "cannot \(step.rawValue): \(String(cString: strerror(errno)))" }
    public var description: String { reason }
}
