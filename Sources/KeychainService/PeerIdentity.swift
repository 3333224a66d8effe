internal import CPeerCredentials
import CryptoDispatcher
import Keychain
import Foundation
public import SecurityBase
import Synchronization

/// Who is on the other end of an accepted Unix-socket connection, as the kernel says, never as the caller says:
/// its uid, gid and pid (`SO_PEERCRED`, recorded at connect), its executable (`/proc/<pid>/exe`) and that binary's
/// SHA-256, as macOS's trusted-application objects identify applications.
///
/// What the kernel recorded at connect cannot be changed afterwards; what `/proc` says can (a process may connect
/// and then exec another program). So:
/// - an executable installed setgid (a group of the application's own) is that application only when the gid the
///   kernel recorded at connect is the executable's group: a process that connected first and ran the program
///   afterwards held another gid at connect and is refused. Such a process also runs with the loader in secure
///   mode (no `LD_PRELOAD`) and cannot be traced or read through `/proc` by other processes of its uid:
///   ``applicationGroup`` is then set, and policy entries can require it (``ApplicationPolicy/Entry/group``);
/// - any other executable is taken as read once the connection is accepted, and ``PeerProcess/verify()`` checks
///   before every request that the process is still alive and still runs the same file. Between connect and
///   accept a same-uid process can still exec a program it wants to pass for: without a group of its own an
///   application cannot be told apart from the other processes of its user.
public struct PeerIdentity: Sendable, Hashable, CustomStringConvertible {
    public let uid: UInt32
    public let gid: UInt32
    public let pid: Int32
    /// The executable's path as the kernel reports it (` (deleted)` when it was removed since it started).
    public let executablePath: String
    /// The SHA-256 of the executable's bytes, lower-case hex.
    public let executableSHA256: String
    /// The executable's own group when it is installed setgid and the caller held that group at connect: the one
    /// part of an application's identity the kernel vouches for.
    public let applicationGroup: UInt32?

    public init(
        uid: UInt32, gid: UInt32, pid: Int32, executablePath: String, executableSHA256: String, applicationGroup: UInt32? = nil
    ) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.executablePath = executablePath
        self.executableSHA256 = executableSHA256
        self.applicationGroup = applicationGroup
    }

    public var description: String {
        "uid \(uid) pid \(pid) \(executablePath) sha256:\(executableSHA256.prefix(16))…"
            + (applicationGroup.map { " group \($0)" } ?? "")
    }

    /// Whether the executable is a script interpreter (python, perl, a shell, node, …): every script it runs would
    /// share its identity, so it gets no derived group; only a policy entry grants it groups.
    public var isInterpreter: Bool { Self.isInterpreter(path: executablePath) }

    /// Interpreters by their file name, any version suffix dropped (`python3.11` is `python`), and the dynamic
    /// loader (`ld-linux-x86-64.so.2 PROGRAM` runs any program under the loader's identity).
    static func isInterpreter(path: String) -> Bool {
        let file = (path.hasSuffix(" (deleted)") ? String(path.dropLast(10)) : path).split(separator: "/").last ?? ""
        if file.hasPrefix("ld-linux") || file.hasPrefix("ld.so") || file.hasPrefix("ld-musl") { return true }
        var name = Substring(file)
        while let last = name.last, last.isNumber || last == "." || last == "-" { name = name.dropLast() }
        return interpreters.contains(String(name))
    }

    private static let interpreters: Set<String> = [
        "python", "pypy", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh", "wish", "expect",
        "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox", "env", "java", "jshell", "Rscript",
        "R", "julia", "guile", "gawk", "awk", "mawk", "pwsh",
    ]
}

/// The process behind one connection, held for as long as the connection lasts by a descriptor of its `/proc/<pid>`
/// directory, opened while its pidfd (`SO_PEERPIDFD`: the very process that connected) said it was alive: look-ups
/// through it fail once that process is gone, so a recycled pid cannot impersonate it.
final class PeerProcess: Sendable {
    let identity: PeerIdentity
    /// The process's `/proc/<pid>` directory (`O_PATH`).
    private let procfs: Int32
    /// The executable the process ran when it was identified (device and inode of the file).
    private let executable: FileIdentity

