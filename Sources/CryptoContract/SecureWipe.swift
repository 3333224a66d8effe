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
        guard other.count == count else { return false }
        var difference: UInt8 = 0
        for index in 0..<count { difference |= storage[index] ^ other[index] }
        return difference == 0
    }

    deinit {
        secureWipe(storage)
        storage.deallocate()
    }
}
