internal import CMD2
import CryptoContract

/// MD2 (RFC 1319), which OpenSSL 3 no longer has: the C implementation in `Backends/CMD2`, shared with
/// CommonCrypto's `CC_MD2_CTX` functions. A value type: no allocation.
struct MD2 {
    private var state = cmd2_state()

    init() { cmd2_init(&state) }

    mutating func update(_ input: UnsafeRawBufferPointer) {
        guard let base = input.baseAddress, input.count > 0 else { return }
        cmd2_update(&state, base, input.count)
    }

    /// Writes 16 bytes and starts over.
    mutating func finish(into output: UnsafeMutableRawBufferPointer) {
        cmd2_final(&state, output.bindMemory(to: UInt8.self).baseAddress)
        cmd2_init(&state)
    }
}

/// The streaming face of ``MD2``.
final class MD2Stream: DigestStream {
    let algorithm = DigestAlgorithm.md2
    private var md2 = MD2()

    func update(_ input: UnsafeRawBufferPointer) throws { md2.update(input) }

    func finish(into output: UnsafeMutableRawBufferPointer) throws {
        try CryptoError.checkOutput(output, holds: 16)
        md2.finish(into: output)
    }

    func reset() throws { md2 = MD2() }
}