    private init(identity: PeerIdentity, procfs: Int32, executable: FileIdentity) {
        self.identity = identity
        self.procfs = procfs
        self.executable = executable
    }

    deinit { close(procfs) }

    /// The peer of `fd`, an accepted Unix stream socket.
    /// - Throws: ``PeerIdentityError`` when the kernel cannot say, the process is gone before it was read, or its
    ///   setgid executable is not what it ran when it connected.
    static func of(socket fd: Int32) throws -> PeerProcess {
        var uid: uid_t = 0
        var gid: gid_t = 0
        var pid: pid_t = 0
        guard cpeer_credentials(fd, &uid, &gid, &pid) == 0, pid > 0 else {
            throw PeerIdentityError("its credentials are not available (SO_PEERCRED: \(String(cString: strerror(errno))))", uid: nil, pid: nil)
        }
        let pidfd = cpeer_pidfd(fd, pid)
        guard pidfd >= 0 else {
            throw PeerIdentityError("it has no pidfd: \(String(cString: strerror(errno)))", uid: uid, pid: pid)
        }
        defer { close(pidfd) }
        return try identify(uid: uid, gid: gid, pid: pid, pidfd: pidfd)
    }

    /// The process `pid` of `uid`, as a bus daemon names the sender of a message: the daemon recorded the pid from
    /// the kernel when the sender connected. The pidfd is opened from the pid here, so a process that exited and
    /// whose pid was reused between the daemon's record and this call would be taken for it (the caller asks the
    /// daemon afterwards whether the sender is still connected with that pid); and the gid the sender held when it
    /// connected is unknown, so a setgid executable gives no ``PeerIdentity/applicationGroup``.
    /// - Throws: ``PeerIdentityError`` when the process is gone or cannot be read.
    static func of(pid: pid_t, uid: uid_t) throws -> PeerProcess {
        let pidfd = cpeer_pidfd(-1, pid)
        guard pidfd >= 0 else {
            throw PeerIdentityError("it has no pidfd: \(String(cString: strerror(errno)))", uid: uid, pid: pid)
        }
        defer { close(pidfd) }
        return try identify(uid: uid, gid: nil, pid: pid, pidfd: pidfd)
    }

    /// The identity of the process `pidfd` names: its executable, read through its `/proc` entry while the pidfd
    /// says it is alive. `gid` is the group it held when it connected (nil: unknown).
    private static func identify(uid: uid_t, gid: gid_t?, pid: pid_t, pidfd: Int32) throws -> PeerProcess {
        let procfs = cpeer_open_procfs(pid)
        guard procfs >= 0 else {
            throw PeerIdentityError("its /proc entry cannot be opened: \(String(cString: strerror(errno)))", uid: uid, pid: pid)
        }
        do {
            let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? ""
            let file = try ExecutableFile(pid: pid, uid: uid)
            var applicationGroup: UInt32?
            if file.isSetgid, let gid {
                guard gid == file.group else {
                    throw PeerIdentityError(
                        "it held gid \(gid) when it connected, not its setgid executable's \(file.group) (\(path)): it ran that program after connecting",
                        uid: uid, pid: pid)
                }
                applicationGroup = file.group
            }
            // The pidfd names the process that connected: if it has exited, /proc/<pid> (and the directory opened above)
            // may have been another's.
            guard cpidfd_alive(pidfd) != 0 else { throw PeerIdentityError("it exited while it was identified", uid: uid, pid: pid) }
            let identity = PeerIdentity(
                uid: uid, gid: gid ?? UInt32.max, pid: pid, executablePath: path, executableSHA256: file.sha256, applicationGroup: applicationGroup)
            return PeerProcess(identity: identity, procfs: procfs, executable: file.identity)
        } catch {
            close(procfs)
            throw error
        }
    }

