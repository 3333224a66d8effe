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

/// Secret bytes — keys, passwords, intermediate key material — in storage that is wiped (its whole capacity) when
/// the last copy lets go of it. A value with copy-on-write: copies share one storage until one of them is
/// changed, and every storage, shared, replaced or grown out of, is wiped in its own `deinit`, so no duplicate
/// escapes the wipe as an `[UInt8]` copy does. Never printed: `description`, `debugDescription` and the mirror
/// show the length only.
public struct SecretBytes: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// One allocation, wiped whole and freed in `deinit`; changed only while uniquely referenced.
    final class Storage: @unchecked Sendable {
        // @unchecked: written only through SecretBytes' mutating calls after `isKnownUniquelyReferenced`, so a
        // storage shared between threads is never written.
        let buffer: UnsafeMutableRawBufferPointer
        var count: Int

        init(capacity: Int) {
            buffer = .allocate(byteCount: max(capacity, 1), alignment: 16)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            count = 0
        }

        deinit {
            secureWipe(buffer)
            buffer.deallocate()
        }
    }

    private var storage: Storage

    /// `count` zero bytes (scratch space for key material).
    public init(zeroed count: Int) {
        storage = Storage(capacity: count)
        storage.count = count
    }

    public init(copying bytes: UnsafeRawBufferPointer) {
        storage = Storage(capacity: bytes.count)
        if let base = bytes.baseAddress, bytes.count > 0 {
            storage.buffer.baseAddress!.copyMemory(from: base, byteCount: bytes.count)  // !: allocate never returns nil
        }
        storage.count = bytes.count
    }

    /// A copy of `bytes`, made straight into wiped storage (no intermediate array).
    public init(_ bytes: some Sequence<UInt8>) {
        let array = bytes.withContiguousStorageIfAvailable { SecretBytes(copying: UnsafeRawBufferPointer($0)) }
        if let array {
            self = array
            return
        }
        var result = SecretBytes(zeroed: 0)
        for byte in bytes { result.append(byte) }
        self = result
    }

    public var count: Int { storage.count }
    public var isEmpty: Bool { storage.count == 0 }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<storage.count]))
    }

    /// Changes the bytes in place; a storage shared with another copy is first copied (and the copy is wiped in
    /// its turn).
    public mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        makeUnique(capacity: storage.count)
        return try body(UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<storage.count]))
    }

    public subscript(index: Int) -> UInt8 {
        get {
            precondition(index >= 0 && index < storage.count, "SecretBytes index out of range")
            return storage.buffer[index]
        }
        set {
            precondition(index >= 0 && index < storage.count, "SecretBytes index out of range")
            makeUnique(capacity: storage.count)
            storage.buffer[index] = newValue
        }
    }

    public mutating func append(_ byte: UInt8) {
        makeUnique(capacity: storage.count + 1)
        storage.buffer[storage.count] = byte
        storage.count += 1
    }

    public mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        makeUnique(capacity: storage.count + bytes.count)
        (storage.buffer.baseAddress! + storage.count).copyMemory(from: base, byteCount: bytes.count)  // !: allocated
        storage.count += bytes.count
    }

    /// Compares with `other` in time independent of where they differ.
    public func constantTimeEquals(_ other: UnsafeRawBufferPointer) -> Bool {
        withUnsafeBytes { SecurityBase.constantTimeEquals($0, other) }
    }

    /// The bytes as an array, for APIs that take one. The array is an ordinary copy the wipe does not reach: use
    /// it only where the secret leaves the process's keeping anyway (it is handed to a caller).
    public var unprotectedArray: [UInt8] { withUnsafeBytes { Array($0) } }

    public var description: String { "SecretBytes(\(count) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": count]) }

    /// Gives this value a storage of its own with room for `capacity` bytes; the one left behind is wiped when its
    /// last holder lets go.
    private mutating func makeUnique(capacity: Int) {
        guard !isKnownUniquelyReferenced(&storage) || storage.buffer.count < capacity else { return }
        let grown = Storage(capacity: Swift.max(capacity, storage.buffer.count * (capacity > storage.buffer.count ? 2 : 1)))
        grown.buffer.baseAddress!.copyMemory(from: storage.buffer.baseAddress!, byteCount: storage.count)  // !: allocated
        grown.count = storage.count
        storage = grown
    }
}
