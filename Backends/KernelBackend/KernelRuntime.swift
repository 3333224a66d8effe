internal import CKcapi
public import CryptoContract
import Foundation
import Synchronization

/// Process-wide state of the kernel backend: the capability probe (run once, cached), the handle pool and
/// the `/proc/crypto` registry.
final class KernelRuntime: Sendable {
    static let shared = KernelRuntime()

    /// libkcapi logs errors to stderr unless told otherwise; a library must not. Evaluated once.
    static let silenceLibrary: Void = kcapi_set_verbosity(KCAPI_LOG_NONE)

    /// How cipher data reaches the kernel: `sendmsg` (a copy) by default, or `vmsplice` (zero-copy pages) when
    /// `SECURITYSERVICES_KCAPI_ACCESS=vmsplice` asks for it (see docs/dispatcher.md, "The kernel backend", for what each
    /// measured). A `vmsplice` that the process may not make (a container's seccomp policy: `EPERM`, `ENOSYS`)
    /// switches the process to `sendmsg` for good.
    static let access = Atomic<Int32>(
        ProcessInfo.processInfo.environment["SECURITYSERVICES_KCAPI_ACCESS"]?.lowercased() == "vmsplice"
            ? KCAPI_ACCESS_VMSPLICE : KCAPI_ACCESS_SENDMSG)

    static var accessMode: Int32 { access.load(ordering: .relaxed) }

    /// Bytes per `sendmsg` for hashing (libkcapi takes at most `INT_MAX` per call).
    static let maximumSend = 1 << 30

    /// libkcapi 1.4.0 reuses the IV for every 64 KiB piece of a one-shot CBC call (a libkcapi bug), so
    /// the backend never sends more than this per call and carries the IV forward itself.
    static let chunkSize = 64 * 1024

    let pool = HandlePool()
    let registry: KernelCryptoRegistry
    /// Why the kernel backend is unavailable as a whole (`nil` when AF_ALG works).
    let unavailableReason: String?
    /// Per ``CryptoOperation/index``: the kernel name when it binds here, else `nil`. Looked up on every call.
    private let boundNames: [String?]
    /// Per ``CryptoOperation/index``: whether its driver is an engine (off-CPU, see ``KernelCryptoRegistry``).
    private let engineServed: [Bool]

    private init() {
        Self.silenceLibrary
        var reason: String?
        var bound: [String: Bool] = [:]
        do {
            _ = try KcapiHandle(.digest, "sha1", key: UnsafeRawBufferPointer(start: nil, count: 0))
        } catch let error as CryptoError where error.nativeCode == Int(ckcapi_EAFNOSUPPORT) {
            reason = "AF_ALG is not available in this kernel (socket: EAFNOSUPPORT)"
        } catch {
            // sha1 missing does not mean AF_ALG is missing; the per-algorithm probe below tells.
        }
        if reason == nil {
            for name in KernelAlgorithmNames.all {
                bound[name] = Self.binds(name)
            }
            if !bound.values.contains(true) { reason = "AF_ALG is present but none of the offloadable algorithms binds" }
        }
        unavailableReason = reason
        // Read after the probe: a template instance (`ecb(aes)` over `aes-generic`) is listed only once something
        // has bound it.
        let registry = KernelCryptoRegistry.current()
        self.registry = registry
        var names = [String?](repeating: nil, count: CryptoOperation.indexCount)
        for operation in CryptoOperation.all {
            if let name = KernelAlgorithmNames.name(for: operation), bound[name] == true { names[operation.index] = name }
        }
        boundNames = names
        engineServed = names.map { name in name.map { registry.isServedByCPU($0) == false } ?? false }
    }

    /// Whether `operation` binds here and its driver is an engine, which works on several requests at once.
    func isEngine(_ operation: CryptoOperation) -> Bool { engineServed[operation.index] }

    /// The kernel name of `operation` if the kernel serves it here.
    @inline(__always)
    func boundName(_ operation: CryptoOperation) -> String? { boundNames[operation.index] }

    /// Whether a transform of that name can be allocated: an AF_ALG `bind` succeeds.
    private static func binds(_ name: String) -> Bool {
        var handle: OpaquePointer?
        if KernelAlgorithmNames.isCipher(name) {
            guard kcapi_cipher_init(&handle, name, 0) == 0, let handle else { return false }
            kcapi_cipher_destroy(handle)
        } else {
            guard kcapi_md_init(&handle, name, 0) == 0, let handle else { return false }
            kcapi_md_destroy(handle)
        }
        return true
    }
}

/// The kernel's names for the contract's operations.
public enum KernelAlgorithmNames {
    /// The kernel algorithm behind a cipher, `nil` where the backend does not offer it. Block modes and CTR
    /// only: CFB/OFB would need keystream carry across chunks, and the kernel has no CFB8.
    public static func cipher(_ algorithm: CipherAlgorithm, _ mode: CipherMode) -> String? {
        let base: String
        switch algorithm {
        case .aes128, .aes192, .aes256: base = "aes"
        case .des: base = "des"
        case .tripleDES: base = "des3_ede"
        case .cast5: base = "cast5"
        case .blowfish: base = "blowfish"
        case .rc2, .rc4: return nil  // absent from Debian's kernel
        }
        switch mode {
        case .ecb, .cbc, .ctr: return "\(mode.rawValue)(\(base))"
        default: return nil
        }
    }

    public static func digest(_ algorithm: DigestAlgorithm) -> String? {
        switch algorithm {
        case .md2: nil
        case .md4, .md5, .sha1, .sha224, .sha256, .sha384, .sha512: algorithm.rawValue
        }
    }

    public static func hmac(_ algorithm: DigestAlgorithm) -> String? {
        guard algorithm.supportsHMAC, let digest = digest(algorithm) else { return nil }
        return "hmac(\(digest))"
    }

    public static func name(for operation: CryptoOperation) -> String? {
        switch operation {
        case .cipher(let algorithm, let mode): cipher(algorithm, mode)
        case .digest(let algorithm): digest(algorithm)
        case .hmac(let algorithm): hmac(algorithm)
        }
    }

    static func isCipher(_ name: String) -> Bool { name.hasSuffix(")") && !name.hasPrefix("hmac(") }

    static let all: [String] = Array(Set(CryptoOperation.all.compactMap(name(for:)))).sorted()
}