    /// Checks, before a request is served, that the process that connected is alive and runs the file it ran when
    /// it was identified: a process that has since exec'd another program (granted or not) is refused.
    func verify() throws {
        // Through the descriptor of the process's own /proc directory: once that process is gone the look-up fails,
        // whoever has its pid now.
        var status = stat()
        guard fstatat(procfs, "exe", &status, 0) == 0 else {
            throw PeerIdentityError("it has exited", uid: identity.uid, pid: identity.pid)
        }
        guard FileIdentity(status) == executable else {
            throw PeerIdentityError("it runs another program than when it connected", uid: identity.uid, pid: identity.pid)
        }
    }
}

/// A file by device and inode.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}

/// What the service reads of a caller's executable, through `/proc/<pid>/exe` (the file the process runs, even
/// when its path now names another or none).
struct ExecutableFile {
    let identity: FileIdentity
    let sha256: String
    /// Installed setgid (and group-executable, so that the bit takes effect): ``group`` is the application's.
    let isSetgid: Bool
    let group: UInt32

    init(pid: Int32, uid: UInt32) throws {
        let fd = open("/proc/\(pid)/exe", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PeerIdentityError("its executable cannot be read: \(String(cString: strerror(errno)))", uid: uid, pid: pid) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw PeerIdentityError("its executable cannot be examined", uid: uid, pid: pid) }
        identity = FileIdentity(status)
        isSetgid = status.st_mode & S_ISGID != 0 && status.st_mode & S_IXGRP != 0
        group = status.st_gid
        let key = DigestKey(
            file: identity, size: Int64(status.st_size), modified: status.st_mtim, changed: status.st_ctim)
        if let known = Self.digests.withLock({ $0[key] }) {
            sha256 = known
            return
        }
        do {
            sha256 = try ItemAccess.Application.sha256(readingFrom: fd)
        } catch {
            throw PeerIdentityError("its executable cannot be read", uid: uid, pid: pid)
        }
        Self.digests.withLock { digests in
            if digests.count >= 1024 { digests.removeAll() }
            digests[key] = sha256
        }
    }

    /// Digests of executables already read, by file identity (device, inode, size, modification and change times:
    /// any write changes the change time, which no caller can set back).
    private static let digests = Mutex<[DigestKey: String]>([:])

    private struct DigestKey: Hashable {
        let file: FileIdentity
        let size: Int64
        let modified: timespec
        let changed: timespec

        static func == (lhs: DigestKey, rhs: DigestKey) -> Bool {
            lhs.file == rhs.file && lhs.size == rhs.size
                && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
                && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(file)
            hasher.combine(size)
            hasher.combine(modified.tv_sec)
            hasher.combine(changed.tv_nsec)
        }
    }
}

extension PeerIdentity {
    /// The SHA-256 of the executable `pid` runs (lower-case hex).
    package static func executableDigest(pid: Int32) throws -> String {
        try ExecutableFile(pid: pid, uid: getuid()).sha256
    }
}

/// Why a peer could not be identified, with what the kernel said of it (for the service's log).
public struct PeerIdentityError: CodedError {
    public typealias Code = ErrorCode<PeerIdentityError>

    public let code: Code
    public let reason: String
    public let uid: UInt32?
    public let pid: Int32?
    public let location: ErrorLocation

    init(_ reason: String, uid: UInt32?, pid: Int32?, file: StaticString = #fileID, line: UInt = #line) {
        code = .notIdentified
        self.reason = reason
        self.uid = uid
        self.pid = pid
        location = ErrorLocation(fileID: file, line: line)
    }

    public var description: String {
        "caller (uid \(uid.map(String.init) ?? "?"), pid \(pid.map(String.init) ?? "?")) not identified: \(reason)"
    }
}

extension ErrorCode where Domain == PeerIdentityError {
    /// The kernel's account of the caller did not identify it as the policy needs.
    public static let notIdentified = Self(name: "notIdentified")
}
