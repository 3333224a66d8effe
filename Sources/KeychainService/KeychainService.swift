internal import CEpoll
internal import CPeerCredentials
import KeychainWire
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
        /// Connections served at once; one more is answered with an error and closed.
        public var maximumConnections: Int
        /// Connections one uid may hold at once, so that one user cannot take every slot; one more is answered
        /// with an error and closed.
        public var maximumConnectionsPerUser: Int
        /// A message must arrive whole within this long of its first byte.
        public var frameDeadline: Duration
        /// Store pools (one per uid, keychain and group list) kept per uid; the least recently used goes first.
        public var maximumPoolsPerUser: Int
        /// Bytes the keychains of one uid may hold on disk; a write past them is `diskFull`.
        public var maximumStoredBytesPerUser: Int64

        public init(
            socketPath: String, directory: String,
            policyDirectories: [String] = ["/etc/securityservices/applications.d"], idleTimeout: Duration = .seconds(60),
            maximumConnections: Int = 1024, maximumConnectionsPerUser: Int = 256, frameDeadline: Duration = .seconds(10),
            maximumPoolsPerUser: Int = 8, maximumStoredBytesPerUser: Int64 = 256 << 20
        ) {
            self.socketPath = socketPath
            self.directory = directory
            self.policyDirectories = policyDirectories
            self.idleTimeout = idleTimeout
            self.maximumConnections = maximumConnections
            self.maximumConnectionsPerUser = maximumConnectionsPerUser
            self.frameDeadline = frameDeadline
            self.maximumPoolsPerUser = maximumPoolsPerUser
            self.maximumStoredBytesPerUser = maximumStoredBytesPerUser
        }
    }

    public let configuration: Configuration
    private let listener: Int32
    private let loop: ServiceEventLoop
    /// The connections being served, by descriptor.
    private let connections = Mutex<[Int32: ServiceConnection]>([:])
    private let pools = Mutex<[StoreKey: PoolEntry]>([:])
    private let stopped = Atomic<Bool>(false)
    /// Connections held per uid.
    private let connectionsByUser = Mutex<[uid_t: Int]>([:])
    /// When the deadlines are next due to be checked (``ServiceClock``).
    private let nextSweep = Atomic<Int64>(0)
    /// Threads polling a connection for its next request.
    private let pollers = Atomic<Int>(0)
    /// Threads serving a connection's turn now.
    private let serving = Atomic<Int>(0)
    /// Warnings about policy files, per uid, reported once each.
    private let reported = Mutex<Set<String>>([])

    private struct StoreKey: Hashable {
        let uid: uid_t
        let keychain: String?
        let groups: [String]
    }

    /// Threads serving the connections: requests wait on SQLite's lock and on fsync, so more than the processors.
    public static let threads = max(8, 4 * ProcessInfo.processInfo.activeProcessorCount)

    /// Creates the service's directory (0700) and listens on its socket (a stale socket file is replaced).
    /// - Parameter listeningSocket: a socket already bound and listening (systemd's socket activation), used
    ///   instead of binding ``Configuration/socketPath``.
    /// - Throws: ``KeychainError`` `.io` when the directory or the socket cannot be made.
    public init(_ configuration: Configuration, listeningSocket: Int32? = nil) throws {
        self.configuration = configuration
        try Self.makePrivateDirectory(configuration.directory)
        loop = try ServiceEventLoop()
        listener = try listeningSocket ?? Self.listen(at: configuration.socketPath)
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        guard loop.watch(listener, for: CEPOLL_IN) else {
            let error = errno
            close(listener)
            throw KeychainError(.io, "the service cannot watch its socket", errno: error)
        }
    }

    deinit {
        close(listener)
    }

    /// Serves connections until ``stop()``, on this thread and ``threads`` - 1 more.
    public func run() {
        for _ in 1..<Self.threads {
            Thread.detachNewThread { [self] in work() }
        }
        work()
    }

    /// One serving thread: takes the next ready descriptor, serves it, and checks the deadlines when due.
    private func work() {
        let scratch = ReceiveBuffer()
        while !stopped.load(ordering: .relaxed) {
            if let event = loop.next(timeout: 1000) { handle(event.fd, scratch) }
            sweepIfDue()
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

    /// Stops serving: the threads return, and every connection is shut down (its peer sees the end of the stream).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        loop.stop()
        shutdown(listener, Int32(SHUT_RDWR))
        for connection in connections.withLock({ Array($0.values) }) { shutdown(connection.fd, Int32(SHUT_RDWR)) }
    }

    // MARK: Serving

    private static let inputEvents = CEPOLL_IN | CEPOLL_RDHUP

    private func handle(_ fd: Int32, _ scratch: ReceiveBuffer) {
        if fd == listener {
            acceptAll()
            loop.rearm(listener, for: CEPOLL_IN)
            return
        }
        guard let connection = connections.withLock({ $0[fd] }) else { return }
        serve(connection, scratch)
    }

    /// Turns of `connection` while it has requests, and then what it waits for. After an answer the thread polls the
    /// connection for its next request for a while (at most one thread per processor polls), before it gives the
    /// connection back to the loop: a client's next request often follows its answer within microseconds, and a
    /// request that waits for the loop costs a blocked thread's wake-up (``FrameReader`` says why polling pays).
    private func serve(_ connection: ServiceConnection, _ scratch: ReceiveBuffer) {
        var next = turn(connection, scratch)
        while case .input = next, awaitRequest(on: connection.fd) { next = turn(connection, scratch) }
        switch next {
        case .input: loop.rearm(connection.fd, for: Self.inputEvents)
        case .output: loop.rearm(connection.fd, for: CEPOLL_OUT)
        case .close: end(connection)
        case .later(let delay):
            // The answer waits in the connection, which is not watched meanwhile; then a turn sends it (and serves
            // what came in since).
            let nanoseconds = Int(ServiceClock.nanoseconds(delay))
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
                guard !stopped.load(ordering: .relaxed) else { return }
                serve(connection, ReceiveBuffer())
            }
        }
    }

    /// Polls `fd` for up to 50 µs for more to read, when a polling slot is free and no other thread is serving (a busy
    /// service has work for the processor); whether something came.
    private func awaitRequest(on fd: Int32) -> Bool {
        guard serving.load(ordering: .relaxed) == 0 else { return false }
        guard pollers.add(1, ordering: .relaxed).newValue <= Self.maximumPollers else {
            pollers.subtract(1, ordering: .relaxed)
            return false
        }
        defer { pollers.subtract(1, ordering: .relaxed) }
        let end = ContinuousClock.now + .microseconds(50)
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while !stopped.load(ordering: .relaxed) {
            if poll(&entry, 1, 0) > 0 { return true }
            guard ContinuousClock.now < end else { return false }
            sched_yield()
        }
        return false
    }

    private static let maximumPollers = ProcessInfo.processInfo.activeProcessorCount

    /// One turn of `connection`.
    private func turn(_ connection: ServiceConnection, _ scratch: ReceiveBuffer) -> ServiceConnection.Next {
        serving.add(1, ordering: .relaxed)
        defer { serving.subtract(1, ordering: .relaxed) }
        return connection.turn(scratch: scratch) { body, session in
            do {
                try connection.peer.verify()
            } catch {
                return .refusal(refusal(error))
            }
            let (response, delay) = respond(to: body, identity: connection.peer.identity, session: &session)
            return delay > .zero ? .later(response, after: delay) : .answer(response)
        }
    }

    /// Accepts every pending connection: within the limits (in all, and per uid), identified (a caller that cannot
    /// be is logged and answered), then watched.
    private func acceptAll() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE { log("out of descriptors: a connection waits") }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var uid: uid_t = 0
            var gid: gid_t = 0
            var pid: pid_t = 0
            guard cpeer_credentials(fd, &uid, &gid, &pid) == 0 else {
                log("refused a caller (uid ?, pid ?): its credentials are not available")
                close(fd)
                continue
            }
            let admitted = connectionsByUser.withLock { counts -> String? in
                guard counts.values.reduce(0, +) < configuration.maximumConnections else { return "the service serves its maximum of connections" }
                guard counts[uid, default: 0] < configuration.maximumConnectionsPerUser else {
                    return "too many connections to the keychain service for this user"
                }
                counts[uid, default: 0] += 1
                return nil
            }
            if let refusal = admitted {
                log("refused a connection of uid \(uid) (pid \(pid)): \(refusal)")
                answer(.failure(KeychainError(.io, refusal)), on: fd)
                close(fd)
                continue
            }
            let peer: PeerProcess
            do {
                peer = try PeerProcess.of(socket: fd)
            } catch {
                refuse(error, on: fd)
                close(fd)
                release(uid: uid)
                continue
            }
            let identity = peer.identity
            if identity.uid == geteuid(), reported.withLock({ $0.insert("same uid \(identity.uid)").inserted }) {
                log("callers of uid \(identity.uid) run as this service does: they can open its keychain files directly, so it isolates nothing from them")
            }
            let connection = ServiceConnection(fd: fd, peer: peer, granted: accessGroups(for: identity))
            connections.withLock { $0[fd] = connection }
            if !loop.watch(fd, for: Self.inputEvents) { end(connection) }
        }
    }

    private func release(uid: uid_t) {
        connectionsByUser.withLock { counts in
            counts[uid, default: 1] -= 1
            if counts[uid] == 0 { counts[uid] = nil }
        }
    }

    /// Stops serving `connection` (its descriptor closes once the last reference to it goes).
    private func end(_ connection: ServiceConnection) {
        loop.forget(connection.fd)
        let removed = connections.withLock { $0.removeValue(forKey: connection.fd) } != nil
        if removed { release(uid: connection.peer.identity.uid) }
    }

    /// Shuts down the connections past a deadline (a request not whole within the frame deadline, an answer not taken
    /// within it, or nothing at all within the idle timeout): the thread that takes their next event ends them. Once
    /// a second, by whichever thread finds it due.
    private func sweepIfDue() {
        let now = ServiceClock.now
        let due = nextSweep.load(ordering: .relaxed)
        guard now >= due, nextSweep.compareExchange(expected: due, desired: now + 1_000_000_000, ordering: .relaxed).exchanged else { return }
        let frameDeadline = ServiceClock.nanoseconds(configuration.frameDeadline)
        let idleTimeout = ServiceClock.nanoseconds(configuration.idleTimeout)
        for connection in connections.withLock({ Array($0.values) }) {
            let receiving = connection.receivingSince.load(ordering: .relaxed)
            let sending = connection.sendingSince.load(ordering: .relaxed)
            let late =
                (receiving != 0 && now - receiving > frameDeadline) || (sending != 0 && now - sending > frameDeadline)
                || (receiving == 0 && sending == 0 && now - connection.lastActivity.load(ordering: .relaxed) > idleTimeout)
            if late { shutdown(connection.fd, Int32(SHUT_RDWR)) }
        }
        evictIdlePools()
    }

    /// Logs a caller that could not be identified (uid, pid, why) and answers it with the reason.
    private func refuse(_ error: any Error, on fd: Int32) {
        answer(refusal(error), on: fd)
    }

    /// Logs a caller that could not be identified (uid, pid, why); the answer it gets.
    private func refusal(_ error: any Error) -> KeychainWire.Response {
        log("refused a \(error)")
        let reason = (error as? PeerIdentityError)?.reason ?? "\(error)"
        return .failure(KeychainError(.missingEntitlement, "the keychain service cannot identify the caller: \(reason)"))
    }

    /// Sends a short answer on a connection about to be closed, as far as the socket takes it without waiting.
    private func answer(_ response: KeychainWire.Response, on fd: Int32) {
        let frame = KeychainFraming.frame(KeychainWire.encode(response))
        _ = frame.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    private func log(_ message: String) {
        FileHandle.standardError.write(Data("securityd: \(message)\n".utf8))
    }

    /// What a connection acts in: the groups granted, those a hello chose, and the keychain it opened (nil: the
    /// caller's default keychain).
    struct Session {
        var granted: [String]
        var groups: [String]
        var keychain: String?
    }

    /// The answer to one request, validated completely before the store sees it, and how long to wait before giving
    /// it (a wrong password's delay: the connection waits, no thread does).
    func respond(to body: [UInt8], identity: PeerIdentity, session: inout Session) -> (KeychainWire.Response, delay: Duration) {
        do {
            let request = try KeychainWire.decodeRequest(body)
            guard !session.granted.isEmpty else {
                return (
                    .failure(
                        KeychainError(
                            .missingEntitlement,
                            "the caller is an interpreter (\(identity.executablePath)): only a policy entry grants it access groups")),
                    .zero
                )
            }
            switch request {
            case .hello(let requested):
                // Each group once, in the caller's order (the first is where adds go).
                var chosen: [String] = []
                for group in requested.isEmpty ? session.granted : requested where session.granted.contains(group) && !chosen.contains(group) {
                    chosen.append(group)
                }
                guard !chosen.isEmpty else {
                    return (.failure(KeychainError(.missingEntitlement, "the caller is granted none of the access groups it asked for")), .zero)
                }
                session.groups = chosen
                return (.groups(chosen), .zero)
            case .openKeychain(let name, let create):
                let path = try keychainPath(uid: identity.uid, name: name)
                if !FileManager.default.fileExists(atPath: path) {
                    guard create else { throw KeychainError(.itemNotFound, "the caller has no keychain of that name") }
                    try checkQuota(uid: identity.uid)
                }
                session.keychain = name
            case .deleteKeychain(let name):
                let path = try keychainPath(uid: identity.uid, name: name)
                guard FileManager.default.fileExists(atPath: path) else { throw KeychainError(.itemNotFound, "the caller has no keychain of that name") }
                pools.withLock { pools in
                    for key in pools.keys where key.uid == identity.uid && key.keychain == name { pools[key] = nil }
                }
                for suffix in ["", "-wal", "-shm", ".key"] { unlink(path + suffix) }
                if session.keychain == name { session.keychain = nil }
                return (.count(1), .zero)
            case .add, .addItems, .addIdentity, .update, .generateKey, .keychainLock(.setPassword):
                try checkQuota(uid: identity.uid)
            default:
                break
            }
            // Items' access control lists are checked against the caller the kernel named, not this process.
            let application = ItemAccess.Application(path: identity.executablePath, sha256: identity.executableSHA256)
            let groups = session.groups
            let pool = try pool(uid: identity.uid, keychain: session.keychain, groups: groups)
            return try ItemAccess.$accessor.withValue(application) {
                try pool.withStore { store in
                    do {
                        return (try perform(request, on: store, groups: groups), .zero)
                    } catch let error as KeychainError where error.code == .authFailed {
                        // Wrong passwords in a row, counted for the keychain whichever process gave them.
                        return (.failure(error), EmbeddedKeychain.passwordFailureDelay(store.consecutivePasswordFailures))
                    }
                }
            }
        } catch let error as KeychainError {
            return (.failure(error), .zero)
        } catch {
            return (.failure(KeychainError(.io, "the keychain service failed")), .zero)
        }
    }

    /// One request on one of the caller's stores.
    private func perform(_ request: KeychainWire.Request, on store: EmbeddedKeychain, groups: [String]) throws -> KeychainWire.Response {
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
        case .keyOperation(let kind, let reference, let algorithm, let input, let authentication):
            return .bytes(
                try PrivateKeyOperations.perform(kind, reference: reference, algorithm: algorithm, input: input, authentication: authentication, on: store))
        case .generateKey(let keyType, let bits, let attributes, let returning):
            let item = try PrivateKeyOperations.generate(keyType: keyType, bits: bits, attributes: attributes, returning: returning, on: store)
            return .item(HeldKeys.seal(item, asked: returning))
        case .keychainLock(let lock):
            // The keychain's lock state is held here for every process of the uid.
            return try store.serveLockRequest(lock)
        case .openKeychain:
            return try store.serveLockRequest(.status)
        case .deleteKeychain:
            return .count(0)  // answered in respond
        }
    }

    /// The folder of one uid's keychains, `<directory>/<uid>`.
    func userDirectory(_ uid: uid_t) -> String {
        (configuration.directory as NSString).appendingPathComponent(String(uid))
    }

    /// The file of the caller's keychain `name` (nil: its default keychain).
    /// - Throws: ``KeychainError`` `.parameter` for a name that is not a plain file name.
    func keychainPath(uid: uid_t, name: String?) throws -> String {
        let directory = userDirectory(uid)
        guard let name else { return (directory as NSString).appendingPathComponent("keychain.db") }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard (1...64).contains(name.count), name.allSatisfy(allowed.contains), !name.hasPrefix(".") else {
            throw KeychainError(.parameter, "a keychain name is 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'")
        }
        return ((directory as NSString).appendingPathComponent("keychains") as NSString).appendingPathComponent(name + ".db")
    }

    /// Refuses a write once the caller's files (every keychain of its uid, with their journals) hold its quota.
    /// - Throws: ``KeychainError`` `.diskFull`.
    func checkQuota(uid: uid_t) throws {
        let directory = userDirectory(uid)
        var total: Int64 = 0
        for folder in [directory, directory + "/keychains"] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                var status = stat()
                if lstat(folder + "/" + name, &status) == 0, status.st_mode & S_IFMT == S_IFREG { total += Int64(status.st_size) }
            }
        }
        guard total < configuration.maximumStoredBytesPerUser else {
            throw KeychainError(.diskFull, "the caller's keychains hold their quota of \(configuration.maximumStoredBytesPerUser) bytes")
        }
    }

    /// The caller's groups: from the system policy and the per-user policy of the caller's uid
    /// (`<directory>/<uid>/applications.d`, which only the service can write: a policy a caller's own processes
    /// could edit would let any of them grant itself another application's groups).
    func accessGroups(for identity: PeerIdentity) -> [String] {
        let userPolicy = (userDirectory(identity.uid) as NSString).appendingPathComponent("applications.d")
        // The system policy must be root's: a directory another user could write would let that user grant itself
        // any application's groups.
        let (system, systemWarnings) = ApplicationPolicy.load(directories: configuration.policyDirectories, requireOwner: 0)
        let (user, userWarnings) = ApplicationPolicy.load(directories: [userPolicy], requireOwner: geteuid())
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
    func pool(uid: uid_t, keychain: String?, groups: [String]) throws -> StorePool {
        let key = StoreKey(uid: uid, keychain: keychain, groups: groups)
        let now = ContinuousClock.now
        if let pool = pools.withLock({ pools -> StorePool? in
            pools[key]?.lastUsed = now
            return pools[key]?.pool
        }) {
            return pool
        }
        let directory = userDirectory(uid)
        try Self.makePrivateDirectory(directory)
        if keychain != nil { try Self.makePrivateDirectory(directory + "/keychains") }
        let path = try keychainPath(uid: uid, name: keychain)
        let pool = StorePool { try EmbeddedKeychain(path: path, accessGroups: groups) }
        return pools.withLock { pools in
            if let existing = pools[key] { return existing.pool }
            // This uid's oldest pools go while it has too many.
            var own = pools.filter { $0.key.uid == uid }
            while own.count >= configuration.maximumPoolsPerUser, let oldest = own.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                pools[oldest.key] = nil
                own[oldest.key] = nil
            }
            pools[key] = PoolEntry(pool: pool, lastUsed: now)
            return pool
        }
    }

    /// Drops the pools unused for the idle timeout (their stores close once requests in flight return them).
    private func evictIdlePools() {
        let now = ContinuousClock.now
        pools.withLock { pools in
            for (stale, entry) in pools where now - entry.lastUsed > configuration.idleTimeout { pools[stale] = nil }
        }
    }

    private struct PoolEntry {
        let pool: StorePool
        var lastUsed: ContinuousClock.Instant
    }

    final class StorePool: @unchecked Sendable {
        // @unchecked: `idle` is only touched under `idleLock`.
        static let capacity = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
        private let make: @Sendable () throws -> EmbeddedKeychain
        /// The stores not in use. Behind a pthread mutex (NSLock), not `Mutex`: the requests that share them run on
        /// the service's plain threads, and ThreadSanitizer does not see the standard library's futex lock once a
        /// thread waits in it (with 64 clients it reported the list as raced); it does see pthread's.
        private let idleLock = NSLock()
        private var idle: [EmbeddedKeychain] = []
        private let slots = DispatchSemaphore(value: capacity)

        init(make: @escaping @Sendable () throws -> EmbeddedKeychain) { self.make = make }

        func withStore<R>(_ body: (EmbeddedKeychain) throws -> R) throws -> R {
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
