internal import CKcapi
import SecurityBase
public import CryptoContract
import Foundation
import Synchronization

/// The kernel backend: the Linux kernel crypto API over AF_ALG, through libkcapi.
///
/// Offers what the kernel binds: ECB/CBC/CTR for AES, DES, 3DES, CAST5 and Blowfish, MD4/MD5/SHA-1/SHA-2
/// digests and HMAC over them. Everything else, and everything on a machine without AF_ALG, throws
/// ``CryptoError/Code/notAvailable`` so that a caller (the dispatcher) can fall back to software.
/// Handles are pooled per algorithm and key; no call opens a socket once the pool is warm.
public struct KernelBackend: OffloadBackend {
    public let kind = BackendKind.kernel

    private var runtime: KernelRuntime { KernelRuntime.shared }

    public init() {}

    /// Whether AF_ALG works here at all (probed once per process).
    public static var isAvailable: Bool { KernelRuntime.shared.unavailableReason == nil }

    /// Why the backend is unavailable, `nil` when it is available.
    public static var unavailableReason: String? { KernelRuntime.shared.unavailableReason }

    /// How many pieces of one message were sent to an engine at once since the process started: a cipher call
    /// whose pieces are independent (ECB, CTR, CBC decryption) of two chunks (128 KiB) or more on an engine is cut
    /// into up to one piece per CPU (at most 4), each on its own handle and thread, because an engine works on
    /// several requests at once.
    public static var concurrentRequests: Int { concurrentRequestCounter.load(ordering: .relaxed) }
    static let concurrentRequestCounter = Atomic<Int>(0)

    /// The `/proc/crypto` registry read at the probe.
    public static var registry: KernelCryptoRegistry { KernelRuntime.shared.registry }

    public func supports(_ operation: CryptoOperation) -> Bool { runtime.boundName(operation) != nil }

    public var unavailableReason: String? { runtime.unavailableReason }

    /// Where the kernel would run `operation`: absent where it does not bind, CPU code where `/proc/crypto`'s
    /// driver is CPU code (or unlisted), an engine otherwise (see ``KernelCryptoRegistry``).
    public func placement(of operation: CryptoOperation) -> OffloadPlacement {
        guard let name = runtime.boundName(operation) else {
            return .absent(runtime.unavailableReason ?? "the kernel does not offer \(operation)")
        }
        guard let driver = runtime.registry.driver(for: name) else { return .cpu("\(name): no driver in /proc/crypto") }
        return runtime.registry.isServedByCPU(name) == false ? .engine(driver) : .cpu(driver)
    }

    private func kernelName(_ operation: CryptoOperation) throws -> String {
        guard let name = runtime.boundName(operation) else {
            throw CryptoError(
                .notAvailable, runtime.unavailableReason ?? "the kernel does not offer \(operation)")
        }
        return name
    }

    // MARK: Ciphers

