import SecurityBase
import CryptoContract
import Foundation
import Synchronization

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

    /// The smallest piece ``runConcurrently(pieces:_:_:_:input:output:chain:)`` makes. Measured in the engine-noaes
    /// lane (`make bench-engine`, AES-128-CBC decryption): 1 MiB in two pieces at once 223 MB/s against 160 for
    /// one request after another; 64 KiB in two pieces of 32 KiB no faster than one request (187 against 191: waking
    /// a second thread costs what the overlap saves). So a message is cut only from two chunks up.
    static let minimumConcurrentPiece = KernelRuntime.chunkSize

    /// How many pieces to run at once for `count` bytes of a mode whose pieces are independent (ECB, CTR, CBC
    /// decryption) on an engine: at most one per CPU (each waits in its own thread for its request), each at
    /// least ``minimumConcurrentPiece``; 1 where that is not worth it.
    static func concurrentPieces(_ spec: CipherSpec, _ direction: CipherDirection, count: Int) -> Int {
        guard spec.mode == .ecb || spec.mode == .ctr || (spec.mode == .cbc && direction == .decrypt) else { return 1 }
        return max(1, min(processors, count / minimumConcurrentPiece))
    }

    private static let processors = min(4, ProcessInfo.processInfo.activeProcessorCount)

    /// Runs `input` as `pieces` contiguous pieces at once, each on its own handle (from `handles`) and thread,
    /// leaving `chain` as ``run(_:_:_:input:output:chain:)`` would. Only for modes whose pieces depend on the
    /// input alone: each piece's chaining value is taken before any piece runs (CBC decryption: the ciphertext
    /// block before it, which an in-place call overwrites; CTR: the counter advanced to its first block).
    /// An engine queues requests, so two in flight finish sooner than one after the other.
    static func runConcurrently(
        pieces: Int, _ spec: CipherSpec, _ direction: CipherDirection, handles: (_ body: (KcapiHandle) throws -> Void) throws -> Void,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, chain: UnsafeMutableRawBufferPointer
    ) throws {
        let block = spec.algorithm.blockSize
        let blocks = input.count / block
        // Piece k covers blocks [k * blocks / pieces, (k + 1) * blocks / pieces); the last also takes a partial block
        // (CTR's message end).
        let starts = (0..<pieces).map { $0 * blocks / pieces * block } + [input.count]
        try withUnsafeTemporaryAllocation(byteCount: (pieces + 1) * block, alignment: 16) { chains in
            defer { secureWipe(chains) }
            func chainOf(_ piece: Int) -> UnsafeMutableRawBufferPointer {
                UnsafeMutableRawBufferPointer(rebasing: chains[piece * block..<(piece + 1) * block])
            }
            for piece in 0..<pieces {
                let start = starts[piece]
                switch spec.mode {
                case .cbc:
                    chainOf(piece).copyMemory(
                        from: start == 0 ? UnsafeRawBufferPointer(chain) : UnsafeRawBufferPointer(rebasing: input[(start - block)..<start]))
                case .ctr:
                    chainOf(piece).copyMemory(from: UnsafeRawBufferPointer(chain))
                    addToCounter(chainOf(piece), UInt64(start / block))
                default:
                    break
                }
            }
            // What `run` leaves in `chain`: CBC decryption's last ciphertext block, saved before it is overwritten.
            if spec.mode == .cbc, input.count >= block {
                chainOf(pieces).copyMemory(from: UnsafeRawBufferPointer(rebasing: input[(input.count - block)...]))
            }
            KernelBackend.concurrentRequestCounter.add(pieces, ordering: .relaxed)
            let failure = Mutex<(any Error)?>(nil)
            withoutActuallyEscaping(handles) { handles in
                let job = Borrowed { (piece: Int) in
                    let range = starts[piece]..<starts[piece + 1]
                    do {
                        try handles { handle in
                            try run(
                                handle, spec, direction, input: UnsafeRawBufferPointer(rebasing: input[range]),
                                output: UnsafeMutableRawBufferPointer(rebasing: output[range]), chain: chainOf(piece))
                        }
                    } catch {
                        failure.withLock { if $0 == nil { $0 = error } }
                    }
                }
                DispatchQueue.concurrentPerform(iterations: pieces) { job.body($0) }
            }
            if let error = failure.withLock({ $0 }) { throw error }
            switch spec.mode {
            case .cbc where input.count >= block: chain.copyMemory(from: UnsafeRawBufferPointer(chainOf(pieces)))
            case .ctr: addToCounter(chain, UInt64(blocks))
            default: break
            }
        }
    }

    /// One iteration's work for `DispatchQueue.concurrentPerform`, which wants it `Sendable`. @unchecked: it borrows
    /// the caller's buffers and handle, and concurrentPerform returns only when every iteration has, so they outlive
    /// the work; each iteration writes only its own piece of the output and its own chaining block.
    private struct Borrowed: @unchecked Sendable {
        let body: (Int) -> Void
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
