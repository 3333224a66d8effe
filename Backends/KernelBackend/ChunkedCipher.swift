import CryptoContract

/// Block-cipher work on a kernel handle in pieces of at most ``KernelRuntime/chunkSize``, carrying the
/// chaining value between pieces as the mode defines it: CBC's IV becomes the last ciphertext block, CTR's
/// counter advances by one per block (big-endian, the kernel's `ctr()` template). ECB carries nothing.
enum ChunkedCipher {
    /// Runs `input` (whole blocks, or any length for CTR at the end of a message) into `output`, updating
    /// `chain` (one block; unused for ECB). `output` must hold `input.count` bytes; it may be `input` itself.
    static func run(
        _ handle: KcapiHandle, _ spec: CipherSpec, _ direction: CipherDirection,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, chain: UnsafeMutableRawBufferPointer
    ) throws {
        let block = spec.algorithm.blockSize
        var offset = 0
        try withUnsafeTemporaryAllocation(byteCount: block, alignment: 16) { nextChain in
            while offset < input.count {
                let length = min(KernelRuntime.chunkSize, input.count - offset)
                let inChunk = UnsafeRawBufferPointer(rebasing: input[offset..<offset + length])
                let outChunk = UnsafeMutableRawBufferPointer(rebasing: output[offset..<offset + length])
                if spec.mode == .cbc && direction == .decrypt {
                    // The next IV is this piece's last ciphertext block: save it before an in-place call overwrites it.
                    nextChain.copyMemory(from: UnsafeRawBufferPointer(rebasing: inChunk[(length - block)...]))
                }
                let iv = spec.mode == .ecb ? nil : UnsafePointer(chain.bindMemory(to: UInt8.self).baseAddress)
                let done = try handle.crypt(direction, inChunk, iv: iv, outChunk)
                guard done == length else {
                    throw CryptoError(.backendFailure, "\(handle.algorithmName) processed \(done) of \(length) bytes")
                }
                switch (spec.mode, direction) {
                case (.cbc, .encrypt):
                    chain.copyMemory(from: UnsafeRawBufferPointer(rebasing: outChunk[(length - block)...]))
                case (.cbc, .decrypt):
                    chain.copyMemory(from: UnsafeRawBufferPointer(nextChain))
                case (.ctr, _):
                    addToCounter(chain, UInt64(length / block))
                default:
                    break
                }
                offset += length
            }
        }
    }

    /// Adds `blocks` to a big-endian counter block.
    static func addToCounter(_ counter: UnsafeMutableRawBufferPointer, _ blocks: UInt64) {
        var carry = blocks
        var index = counter.count - 1
        while carry > 0 && index >= 0 {
            let sum = UInt64(counter[index]) + (carry & 0xff)
            counter[index] = UInt8(truncatingIfNeeded: sum)
            carry = (carry >> 8) + (sum >> 8)
            index -= 1
        }
    }

    /// Writes the PKCS#7 block for the `tail` (fewer than one block) into `block`.
    static func padBlock(_ tail: UnsafeRawBufferPointer, into block: UnsafeMutableRawBufferPointer) {
        let pad = UInt8(block.count - tail.count)
        for index in 0..<block.count { block[index] = index < tail.count ? tail[index] : pad }
    }

    /// The PKCS#7 pad length of a decrypted last block, checked without branching on the secret bytes;
    /// `nil` when the padding is invalid.
    static func padLength(_ block: UnsafeRawBufferPointer) -> Int? {
        let size = block.count
        let pad = Int(block[size - 1])
        var bad = (pad == 0 ? 1 : 0) | (pad > size ? 1 : 0)
        for index in 0..<size {
            // Every byte among the last `pad` must equal `pad`; the loop always runs the whole block.
            let inPad = index >= size - pad ? 1 : 0
            bad |= inPad & (Int(block[index]) != pad ? 1 : 0)
        }
        return bad == 0 ? pad : nil
    }
}
