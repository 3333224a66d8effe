internal import CKcapi
import SecurityBase
import CryptoContract
import Dispatch
import Glibc
import Synchronization

/// The errors libkcapi returns (`-errno`), classified.
enum KcapiStatus {
    /// "Not here": no AF_ALG family, algorithm or module missing, `crypto_user` missing.
    static func isNotAvailable(_ errno: Int32) -> Bool {
        errno == ckcapi_EAFNOSUPPORT || errno == ckcapi_ENOENT || errno == ckcapi_EOPNOTSUPP
            || errno == ckcapi_EPROTONOSUPPORT || errno == ckcapi_ENOTSUP
    }

    static func error(_ result: Int, _ what: String) -> CryptoError {
        let errno = Int32(truncatingIfNeeded: -result)
        let text = String(cString: strerror(errno))
        if isNotAvailable(errno) {
            return CryptoError(.notAvailable, "\(what): \(text)", nativeCode: Int(errno))
        }
        return CryptoError(.backendFailure, "\(what): \(text)", nativeCode: Int(errno))
    }
}

/// One libkcapi handle: an AF_ALG transform socket plus its operation socket, keyed at most once.
///
/// Not thread-safe (libkcapi handles are not: two threads sharing one gave wrong results), so it is used
/// by one caller at a time, which ``HandlePool`` guarantees. Its key cannot change after the first operation
/// (`setkey` then fails with `-EBUSY` and the old key stays), so a handle is bound to one key for its life.
final class KcapiHandle: @unchecked Sendable {
    // @unchecked: a handle moves between threads but is never shared: the pool hands it to one caller at a
    // time, and that caller alone uses it until it gives it back.
    enum Kind { case cipher, digest }

    let kind: Kind
    let algorithmName: String
    /// The key it was set up with (empty for plain digests); wiped on release.
    let key: SecretBytes
    /// The pool's fork generation when it was opened.
    let generation = HandlePool.forkGeneration.load(ordering: .relaxed)
    private let pointer: OpaquePointer

    /// A new handle for `algorithmName` (a kernel name such as `cbc(aes)`), keyed with `key` if not empty.
    init(_ kind: Kind, _ algorithmName: String, key: UnsafeRawBufferPointer) throws {
        KernelRuntime.silenceLibrary
        var handle: OpaquePointer?
        let status: Int32
        switch kind {
        case .cipher: status = kcapi_cipher_init(&handle, algorithmName, 0)
        case .digest: status = kcapi_md_init(&handle, algorithmName, 0)
        }
        guard status == 0, let handle else { throw KcapiStatus.error(Int(status), "kcapi init \(algorithmName)") }
        self.kind = kind
        self.algorithmName = algorithmName
        self.pointer = handle
        self.key = SecretBytes(copying: key)
        if kind == .cipher || key.count > 0 || algorithmName.hasPrefix("hmac(") {
            // An empty HMAC key still needs setkey; libkcapi wants a non-NULL pointer.
            let keyBase = key.bindMemory(to: UInt8.self).baseAddress
            let result = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { empty in
                let bytes = keyBase ?? UnsafePointer(empty.baseAddress!)  // !: capacity 1
                return kind == .cipher
                    ? kcapi_cipher_setkey(pointer, bytes, UInt32(key.count))
                    : kcapi_md_setkey(pointer, bytes, UInt32(key.count))
            }
            guard result == 0 else {
                let error = KcapiStatus.error(Int(result), "setkey \(algorithmName)")
                throw error.code == .backendFailure && error.nativeCode == Int(ckcapi_EINVAL)
                    ? CryptoError(.invalidKeySize, "the kernel's \(algorithmName) rejects a \(key.count)-byte key")
                    : error
            }
        }
    }

    deinit {
        switch kind {
        case .cipher: kcapi_cipher_destroy(pointer)
        case .digest: kcapi_md_destroy(pointer)
        }
    }

    /// One cipher call; returns the bytes processed.
    func crypt(
        _ direction: CipherDirection, _ input: UnsafeRawBufferPointer, iv: UnsafePointer<UInt8>?,
        _ output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        let inBytes = input.bindMemory(to: UInt8.self).baseAddress
        let outBytes = output.bindMemory(to: UInt8.self).baseAddress
        let access = KernelRuntime.accessMode
        let result =
            direction == .encrypt
            ? kcapi_cipher_encrypt(pointer, inBytes, input.count, iv, outBytes, output.count, access)
            : kcapi_cipher_decrypt(pointer, inBytes, input.count, iv, outBytes, output.count, access)
        if result == -Int(ckcapi_EPERM) || result == -Int(ckcapi_ENOSYS), access == KCAPI_ACCESS_VMSPLICE {
            // vmsplice refused (seccomp): sendmsg from now on. This call reports "not here", so a dispatcher
            // serves it with software; the handle is dropped (its state after the refusal is unknown).
            KernelRuntime.access.store(KCAPI_ACCESS_SENDMSG, ordering: .relaxed)
            throw CryptoError(.notAvailable, "vmsplice refused for \(algorithmName); using sendmsg", nativeCode: -result)
        }
        guard result >= 0 else { throw KcapiStatus.error(result, "\(algorithmName) \(direction)") }
        return result
    }

