import SecurityBase
public import CryptoContract
public import CryptoDispatcher
public import Foundation

/// AES key wrap (RFC 3394 §2.2), on AES-ECB through the dispatcher.
public enum AESKeyWrap {
    /// RFC 3394 §2.2.3.1's default initial value.
    public static let defaultIV: [UInt8] = [0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6]

    /// Wraps `key` (a multiple of 8 bytes, at least 16) under `kek` (16, 24 or 32 bytes) into `output`
    /// (`key.count + 8` bytes).
    /// - Throws: ``CryptoError`` `.invalidKeySize` (kek), `.invalidParameter` (key length, IV length),
    ///   `.bufferTooSmall`.
    public static func wrap(
        _ key: UnsafeRawBufferPointer, kek: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer, engine: any CryptoBackend = Dispatcher.shared
    ) throws {
        let spec = try check(kek: kek, iv: iv, dataCount: key.count, label: "key to wrap")
        try CryptoError.checkOutput(output, holds: key.count + 8)
        let n = key.count / 8
        // The key being wrapped and every block holding part of it live in SecretBytes: wiped when released, with
        // no array copy left behind (the AES calls write into them in place of returning new arrays).
        var registers = SecretBytes(copying: key)
        var block = SecretBytes(zeroed: 16)
        var a = Array(iv)
        for j in 0...5 {
            for i in 1...n {
                // B = AES(K, A | R[i]); A = MSB(64, B) ^ t where t = (n*j)+i; R[i] = LSB(64, B)
                try aes(.encrypt, spec, kek: kek, a: a, registers: registers, index: i, into: &block, engine: engine)
                block.withUnsafeBytes { block in
                    a = Array(block[0..<8])
                    registers.withUnsafeMutableBytes { $0[(i - 1) * 8..<i * 8].copyBytes(from: block[8..<16]) }
                }
                xorCounter(&a, UInt64(n * j + i))
            }
        }
        output.copyBytes(from: a)
        registers.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: output[8...]).copyMemory(from: $0) }
    }

    /// Unwraps `wrapped` (a multiple of 8 bytes, at least 24) into `output` (`wrapped.count - 8` bytes).
    /// - Throws: ``CryptoError`` as ``wrap(_:kek:iv:into:engine:)``, and `.integrity` when the integrity
    ///   check fails (wrong KEK, wrong IV, or tampered data); then nothing is written.
    public static func unwrap(
        _ wrapped: UnsafeRawBufferPointer, kek: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer, engine: any CryptoBackend = Dispatcher.shared
    ) throws {
        guard wrapped.count >= 24 else {
            throw CryptoError(.invalidParameter, "a wrapped key has at least 24 bytes, got \(wrapped.count)")
        }
        let spec = try check(kek: kek, iv: iv, dataCount: wrapped.count - 8, label: "wrapped key")
        try CryptoError.checkOutput(output, holds: wrapped.count - 8)
        let n = wrapped.count / 8 - 1
        var a = Array(wrapped[0..<8])
        var registers = SecretBytes(copying: UnsafeRawBufferPointer(rebasing: wrapped[8...]))
        var block = SecretBytes(zeroed: 16)
        for j in stride(from: 5, through: 0, by: -1) {
            for i in stride(from: n, through: 1, by: -1) {
                // B = AES-1(K, (A ^ t) | R[i]) where t = n*j+i; A = MSB(64, B); R[i] = LSB(64, B)
                xorCounter(&a, UInt64(n * j + i))
                try aes(.decrypt, spec, kek: kek, a: a, registers: registers, index: i, into: &block, engine: engine)
                block.withUnsafeBytes { block in
                    a = Array(block[0..<8])
                    registers.withUnsafeMutableBytes { $0[(i - 1) * 8..<i * 8].copyBytes(from: block[8..<16]) }
                }
            }
        }
        guard constantTimeEquals(a, Array(iv)) else { throw CryptoError(.integrity, "the wrapped key fails its integrity check") }
        registers.withUnsafeBytes { output.copyMemory(from: $0) }
    }

    /// One AES block of the key-wrap rounds: `A | R[index]` through AES-ECB under `kek`, into `block`.
    private static func aes(
        _ direction: CipherDirection, _ spec: CipherSpec, kek: UnsafeRawBufferPointer, a: [UInt8], registers: SecretBytes,
        index: Int, into block: inout SecretBytes, engine: any CryptoBackend
    ) throws {
        var input = SecretBytes(zeroed: 16)
        input.withUnsafeMutableBytes { input in
            input.copyBytes(from: a)
            registers.withUnsafeBytes { input[8..<16].copyBytes(from: $0[(index - 1) * 8..<index * 8]) }
        }
        _ = try input.withUnsafeBytes { input in
            try block.withUnsafeMutableBytes { try engine.crypt(direction, spec, key: kek, iv: nil, input: input, output: $0) }
        }
    }

    public static func wrap(_ key: some DataProtocol, kek: some DataProtocol, iv: [UInt8] = defaultIV) throws -> Data {
        let key = SecretBytes(key), kek = SecretBytes(kek)
        var output = Data(count: key.count + 8)
        try key.withUnsafeBytes { key in
            try kek.withUnsafeBytes { kek in
                try iv.withUnsafeBytes { iv in try output.withUnsafeMutableBytes { try wrap(key, kek: kek, iv: iv, into: $0) } }
            }
        }
        return output
    }

    public static func unwrap(_ wrapped: some DataProtocol, kek: some DataProtocol, iv: [UInt8] = defaultIV) throws -> Data {
        let wrapped = Array(wrapped), kek = SecretBytes(kek)
        var output = Data(count: max(wrapped.count - 8, 0))
        try wrapped.withUnsafeBytes { wrapped in
            try kek.withUnsafeBytes { kek in
                try iv.withUnsafeBytes { iv in
                    try output.withUnsafeMutableBytes { try unwrap(wrapped, kek: kek, iv: iv, into: $0) }
                }
            }
        }
        return output
    }

    private static func check(kek: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer, dataCount: Int, label: String) throws -> CipherSpec {
        guard let algorithm = CipherAlgorithm.aes(keySize: kek.count) else {
            throw CryptoError(.invalidKeySize, "a key-encryption key has 16, 24 or 32 bytes, got \(kek.count)")
        }
        guard iv.count == 8 else { throw CryptoError(.invalidParameter, "the key-wrap IV has 8 bytes, got \(iv.count)") }
        guard dataCount >= 16, dataCount % 8 == 0 else {
            throw CryptoError(.invalidParameter, "the \(label) must be a multiple of 8 bytes, at least 16; got \(dataCount)")
        }
        return CipherSpec(algorithm, .ecb)
    }

    private static func xorCounter(_ a: inout [UInt8], _ t: UInt64) {
        for index in 0..<8 { a[index] ^= UInt8(truncatingIfNeeded: t >> (56 - 8 * index)) }
    }
}
