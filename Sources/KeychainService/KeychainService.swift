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

        public init(
            socketPath: String, directory: String,
            policyDirectories: [String] = ["/etc/securityservices/applications.d"], idleTimeout: Duration = .seconds(60),
            maximumConnections: Int = 1024
        ) {
            self.socketPath = socketPath
            self.directory = directory
            self.policyDirectories = policyDirectories
            self.idleTimeout = idleTimeout
            self.maximumConnections = maximumConnections
        }
    }

    public let configuration: Configuration
    private let listener: Int32
    private let pools = Mutex<[StoreKey: StorePool]>([:])
    private let stopped = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)
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
            Thread.detachNewThread { [self] in
                serve(connection)
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
        let identity: PeerIdentity
        do {
            identity = try PeerIdentity.of(socket: fd)
        } catch {
            try? KeychainFraming.send(KeychainWire.encode(.failure(KeychainError(.io, "the caller cannot be identified"))), on: fd)
            return
        }
        let granted = accessGroups(for: identity)
        var groups = granted
        // A client's next request often follows its answer within microseconds.
        var frames = FrameReader(fd: fd, spin: .microseconds(50))
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
            let response = respond(to: body, identity: identity, granted: granted, groups: &groups)
            do {
                try KeychainFraming.send(KeychainWire.encode(response), on: fd)
            } catch {
                return
            }
        }
    }

    /// The answer to one request: validated completely before the store sees it.
    /// - Parameters:
    ///   - granted: every group the caller's policy grants.
    ///   - groups: the groups the connection acts in; a hello naming groups narrows them to those granted.
    func respond(to body: [UInt8], identity: PeerIdentity, granted: [String], groups: inout [String]) -> KeychainWire.Response {
        do {
            let request = try KeychainWire.decodeRequest(body)
            if case .hello(let requested) = request {
                let chosen = requested.isEmpty ? granted : requested.filter { granted.contains($0) }
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
        let (system, systemWarnings) = ApplicationPolicy.load(directories: configuration.policyDirectories)
        let (user, userWarnings) = ApplicationPolicy.load(directories: [userDirectory], requireOwner: geteuid())
        report(systemWarnings + userWarnings)
        return ApplicationPolicy(entries: system.entries + user.entries).accessGroups(for: identity)
    }

    private func report(_ warnings: [String]) {
        for warning in warnings where reported.withLock({ $0.insert(warning).inserted }) {
            FileHandle.standardError.write(Data("securityd: \(warning)\n".utf8))
        }
    }

    /// The stores of one uid and group set: each request takes one of its own (SQLite readers then run side by
    /// side on their own connections, writers queue on SQLite's lock), at most ``StorePool/capacity``, made on
    /// demand and kept.
    private func pool(uid: uid_t, groups: [String]) throws -> StorePool {
        let key = StoreKey(uid: uid, groups: groups)
        if let pool = pools.withLock({ $0[key] }) { return pool }
        let directory = (configuration.directory as NSString).appendingPathComponent(String(uid))
        try Self.makePrivateDirectory(directory)
        let path = (directory as NSString).appendingPathComponent("keychain.db")
        let pool = StorePool { try KeychainStore(path: path, accessGroups: groups) }
        return pools.withLock { pools in
            if let existing = pools[key] { return existing }
            pools[key] = pool
            return pool
        }
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

    /// A Unix stream socket listening at `path`, which anyone may connect to (the service identifies them).
    static func listen(at path: String) throws -> Int32 {
        var status = stat()
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