    /// One-shot digest (the input is at most `INT_MAX`: callers chunk above that through ``update(_:)``).
    func digest(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) throws {
        let result = kcapi_md_digest(
            pointer, input.bindMemory(to: UInt8.self).baseAddress, input.count,
            output.bindMemory(to: UInt8.self).baseAddress, output.count)
        guard result >= 0 else { throw KcapiStatus.error(result, "\(algorithmName) digest") }
    }

    func update(_ input: UnsafeRawBufferPointer) throws {
        var offset = 0
        repeat {
            let length = min(input.count - offset, KernelRuntime.maximumSend)
            let result = kcapi_md_update(pointer, input.bindMemory(to: UInt8.self).baseAddress.map { $0 + offset }, length)
            guard result >= 0 else { throw KcapiStatus.error(result, "\(algorithmName) update") }
            offset += length
        } while offset < input.count
    }

    func final(_ output: UnsafeMutableRawBufferPointer) throws {
        let result = kcapi_md_final(pointer, output.bindMemory(to: UInt8.self).baseAddress, output.count)
        guard result >= 0 else { throw KcapiStatus.error(result, "\(algorithmName) final") }
    }
}

/// Idle handles, kept for reuse: never a socket per operation. Each thread keeps its own (libkcapi handles
/// are not thread-safe, and a handle's key cannot change), so taking one needs no lock: a caller checks a
/// handle out of its thread's cache for one operation (or a stream's life) and gives it back to the cache of
/// the thread it is on then. A handle is reused only for the same algorithm and the same key (compared in
/// constant time). A handle idle longer than the pool's idle lifetime (30 s by default) is closed, and its key
/// copies wiped (ours, and the kernel's with its socket), by an idle-handle timer that expires every thread's idle
/// handles while there are any (an idle thread makes no call that could close them), and at its thread's next use
/// of the pool; a thread's handles are closed when it exits.
final class HandlePool: Sendable {
    /// Idle handles kept per thread; beyond that the oldest is destroyed.
    static let idleLimitPerThread = 8

    /// How long an idle handle (and the key it holds) is kept for reuse, in ``coarseNanoseconds()``.
    private let idleNanoseconds: Int64

    /// One idle handle and when it was given back (``coarseNanoseconds()``).
    private struct Idle {
        let handle: KcapiHandle
        let since: Int64
    }

    /// One thread's idle handles: used by its thread, and expired by the pool's idle-handle timer (hence the lock,
    /// uncontended but while the timer runs).
    private final class ThreadHandles: Sendable {
        struct State {
            var idle: [Idle] = []
            /// The ``HandlePool/forkGeneration`` the handles were opened in.
            var generation = HandlePool.forkGeneration.load(ordering: .relaxed)
        }
        let state = Mutex(State())
    }

    /// Every thread's idle handles, for the idle-handle timer (weakly: a thread's go with it).
    private struct Weak { weak var handles: ThreadHandles? }
    private let registry = Mutex<[Weak]>([])
    /// Whether the idle-handle timer is scheduled (read first without a lock: every give-back asks).
    private let sweepScheduled = Atomic(false)

    /// Bumped in the child of every `fork`: a child's inherited handles share their sockets (and so their
    /// kernel state) with the parent's, so the child drops them and opens its own.
    static let forkGeneration = Atomic<Int>(0)
    private static let forkHandlerInstalled: Void = {
        // pthread_atfork: "the child handler is called in the child process after fork() returns", in the one
        // thread that survives; it bumps the generation every thread's cache compares at its next check-out.
        pthread_atfork(nil, nil) { HandlePool.forkGeneration.add(1, ordering: .relaxed) }
    }()

    private let key: pthread_key_t

    init(idleLifetime: Duration = .seconds(30)) {
        let (seconds, attoseconds) = idleLifetime.components
        idleNanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        var key = pthread_key_t()
        // pthread_key_create: "the destructor is called with the key's last non-NULL value at thread exit".
        let status = pthread_key_create(&key) { raw in
            guard let raw else { return }
            Unmanaged<AnyObject>.fromOpaque(raw).release()
        }
        precondition(status == 0, "pthread_key_create failed: the process is out of thread-specific keys")
        self.key = key
        Self.forkHandlerInstalled
    }

    private func threadHandles() -> ThreadHandles {
        if let raw = pthread_getspecific(key) {
            return Unmanaged<ThreadHandles>.fromOpaque(raw).takeUnretainedValue()
        }
        let handles = ThreadHandles()
        pthread_setspecific(key, Unmanaged.passRetained(handles as AnyObject).toOpaque())
        registry.withLock { threads in
            threads.removeAll { $0.handles == nil }
            threads.append(Weak(handles: handles))
        }
        return handles
    }

