internal import CPeerCredentials
import Foundation
import Keychain
import Synchronization

/// The keychain service behind `securityd`: it owns the keychains and their master keys, one keychain per uid
/// in its own directory (0700; databases and keys 0600), and serves the keychain calls on a Unix socket to
/// callers it identifies from the kernel (``PeerIdentity``), in the access groups its policy grants them
/// (``ApplicationPolicy``). A caller cannot name its own groups: a group outside its grant is
/// `missingEntitlement`, and callers of different uids never share a keychain.
public final class KeychainService: Sendable {
    public struct Configuration: Sendable {
        /// Where the service listens.
        public var socketPath: String
        /// Where the keychains live: `<directory>/<uid>/keychain.db` and its key file.
        public var directory: String
        /// System policy directories (`/etc/securityservices/applications.d`); each caller's uid also has its own,
        /// `<directory>/<uid>/applications.d`.
        public var policyDirectories: [String]
        /// A connection that sends nothing for this long is closed.
        public var idleTimeout: Duration
        /// Connections served at once (each has a thread); one more is closed at accept.
        public var maximumConnections: Int
        /// Connections one uid may hold at once, so that one user cannot take every slot; one more is answered
        /// with an error and closed.
        public var maximumConnectionsPerUser: Int
        /// A message must arrive whole within this long of its first byte.
        public var frameDeadline: Duration
        /// Store pools (one per uid and group list) kept per uid; the least recently used goes first.
        public var maximumPoolsPerUser: Int

        public init(
            socketPath: String, directory: String,
            policyDirectories: [String] = ["/etc/securityservices/applications.d"], idleTimeout: Duration = .seconds(60),
            maximumConnections: Int = 1024, maximumConnectionsPerUser: Int = 256, frameDeadline: Duration = .seconds(10),
            maximumPoolsPerUser: Int = 8
        ) {
            self.socketPath = socketPath
            self.directory = directory
            self.policyDirectories = policyDirectories
            self.idleTimeout = idleTimeout
            self.maximumConnections = maximumConnections
            self.maximumConnectionsPerUser = maximumConnectionsPerUser
            self.frameDeadline = frameDeadline
            self.maximumPoolsPerUser = maximumPoolsPerUser
        }
    }

