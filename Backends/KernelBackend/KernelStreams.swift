import SecurityBase
import CryptoContract

/// A streaming digest or HMAC on one kernel handle, held for the stream's life and given back to the pool
/// when the stream ends (unless an operation on it failed: then it is destroyed).
final class KernelDigestStream: DigestStream {
    let algorithm: DigestAlgorithm
    private let handle: KcapiHandle
    private let pool: HandlePool
    private var fed = false
    private var finished = false
    private var broken = false

    init(_ algorithm: DigestAlgorithm, handle: KcapiHandle, pool: HandlePool) {
        self.algorithm = algorithm
        self.handle = handle
        self.pool = pool
    }

    deinit {
        // A handle with data pending (not finished) would corrupt the next user's digest.
        if !broken && (finished || !fed) { pool.giveBack(handle) }
    }

    func update(_ input: UnsafeRawBufferPointer) throws {
        guard !finished else { throw CryptoError(.callSequence, "update after finish; reset first") }
        guard input.count > 0 else { return }
        do { try handle.update(input) } catch {
            broken = true
            throw error
        }
        fed = true
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws {
        guard !finished else { throw CryptoError(.callSequence, "finish called twice; reset first") }
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        let result = UnsafeMutableRawBufferPointer(rebasing: output[..<algorithm.outputSize])
        do {
            // Nothing sent yet: a one-shot over no data is the digest of the empty message.
            if fed { try handle.final(result) } else { try handle.digest(UnsafeRawBufferPointer(start: nil, count: 0), result) }
        } catch {
            broken = true
            throw error
        }
        finished = true
    }

    func reset() throws {
        if fed && !finished {
            // Drain what the kernel holds so the next message starts clean.
            var scratch = [UInt8](repeating: 0, count: algorithm.outputSize)
            try scratch.withUnsafeMutableBytes { try handle.final($0) }
        }
        fed = false
        finished = false
    }
}

/// A streaming cipher on one kernel handle: whole blocks go to the kernel as they arrive, a partial block
/// (and, when decrypting with PKCS#7, the last whole block) is held until more input or ``finish(into:)``.
/// CTR answers every byte at once, using a saved keystream block for partial blocks.
final class KernelCipherStream: CipherStream {
    let spec: CipherSpec
    let direction: CipherDirection
    private let handle: KcapiHandle
    private let pool: HandlePool
    private let initialIV: [UInt8]
    /// The chaining value (CBC IV, CTR counter), owned by the stream and wiped with it.
    private let chain: UnsafeMutableRawBufferPointer
    private var held: [UInt8] = []
    /// CTR: keystream bytes left from the last partial block.
    private var keystream: [UInt8] = []
    private var accounting: CipherStreamAccounting
    private var finished = false
    private var broken = false

    init(_ direction: CipherDirection, _ spec: CipherSpec, handle: KcapiHandle, pool: HandlePool, iv: UnsafeRawBufferPointer?) {
        self.spec = spec
        self.direction = direction
        self.handle = handle
        self.pool = pool
        initialIV = spec.ivSize > 0 ? Array(iv ?? UnsafeRawBufferPointer(start: nil, count: 0)) : [UInt8](repeating: 0, count: spec.algorithm.blockSize)
        chain = .allocate(byteCount: spec.algorithm.blockSize, alignment: 16)
        chain.copyBytes(from: initialIV)
        accounting = CipherStreamAccounting(spec: spec, direction: direction)
    }

    deinit {
        held.withUnsafeMutableBytes { secureWipe($0) }
        keystream.withUnsafeMutableBytes { secureWipe($0) }
        chain.deallocate()
        if !broken { pool.giveBack(handle) }
    }

    func outputLength(forInputCount inputCount: Int, final: Bool) -> Int {
        accounting.outputLength(forInputCount: inputCount, final: final)
    }

