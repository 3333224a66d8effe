internal import CKcapi
import Glibc
import CryptoContract
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
        let result =
            direction == .encrypt
            ? kcapi_cipher_encrypt(pointer, inBytes, input.count, iv, outBytes, output.count, KernelRuntime.accessMode)
            : kcapi_cipher_decrypt(pointer, inBytes, input.count, iv, outBytes, output.count, KernelRuntime.accessMode)
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

/// Idle handles, kept for reuse: never a socket per operation. A caller checks a handle out for the length
/// of one operation (or a stream's life) and gives it back, so no two threads ever share one; a handle is
/// reused only for the same algorithm and the same key (compared in constant time).
final class HandlePool: Sendable {
    /// Idle handles kept per algorithm; beyond that the oldest is destroyed (and its key wiped).
    static let idleLimitPerAlgorithm = 8

    private struct Idle: Sendable {
        var byAlgorithm: [String: [KcapiHandle]] = [:]
    }
    private let idle = Mutex(Idle())

    /// An idle handle for `algorithmName` keyed with `key`, else a new one.
    func checkOut(_ kind: KcapiHandle.Kind, _ algorithmName: String, key: UnsafeRawBufferPointer) throws -> KcapiHandle {
        let reused: KcapiHandle? = idle.withLock { idle in
            guard var list = idle.byAlgorithm[algorithmName],
                let index = list.lastIndex(where: { $0.kind == kind && $0.key.constantTimeEquals(key) })
            else { return nil }
            let handle = list.remove(at: index)
            idle.byAlgorithm[algorithmName] = list
            return handle
        }
        return try reused ?? KcapiHandle(kind, algorithmName, key: key)
    }

    func giveBack(_ handle: KcapiHandle) {
        let evicted: KcapiHandle? = idle.withLock { idle in
            var list = idle.byAlgorithm[handle.algorithmName, default: []]
            list.append(handle)
            let oldest = list.count > Self.idleLimitPerAlgorithm ? list.removeFirst() : nil
            idle.byAlgorithm[handle.algorithmName] = list
            return oldest
        }
        _ = evicted  // destroyed here, outside the lock
    }

    /// Runs `body` with a checked-out handle and gives it back afterwards. A handle whose operation failed is
    /// dropped rather than reused: its socket state is unknown.
    func with<R>(
        _ kind: KcapiHandle.Kind, _ algorithmName: String, key: UnsafeRawBufferPointer, _ body: (KcapiHandle) throws -> R
    ) throws -> R {
        let handle = try checkOut(kind, algorithmName, key: key)
        let result = try body(handle)
        giveBack(handle)
        return result
    }
}
