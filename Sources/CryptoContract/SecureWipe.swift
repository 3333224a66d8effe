#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Overwrites `buffer` with zeros in a way the optimizer may not remove (`explicit_bzero(3)`).
/// Every owner of key material calls this before releasing it.
public func secureWipe(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    explicit_bzero(base, buffer.count)
}

/// Whether `a` and `b` hold the same bytes, in time that depends on their lengths only, never on where they differ:
/// the one comparison of MACs, key check values and keys in the project. (OpenSSL's `CRYPTO_memcmp` does the same;
/// this module links no C library, so it is written here: every byte is read and OR-ed in, with no early exit, and
/// the function is not inlined into a caller whose optimizer could turn the loop into one that stops early.)
@inline(never)
public func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in 0..<a.count { difference |= a[index] ^ b[index] }
    return difference == 0
}

/// The constant-time comparison of two byte arrays.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.withUnsafeBytes { a in b.withUnsafeBytes { b in constantTimeEquals(a, b) } }
}

/// A heap copy of secret bytes that is wiped when released. One owner; never printed.
public final class SecretBytes: @unchecked Sendable {
    // @unchecked: immutable after init; the storage is only read through `withUnsafeBytes`.
    private let storage: UnsafeMutableRawBufferPointer

    public init(copying bytes: UnsafeRawBufferPointer) {
        storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        if let base = bytes.baseAddress, bytes.count > 0 {
            storage.baseAddress!.copyMemory(from: base, byteCount: bytes.count)  // !: allocate never returns nil
        }
        count = bytes.count
    }

    public let count: Int

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Compares with `other` in time independent of where they differ.
    public func constantTimeEquals(_ other: UnsafeRawBufferPointer) -> Bool {
        withUnsafeBytes { CryptoContract.constantTimeEquals($0, other) }
    }

    deinit {
        secureWipe(storage)
        storage.deallocate()
    }
}