    func update(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !finished else { throw CryptoError(.callSequence, "update after finish; reset first") }
        let count = accounting.updateOutputCount(input.count)
        try CryptoError.checkOutput(output, holds: count)
        // Work from a copy when the caller passes overlapping buffers and held bytes shift the alignment.
        let written = try guarded {
            if !held.isEmpty, overlaps(input, output) {
                let copy = Array(input)
                return try copy.withUnsafeBytes { try process($0, output, count) }
            }
            return try process(input, output, count)
        }
        accounting.recordUpdate(input: input.count, output: written)
        return written
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !finished else { throw CryptoError(.callSequence, "finish called twice; reset first") }
        let block = spec.algorithm.blockSize
        let written: Int = try guarded {
            guard spec.mode.isBlockMode else { return 0 }
            switch (direction, spec.effectivePadding) {
            case (.encrypt, .pkcs7):
                try CryptoError.checkOutput(output, holds: block)
                var last = [UInt8](repeating: 0, count: block)
                held.withUnsafeBytes { tail in last.withUnsafeMutableBytes { ChunkedCipher.padBlock(tail, into: $0) } }
                try runBlocks(last, UnsafeMutableRawBufferPointer(rebasing: output[..<block]))
                return block
            case (.decrypt, .pkcs7):
                guard held.count == block else {
                    throw CryptoError(.alignment, "padded \(spec) decryption needs a non-empty multiple of \(block) bytes")
                }
                var plain = [UInt8](repeating: 0, count: block)
                defer { plain.withUnsafeMutableBytes { secureWipe($0) } }
                try plain.withUnsafeMutableBytes { try runBlocks(held, $0) }
                guard let pad = plain.withUnsafeBytes({ ChunkedCipher.padLength($0) }) else {
                    throw CryptoError(.decode, "\(spec) decryption found invalid padding")
                }
                try CryptoError.checkOutput(output, holds: block - pad)
                output.copyBytes(from: plain[..<(block - pad)])
                return block - pad
            default:
                guard held.isEmpty else {
                    throw CryptoError(.alignment, "\(spec) without padding needs a multiple of \(block) bytes")
                }
                return 0
            }
        }
        held.removeAll()
        finished = true
        return written
    }

    func reset(iv: UnsafeRawBufferPointer?) throws {
        if let iv, spec.ivSize > 0 {
            guard iv.count == spec.ivSize else {
                throw CryptoError(.invalidIVSize, "\(spec) takes an IV of \(spec.ivSize) bytes, got \(iv.count)")
            }
            chain.copyMemory(from: iv)
        } else {
            chain.copyBytes(from: initialIV)
        }
        held.removeAll()
        keystream.removeAll()
        accounting.reset()
        finished = false
    }

    // MARK: Internals

    private func process(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer, _ count: Int) throws -> Int {
        if spec.mode == .ctr { return try counterMode(input, output) }
        let block = spec.algorithm.blockSize
        guard count > 0 else {
            held += input
            return 0
        }
        var consumed = 0
        var written = 0
        if !held.isEmpty {
            // Complete the held block from the input and run it first: chaining order matters.
            consumed = block - held.count
            let first = held + input[..<consumed]
            try runBlocks(first, UnsafeMutableRawBufferPointer(rebasing: output[..<block]))
            written = block
            held.removeAll()
        }
        let direct = count - written
        if direct > 0 {
            try ChunkedCipher.run(
                handle, spec, direction, input: UnsafeRawBufferPointer(rebasing: input[consumed..<consumed + direct]),
                output: UnsafeMutableRawBufferPointer(rebasing: output[written..<count]), chain: chain)
            consumed += direct
        }
        held += input[consumed...]
        return count
    }

    private func counterMode(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) throws -> Int {
        let block = spec.algorithm.blockSize
        var offset = 0
        // Leftover keystream first.
        while offset < input.count && !keystream.isEmpty {
            output[offset] = input[offset] ^ keystream.removeFirst()
            offset += 1
        }
        let whole = (input.count - offset) / block * block
        if whole > 0 {
            try ChunkedCipher.run(
                handle, spec, direction, input: UnsafeRawBufferPointer(rebasing: input[offset..<offset + whole]),
                output: UnsafeMutableRawBufferPointer(rebasing: output[offset..<offset + whole]), chain: chain)
            offset += whole
        }
        if offset < input.count {
            // A partial block: make one keystream block (the cipher of zeros), use what is needed, keep the rest.
            var stream = [UInt8](repeating: 0, count: block)
            try runBlocks(stream, &stream)
            for index in 0..<(input.count - offset) { output[offset + index] = input[offset + index] ^ stream[index] }
            keystream = Array(stream[(input.count - offset)...])
            stream.withUnsafeMutableBytes { secureWipe($0) }
        }
        return input.count
    }

    /// Runs whole blocks through the handle with the stream's chaining value.
    private func runBlocks(_ input: [UInt8], _ output: UnsafeMutableRawBufferPointer) throws {
        try input.withUnsafeBytes { input in
            try ChunkedCipher.run(handle, spec, direction, input: input, output: output, chain: chain)
        }
    }

    private func runBlocks(_ input: [UInt8], _ output: inout [UInt8]) throws {
        try output.withUnsafeMutableBytes { try runBlocks(input, $0) }
    }


    private func guarded<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch let error as CryptoError where error.code == .backendFailure || error.code == .notAvailable {
            broken = true
            throw error
        }
    }

    private func overlaps(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> Bool {
        guard let a = input.baseAddress, let b = output.baseAddress else { return false }
        return a < UnsafeRawPointer(b) + output.count && UnsafeRawPointer(b) < a + input.count
    }
}
