/// A cipher fed in pieces. One owner at a time; after ``finish(into:)`` only ``reset(iv:)`` is allowed.
public protocol CipherStream: AnyObject {
    var spec: CipherSpec { get }
    var direction: CipherDirection { get }

    /// The most bytes the next ``update(_:into:)`` (or, with `final`, the update plus ``finish(into:)``) can
    /// write for `inputCount` more bytes of input.
    func outputLength(forInputCount inputCount: Int, final: Bool) -> Int

    /// Processes `input`; returns the number of bytes written (block modes hold back a partial block).
    func update(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int

    /// Ends the stream: pads, or checks and strips padding. Returns the number of bytes written.
    func finish(into output: UnsafeMutableRawBufferPointer) throws -> Int

    /// Starts over with the same key, and a new IV if given (else the original one).
    func reset(iv: UnsafeRawBufferPointer?) throws
}

/// A digest or HMAC fed in pieces. One owner at a time; after ``finish(into:)`` only ``reset()`` is allowed.
public protocol DigestStream: AnyObject {
    var algorithm: DigestAlgorithm { get }
    func update(_ input: UnsafeRawBufferPointer) throws
    /// Writes the digest (``DigestAlgorithm/outputSize`` bytes) into `output`.
    func finish(into output: UnsafeMutableRawBufferPointer) throws
    /// Starts over (an HMAC keeps its key).
    func reset() throws
}

/// Byte bookkeeping for a cipher stream: how much input is held back, and so how much output the next call
/// can produce. Shared by every backend so that they agree on ``CipherStream/outputLength(forInputCount:final:)``.
public struct CipherStreamAccounting: Sendable {
    public let spec: CipherSpec
    public let direction: CipherDirection
    /// Input bytes taken but not yet answered by output.
    public private(set) var held = 0

    public init(spec: CipherSpec, direction: CipherDirection) {
        self.spec = spec
        self.direction = direction
    }

    /// Output of an update of `count` more bytes, exactly as an EVP-style block buffer produces it.
    public func updateOutputCount(_ count: Int) -> Int {
        guard spec.mode.isBlockMode else { return count }
        let block = spec.algorithm.blockSize
        let total = held + count
        if direction == .decrypt && spec.effectivePadding == .pkcs7 {
            // The last whole block is held back until finish, where its padding is checked.
            return total == 0 ? 0 : ((total - 1) / block) * block
        }
        return (total / block) * block
    }

    public func outputLength(forInputCount count: Int, final: Bool) -> Int {
        guard final else { return updateOutputCount(count) }
        guard spec.mode.isBlockMode else { return count }
        let total = held + count
        let block = spec.algorithm.blockSize
        switch (direction, spec.effectivePadding) {
        case (.encrypt, .pkcs7): return (total / block + 1) * block
        default: return total
        }
    }

    public mutating func recordUpdate(input: Int, output: Int) { held += input - output }
    public mutating func reset() { held = 0 }
}

extension CipherStream {
    public func update(_ input: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: outputLength(forInputCount: input.count, final: false))
        let written = try input.withUnsafeBytes { input in
            try output.withUnsafeMutableBytes { try update(input, into: $0) }
        }
        output.removeLast(output.count - written)
        return output
    }

    public func finish() throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: outputLength(forInputCount: 0, final: true))
        let written = try output.withUnsafeMutableBytes { try finish(into: $0) }
        output.removeLast(output.count - written)
        return output
    }
}

extension DigestStream {
    public func update(_ input: [UInt8]) throws {
        try input.withUnsafeBytes { try update($0) }
    }

    public func finish() throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        try output.withUnsafeMutableBytes { try finish(into: $0) }
        return output
    }
}