    public func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        let name = try kernelName(.cipher(spec.algorithm, spec.mode))
        let needed = try spec.oneShotOutputLength(direction, inputCount: input.count)
        try CryptoError.checkOutput(output, holds: needed)
        let block = spec.algorithm.blockSize
        let operation = CryptoOperation.cipher(spec.algorithm, spec.mode)
        let pool = runtime.pool
        /// The message's whole blocks (and CTR's tail): on an engine, in concurrent pieces where the mode allows,
        /// the calling thread's piece on its own handle, the others on handles of the threads that run them.
        func whole(
            _ handle: KcapiHandle, _ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer,
            _ chain: UnsafeMutableRawBufferPointer
        ) throws {
            let pieces = runtime.isEngine(operation) ? ChunkedCipher.concurrentPieces(spec, direction, count: input.count) : 1
            guard pieces > 1 else {
                return try ChunkedCipher.run(handle, spec, direction, input: input, output: output, chain: chain)
            }
            let caller = pthread_self()
            try ChunkedCipher.runConcurrently(
                pieces: pieces, spec, direction,
                handles: { body in
                    if pthread_equal(pthread_self(), caller) != 0 { try body(handle) } else { try pool.with(.cipher, name, key: key, body) }
                },
                input: input, output: output, chain: chain)
        }
        return try runtime.pool.with(.cipher, name, key: key) { handle in
            try withUnsafeTemporaryAllocation(byteCount: 2 * block, alignment: 16) { scratch in
                let chain = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<block])
                let last = UnsafeMutableRawBufferPointer(rebasing: scratch[block...])
                defer { secureWipe(scratch) }
                if let iv, spec.ivSize > 0 { chain.copyMemory(from: iv) }
                switch (direction, spec.effectivePadding) {
                case (.encrypt, .pkcs7):
                    let whole = input.count - input.count % block
                    ChunkedCipher.padBlock(UnsafeRawBufferPointer(rebasing: input[whole...]), into: last)
                    try ChunkedCipher.run(
                        handle, spec, direction, input: UnsafeRawBufferPointer(rebasing: input[..<whole]),
                        output: UnsafeMutableRawBufferPointer(rebasing: output[..<whole]), chain: chain)
                    try ChunkedCipher.run(
                        handle, spec, direction, input: UnsafeRawBufferPointer(last),
                        output: UnsafeMutableRawBufferPointer(rebasing: output[whole..<whole + block]), chain: chain)
                    return whole + block
                case (.decrypt, .pkcs7):
                    let result = UnsafeMutableRawBufferPointer(rebasing: output[..<input.count])
                    try whole(handle, input, result, chain)
                    guard let pad = ChunkedCipher.padLength(UnsafeRawBufferPointer(rebasing: result[(input.count - block)...]))
                    else {
                        secureWipe(result)
                        throw CryptoError(.decode, "\(spec) decryption found invalid padding")
                    }
                    return input.count - pad
                default:
                    try whole(handle, input, UnsafeMutableRawBufferPointer(rebasing: output[..<input.count]), chain)
                    return input.count
                }
            }
        }
    }

    public func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?
    ) throws -> any CipherStream {
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        let name = try kernelName(.cipher(spec.algorithm, spec.mode))
        let handle = try runtime.pool.checkOut(.cipher, name, key: key)
        return KernelCipherStream(direction, spec, handle: handle, pool: runtime.pool, iv: iv)
    }

    // MARK: Digests and HMAC

    public func digest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
        throws
    {
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        let name = try kernelName(.digest(algorithm))
        try runtime.pool.with(.digest, name, key: UnsafeRawBufferPointer(start: nil, count: 0)) { handle in
            try Self.digest(handle, algorithm, input, output)
        }
    }

    public func hmac(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        let name = try kernelName(.hmac(algorithm))
        try runtime.pool.with(.digest, name, key: key) { handle in
            try Self.digest(handle, algorithm, input, output)
        }
    }

    private static func digest(
        _ handle: KcapiHandle, _ algorithm: DigestAlgorithm, _ input: UnsafeRawBufferPointer,
        _ output: UnsafeMutableRawBufferPointer
    ) throws {
        let result = UnsafeMutableRawBufferPointer(rebasing: output[..<algorithm.outputSize])
        if input.count <= KernelRuntime.maximumSend {
            try handle.digest(input, result)
        } else {
            try handle.update(input)
            try handle.final(result)
        }
    }

    public func makeDigestStream(_ algorithm: DigestAlgorithm) throws -> any DigestStream {
        let name = try kernelName(.digest(algorithm))
        let handle = try runtime.pool.checkOut(.digest, name, key: UnsafeRawBufferPointer(start: nil, count: 0))
        return KernelDigestStream(algorithm, handle: handle, pool: runtime.pool)
    }

    public func makeHMACStream(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any DigestStream {
        let name = try kernelName(.hmac(algorithm))
        let handle = try runtime.pool.checkOut(.digest, name, key: key)
        return KernelDigestStream(algorithm, handle: handle, pool: runtime.pool)
    }
}