    public let configuration: Configuration
    private let listener: Int32
    private let pools = Mutex<[StoreKey: PoolEntry]>([:])
    private let stopped = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)
    /// Connections held per uid.
    private let connectionsByUser = Mutex<[uid_t: Int]>([:])
    /// Warnings about policy files, per uid, reported once each.
    private let reported = Mutex<Set<String>>([])

    private struct StoreKey: Hashable {
        let uid: uid_t
        let groups: [String]
    }

    /// Creates the service's directory (0700) and listens on its socket (a stale socket file is replaced).
    /// - Parameter listeningSocket: a socket already bound and listening (systemd's socket activation), used
    ///   instead of binding ``Configuration/socketPath``.
    /// - Throws: ``KeychainError`` `.io` when the directory or the socket cannot be made.
    public init(_ configuration: Configuration, listeningSocket: Int32? = nil) throws {
        self.configuration = configuration
        try Self.makePrivateDirectory(configuration.directory)
        listener = try listeningSocket ?? Self.listen(at: configuration.socketPath)
    }

    deinit {
        close(listener)
    }

    /// Accepts and serves connections until ``stop()``, each on a thread of its own.
    public func run() {
        while !stopped.load(ordering: .relaxed) {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if stopped.load(ordering: .relaxed) { return }
                usleep(10_000)  // out of descriptors: let others close
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let connection = Connection(fd: fd)
            guard connections.add(1, ordering: .relaxed).newValue <= configuration.maximumConnections else {
                connections.subtract(1, ordering: .relaxed)
                continue  // closed as `connection` goes
            }
            var uid: uid_t = 0
            var gid: gid_t = 0
            var pid: pid_t = 0
            guard cpeer_credentials(fd, &uid, &gid, &pid) == 0 else {
                connections.subtract(1, ordering: .relaxed)
                log("refused a caller (uid ?, pid ?): its credentials are not available")
                continue
            }
            let admitted = connectionsByUser.withLock { counts in
                guard counts[uid, default: 0] < configuration.maximumConnectionsPerUser else { return false }
                counts[uid, default: 0] += 1
                return true
            }
            guard admitted else {
                connections.subtract(1, ordering: .relaxed)
                log("refused a connection of uid \(uid) (pid \(pid)): it holds \(configuration.maximumConnectionsPerUser) already")
                KeychainFraming.setTimeout(.milliseconds(100), on: fd)
                try? KeychainFraming.send(
                    KeychainWire.encode(.failure(KeychainError(.io, "too many connections to the keychain service for this user"))), on: fd)
                continue
            }
            Thread.detachNewThread { [self, uid] in
                serve(connection)
                connectionsByUser.withLock { counts in
                    counts[uid, default: 1] -= 1
                    if counts[uid] == 0 { counts[uid] = nil }
                }
                connections.subtract(1, ordering: .relaxed)
            }
        }
    }

    /// Keeps the keys this process holds (master keys, unlocked secrets keys) out of reach of other processes of its
    /// uid and out of core dumps: the process becomes non-dumpable (`PR_SET_DUMPABLE` 0), so neither a core file nor
    /// ptrace, `/proc/<pid>/mem` or `environ` reveals them. `securityd` calls it first; its systemd unit also keeps
    /// its memory out of swap (`MemorySwapMax=0`).
    /// - Throws: ``KeychainError`` `.io` when the kernel refuses.
    public static func protectProcessMemory() throws {
        guard cpeer_forbid_dumps() == 0 else { throw KeychainError(.io, "the process cannot be made non-dumpable", errno: errno) }
    }

    /// Starts ``run()`` on a thread of its own.
    public func start() {
        Thread.detachNewThread { [self] in run() }
    }

    /// Stops accepting (connections being served finish their current request).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(listener, Int32(SHUT_RDWR))
    }

    // MARK: Serving

    /// An accepted socket, closed when released.
    private final class Connection: Sendable {
        let fd: Int32
        init(fd: Int32) { self.fd = fd }
        deinit { close(fd) }
    }

    private func serve(_ connection: Connection) {
        let fd = connection.fd
        KeychainFraming.setTimeout(configuration.idleTimeout, on: fd)
        let peer: PeerProcess
        do {
            peer = try PeerProcess.of(socket: fd)
        } catch {
            refuse(error, on: fd)
            return
        }
        let identity = peer.identity
        if identity.uid == geteuid(), reported.withLock({ $0.insert("same uid \(identity.uid)").inserted }) {
            log("callers of uid \(identity.uid) run as this service does: they can open its keychain files directly, so it isolates nothing from them")
        }
        let granted = accessGroups(for: identity)
        var groups = granted
        // A client's next request often follows its answer within microseconds.
        var frames = FrameReader(fd: fd, spin: .microseconds(50), frameDeadline: configuration.frameDeadline)
        while true {
            let body: [UInt8]
            do {
                guard let received = try frames.next() else { return }
                body = received
            } catch let error as KeychainError {
                // An oversized length: answered, then the connection is closed (the rest cannot be framed).
                if error.code == .parameter { try? KeychainFraming.send(KeychainWire.encode(.failure(error)), on: fd) }
                return
            } catch {
                return
            }
            do {
                try peer.verify()
            } catch {
                refuse(error, on: fd)
                return
            }
            var answer = KeychainWire.encode(respond(to: body, identity: identity, granted: granted, groups: &groups))
            if answer.count > KeychainWire.maximumMessage {
                answer = KeychainWire.encode(
                    .failure(KeychainError(.parameter, "the answer is over the keychain service's message limit: ask for fewer items")))
            }
            do {
                try KeychainFraming.send(answer, on: fd)
            } catch {
                return
            }
        }
    }

    /// Logs a caller that could not be identified (uid, pid, why) and answers it with the reason.
    private func refuse(_ error: any Error, on fd: Int32) {
        log("refused a \(error)")
        let reason = (error as? PeerIdentityError)?.reason ?? "\(error)"
        try? KeychainFraming.send(
            KeychainWire.encode(.failure(KeychainError(.missingEntitlement, "the keychain service cannot identify the caller: \(reason)"))), on: fd)
    }

    private func log(_ message: String) {
        FileHandle.standardError.write(Data("securityd: \(message)\n".utf8))
    }

    /// The answer to one request: validated completely before the store sees it.
    /// - Parameters:
    ///   - granted: every group the caller's policy grants.
    ///   - groups: the groups the connection acts in; a hello naming groups narrows them to those granted.
    func respond(to body: [UInt8], identity: PeerIdentity, granted: [String], groups: inout [String]) -> KeychainWire.Response {
        do {
            let request = try KeychainWire.decodeRequest(body)
            guard !granted.isEmpty else {
                return .failure(
                    KeychainError(
                        .missingEntitlement,
                        "the caller is an interpreter (\(identity.executablePath)): only a policy entry grants it access groups"))
            }
            if case .hello(let requested) = request {
                // Each group once, in the caller's order (the first is where adds go).
                var chosen: [String] = []
                for group in requested.isEmpty ? granted : requested where granted.contains(group) && !chosen.contains(group) {
                    chosen.append(group)
                }
                guard !chosen.isEmpty else {
                    return .failure(KeychainError(.missingEntitlement, "the caller is granted none of the access groups it asked for"))
                }
                groups = chosen
                return .groups(chosen)
            }
            // Items' access control lists are checked against the caller the kernel named, not this process.
            let application = ItemAccess.Application(path: identity.executablePath, sha256: identity.executableSHA256)
            return try ItemAccess.$accessor.withValue(application) {
                try pool(uid: identity.uid, groups: groups).withStore { store in try perform(request, on: store, groups: groups) }
            }
        } catch let error as KeychainError {
            return .failure(error)
        } catch {
            return .failure(KeychainError(.io, "the keychain service failed"))
        }
    }

    /// One request on one of the caller's stores.
    private func perform(_ request: KeychainWire.Request, on store: KeychainStore, groups: [String]) throws -> KeychainWire.Response {
        switch request {
        case .hello: return .groups(groups)
        case .addIdentity(let certificate, let certificateData, let key, let keyData, let returning):
            let item = try store.addIdentity(
                certificate: (certificate, certificateData), privateKey: (key, keyData),
                returning: HeldKeys.storeReturning(.identity, returning))
            return .item(HeldKeys.seal(item, asked: returning))
        case .add(let itemClass, let attributes, let data, let returning):
            let item = try store.add(itemClass, attributes: attributes, data: data, returning: HeldKeys.storeReturning(itemClass, returning))
            return .item(HeldKeys.seal(item, asked: returning))
        case .addItems(let items, let conditions):
            return .added(try store.add(items, unlessAnyMatches: conditions))
        case .find(let query):
            return .items(try store.find(HeldKeys.storeQuery(query)).map { HeldKeys.seal($0, asked: query.returning) })
        case .update(let query, let attributes, let data):
            try HeldKeys.checkUpdate(query, attributes: attributes, data: data, on: store)
            return .count(try store.update(query, attributes: attributes, data: data))
        case .delete(let query):
            return .count(try store.delete(query))
        case .keyOperation(let kind, let reference, let algorithm, let input):
            return .bytes(try PrivateKeyOperations.perform(kind, reference: reference, algorithm: algorithm, input: input, on: store))
        case .generateKey(let keyType, let bits, let attributes, let returning):
            let item = try PrivateKeyOperations.generate(keyType: keyType, bits: bits, attributes: attributes, returning: returning, on: store)
            return .item(HeldKeys.seal(item, asked: returning))
        case .keychainLock(let lock):
            // The caller's keychain is one file per uid: its lock state is held here for every process of the uid.
            return try store.serveLockRequest(lock)
        }
    }

    /// The caller's groups: from the system policy and the per-user policy of the caller's uid
    /// (`<directory>/<uid>/applications.d`, which only the service can write: a policy a caller's own processes
    /// could edit would let any of them grant itself another application's groups).
    func accessGroups(for identity: PeerIdentity) -> [String] {
        let userDirectory = ((configuration.directory as NSString).appendingPathComponent(String(identity.uid)) as NSString)
            .appendingPathComponent("applications.d")
        // The system policy must be root's: a directory another user could write would let that user grant itself
        // any application's groups.
        let (system, systemWarnings) = ApplicationPolicy.load(directories: configuration.policyDirectories, requireOwner: 0)
        let (user, userWarnings) = ApplicationPolicy.load(directories: [userDirectory], requireOwner: geteuid())
        report(systemWarnings + userWarnings)
        return ApplicationPolicy(entries: system.entries + user.entries).accessGroups(for: identity)
    }

    private func report(_ warnings: [String]) {
        for warning in warnings where reported.withLock({ $0.insert(warning).inserted }) { log(warning) }
    }

    /// The stores of one uid and group list: each request takes one of its own (SQLite readers then run side by
    /// side on their own connections, writers queue on SQLite's lock), at most ``StorePool/capacity``, made on
    /// demand and kept. A uid keeps at most ``Configuration/maximumPoolsPerUser`` pools: a new one replaces the
    /// least recently used (requests in flight finish on it; its stores close when the last one returns).
    private func pool(uid: uid_t, groups: [String]) throws -> StorePool {
        let key = StoreKey(uid: uid, groups: groups)
        let now = ContinuousClock.now
        if let pool = pools.withLock({ pools -> StorePool? in
            pools[key]?.lastUsed = now
            return pools[key]?.pool
        }) {
            return pool
        }
        let directory = (configuration.directory as NSString).appendingPathComponent(String(uid))
        try Self.makePrivateDirectory(directory)
        let path = (directory as NSString).appendingPathComponent("keychain.db")
        let pool = StorePool { try KeychainStore(path: path, accessGroups: groups) }
        return pools.withLock { pools in
            if let existing = pools[key] { return existing.pool }
            // Pools idle past the idle timeout go, then this uid's oldest while it has too many.
            for (stale, entry) in pools where now - entry.lastUsed > configuration.idleTimeout { pools[stale] = nil }
            var own = pools.filter { $0.key.uid == uid }
            while own.count >= configuration.maximumPoolsPerUser, let oldest = own.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                pools[oldest.key] = nil
                own[oldest.key] = nil
            }
            pools[key] = PoolEntry(pool: pool, lastUsed: now)
            return pool
        }
    }

    /// Store pools kept, per uid, for tests.
    package func poolCount(uid: UInt32) -> Int { pools.withLock { $0.keys.filter { $0.uid == uid }.count } }

    private struct PoolEntry {
        let pool: StorePool
        var lastUsed: ContinuousClock.Instant
    }

    private final class StorePool: @unchecked Sendable {
        // @unchecked: `idle` is only touched under `idleLock`.
        static let capacity = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
        private let make: @Sendable () throws -> KeychainStore
        /// The stores not in use. Behind a pthread mutex (NSLock), not `Mutex`: the requests that share them run on
        /// the service's plain threads, and ThreadSanitizer does not see the standard library's futex lock once a
        /// thread waits in it (with 64 clients it reported the list as raced); it does see pthread's.
        private let idleLock = NSLock()
        private var idle: [KeychainStore] = []
        private let slots = DispatchSemaphore(value: capacity)

        init(make: @escaping @Sendable () throws -> KeychainStore) { self.make = make }

        func withStore<R>(_ body: (KeychainStore) throws -> R) throws -> R {
            slots.wait()
            defer { slots.signal() }
            let store = try idleLock.withLock({ idle.popLast() }) ?? make()
            defer { idleLock.withLock { idle.append(store) } }
            return try body(store)
        }
    }

    // MARK: Set-up

    /// Creates `path` 0700 when missing; an existing one must be a directory that only its owner can enter.
    static func makePrivateDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw KeychainError(.io, "cannot create the directory \(path)", errno: errno)
        }
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw KeychainError(.io, "\(path) is not a directory")
        }
        guard status.st_uid == geteuid() else { throw KeychainError(.io, "\(path) belongs to another user") }
        if status.st_mode & 0o077 != 0, chmod(path, 0o700) != 0 {
            throw KeychainError(.io, "\(path) is open to others and cannot be closed", errno: errno)
        }
    }

    /// A Unix stream socket listening at `path`, which anyone may connect to (the service identifies them). Its
    /// directory must belong to this process's uid and be writable by no one else: in a directory another user
    /// can write, that user could have put its own socket there first, or replace this one.
    static func listen(at path: String) throws -> Int32 {
        var status = stat()
        let parent = (path as NSString).deletingLastPathComponent
        guard stat(parent.isEmpty ? "." : parent, &status) == 0 else {
            throw KeychainError(.io, "the socket's directory \(parent) cannot be examined", errno: errno)
        }
        guard status.st_uid == geteuid(), status.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw KeychainError(.io, "the socket's directory \(parent) must belong to uid \(geteuid()) and be writable by no one else")
        }
        if lstat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFSOCK else { throw KeychainError(.io, "\(path) exists and is not a socket") }
            unlink(path)
        }
        let fd = try UnixSocket.open(path, bind, failure: "cannot listen at \(path)")
        guard chmod(path, 0o666) == 0, Glibc.listen(fd, 128) == 0 else {
            let error = errno
            close(fd)
            throw KeychainError(.io, "cannot listen at \(path)", errno: error)
        }
        return fd
    }
}