    /// An idle handle of this thread for `algorithmName` keyed with `key`, else a new one.
    func checkOut(_ kind: KcapiHandle.Kind, _ algorithmName: String, key: UnsafeRawBufferPointer) throws -> KcapiHandle {
        try checkOut(kind, algorithmName, key: key, from: threadHandles(), now: Self.coarseNanoseconds())
    }

    private func checkOut(
        _ kind: KcapiHandle.Kind, _ algorithmName: String, key: UnsafeRawBufferPointer, from cache: ThreadHandles, now: Int64
    ) throws -> KcapiHandle {
        let generation = Self.forkGeneration.load(ordering: .relaxed)
        let reused = cache.state.withLock { state -> KcapiHandle? in
            if state.generation != generation {
                // Inherited across fork: closing them closes only this process's descriptors.
                state.idle.removeAll()
                state.generation = generation
            }
            expire(&state, now: now)
            guard let index = state.idle.lastIndex(where: {
                $0.handle.kind == kind && $0.handle.algorithmName == algorithmName && $0.handle.key.constantTimeEquals(key)
            }) else { return nil }
            return state.idle.remove(at: index).handle
        }
        return try reused ?? KcapiHandle(kind, algorithmName, key: key)
    }

    func giveBack(_ handle: KcapiHandle) {
        giveBack(handle, to: threadHandles(), now: Self.coarseNanoseconds())
    }

    private func giveBack(_ handle: KcapiHandle, to cache: ThreadHandles, now: Int64) {
        // A handle checked out before a fork (a stream's) is not kept by the child.
        guard handle.generation == Self.forkGeneration.load(ordering: .relaxed) else { return }
        cache.state.withLock { state in
            expire(&state, now: now)
            state.idle.append(Idle(handle: handle, since: now))
            if state.idle.count > Self.idleLimitPerThread { state.idle.removeFirst() }
        }
        scheduleSweep()
    }

    /// Takes out the handles idle longer than the pool's idle lifetime at `now` (the oldest are first: handles are
    /// appended); they close when the caller lets them go.
    @discardableResult
    private func expire(_ state: inout ThreadHandles.State, now: Int64) -> [Idle] {
        guard let oldest = state.idle.first, now - oldest.since > idleNanoseconds else { return [] }
        let expired = state.idle.filter { now - $0.since > idleNanoseconds }
        state.idle.removeAll { now - $0.since > idleNanoseconds }
        return expired
    }

    /// Schedules the idle-handle timer one idle lifetime from now, unless it is scheduled: the idle handles of threads
    /// that make no more calls are closed then.
    private func scheduleSweep() {
        guard !sweepScheduled.load(ordering: .relaxed),
            sweepScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let delay = DispatchTimeInterval.nanoseconds(Int(clamping: idleNanoseconds))
        // Held, not weakly (pools live as long as the process; see KeychainStore's removal for why not weak).
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) { [self] in sweep() }
    }

    /// Closes every thread's handles past the idle lifetime (a thread using its handles now is waited for, briefly);
    /// schedules the timer again while any handle is still idle.
    private func sweep() {
        let now = Self.coarseNanoseconds()
        sweepScheduled.store(false, ordering: .releasing)
        let threads = registry.withLock { threads in
            threads.removeAll { $0.handles == nil }
            return threads.compactMap(\.handles)
        }
        var remaining = false
        for handles in threads {
            // Closed outside the lock: a handle's close is two system calls.
            let expired = handles.state.withLock { state -> [Idle] in
                let expired = expire(&state, now: now)
                if !state.idle.isEmpty { remaining = true }
                return expired
            }
            withExtendedLifetime(expired) {}
        }
        if remaining { scheduleSweep() }
    }

    /// Monotonic time at the kernel tick's resolution (`CLOCK_MONOTONIC_COARSE`, a few milliseconds), which an idle
    /// handle's age needs no better. The vDSO answers it from its data page without reading the clock hardware. The
    /// precise clock (`ContinuousClock`, read up to three times a call here) is a system call and an emulated device
    /// read where the clocksource is the HPET, as in QEMU under TCG (the guest marks the TSC unstable): there, more
    /// than half a small call's cost.
    private static func coarseNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// How many idle handles this thread keeps (tests).
    var idleCount: Int { threadHandles().state.withLock { $0.idle.count } }

    /// Runs `body` with a checked-out handle and gives it back afterwards. A handle whose operation failed is
    /// dropped rather than reused: its socket state is unknown. One look-up of the thread's handles and one clock
    /// read serve both ends: the handle counts as idle from before `body`, so it may close that much sooner.
    func with<R>(
        _ kind: KcapiHandle.Kind, _ algorithmName: String, key: UnsafeRawBufferPointer, _ body: (KcapiHandle) throws -> R
    ) throws -> R {
        let cache = threadHandles()
        let now = Self.coarseNanoseconds()
        let handle = try checkOut(kind, algorithmName, key: key, from: cache, now: now)
        let result = try body(handle)
        giveBack(handle, to: cache, now: now)
        return result
    }
}
