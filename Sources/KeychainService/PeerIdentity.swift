internal import CPeerCredentials
import CryptoContract
import CryptoDispatcher
import Keychain
import Foundation
import Synchronization

/// Who is on the other end of an accepted Unix-socket connection, as the kernel says, never as the caller says:
/// its uid, gid and pid (`SO_PEERCRED`, taken at connect), its executable (`/proc/<pid>/exe`) and that binary's
/// SHA-256, as macOS's trusted-application objects identify applications. A pidfd (`SO_PEERPIDFD` where the
/// kernel has it, else `pidfd_open` right after accept) is held while the executable is read, and the process is
/// checked to be alive through it afterwards, so a pid recycled meanwhile cannot lend another program's identity.
public struct PeerIdentity: Sendable, Hashable, CustomStringConvertible {
    public let uid: UInt32
    public let gid: UInt32
    public let pid: Int32
    /// The executable's path as the kernel reports it (` (deleted)` when it was removed since it started).
    public let executablePath: String
    /// The SHA-256 of the executable's bytes, lower-case hex.
    public let executableSHA256: String

    public init(uid: UInt32, gid: UInt32, pid: Int32, executablePath: String, executableSHA256: String) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.executablePath = executablePath
        self.executableSHA256 = executableSHA256
    }

    public var description: String { "uid \(uid) pid \(pid) \(executablePath) sha256:\(executableSHA256.prefix(16))…" }

    /// The identity of the peer of `fd`, an accepted Unix stream socket.
    /// - Throws: ``PeerIdentityError`` when the kernel cannot say, or the process is gone before it was read.
    public static func of(socket fd: Int32) throws -> PeerIdentity {
        var uid: uid_t = 0
        var gid: gid_t = 0
        var pid: pid_t = 0
        guard cpeer_credentials(fd, &uid, &gid, &pid) == 0, pid > 0 else {
            throw PeerIdentityError("the peer's credentials are not available (SO_PEERCRED: \(String(cString: strerror(errno))))")
        }
        let pidfd = cpeer_pidfd(fd, pid)
        guard pidfd >= 0 else { throw PeerIdentityError("the peer (pid \(pid)) is gone: \(String(cString: strerror(errno)))") }
        defer { close(pidfd) }
        let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? ""
        let digest = try executableDigest(pid: pid)
        // The pidfd names the process that connected: if it has exited, /proc/<pid> may have been another's.
        guard cpidfd_alive(pidfd) != 0 else { throw PeerIdentityError("the peer (pid \(pid)) exited while it was identified") }
        return PeerIdentity(uid: uid, gid: gid, pid: pid, executablePath: path, executableSHA256: digest)
    }

    /// Digests of executables already read, by file identity (device, inode, size, modification and change times:
    /// any write changes the change time, which no caller can set back).
    private static let digests = Mutex<[FileKey: String]>([:])

    private struct FileKey: Hashable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modified: timespec
        let changed: timespec

        static func == (lhs: FileKey, rhs: FileKey) -> Bool {
            lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size
                && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
                && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(device)
            hasher.combine(inode)
            hasher.combine(size)
            hasher.combine(modified.tv_sec)
            hasher.combine(changed.tv_nsec)
        }
    }

    /// The SHA-256 of the executable `pid` runs (lower-case hex), read through `/proc/<pid>/exe` (the file the
    /// process runs, even when its path now names another or none).
    package static func executableDigest(pid: Int32) throws -> String {
        let fd = open("/proc/\(pid)/exe", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PeerIdentityError("the peer's executable cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw PeerIdentityError("the peer's executable cannot be examined") }
        let key = FileKey(
            device: UInt64(status.st_dev), inode: UInt64(status.st_ino), size: Int64(status.st_size), modified: status.st_mtim,
            changed: status.st_ctim)
        if let known = digests.withLock({ $0[key] }) { return known }
        let hex: String
        do {
            hex = try ItemAccess.Application.sha256(readingFrom: fd)
        } catch {
            throw PeerIdentityError("the peer's executable cannot be read")
        }
        digests.withLock { digests in
            if digests.count >= 1024 { digests.removeAll() }
            digests[key] = hex
        }
        return hex
    }
}

/// Why a peer could not be identified.
public struct PeerIdentityError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
