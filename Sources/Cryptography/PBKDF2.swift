import SecurityBase
public import CryptoContract
public import CryptoDispatcher
public import Foundation

/// PBKDF2 (RFC 8018 §5.2) with an HMAC pseudo-random function, through the dispatcher's HMAC.
public enum PBKDF2 {
    /// Derives `output.count` bytes.
    /// - Parameters:
    ///   - prf: the HMAC digest (SHA-1 or SHA-2).
    ///   - rounds: the iteration count, at least 1.
    ///   - engine: the crypto engine; the process-wide dispatcher by default.
    /// - Throws: ``CryptoError`` `.invalidParameter` for zero iterations or an empty output, `.unsupported` for
    ///   a digest without HMAC, `.overflow` for more than (2^32 − 1) blocks.
    public static func deriveKey(
        password: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, prf: DigestAlgorithm, rounds: Int,
        into output: UnsafeMutableRawBufferPointer, engine: any CryptoBackend = Dispatcher.shared
    ) throws {
        guard rounds >= 1 else { throw CryptoError(.invalidParameter, "PBKDF2 needs at least one round") }
        guard output.count > 0 else { throw CryptoError(.invalidParameter, "PBKDF2 needs a non-empty output") }
        let length = prf.outputSize
        let blocks = (output.count + length - 1) / length
        guard blocks <= Int(UInt32.max) else { throw CryptoError(.overflow, "PBKDF2 output too long") }
        let hmac = try engine.makeHMACStream(prf, key: password)
        // Key material: in SecretBytes, so the copy `t = u` makes and every buffer left behind is wiped too.
        var u = SecretBytes(zeroed: length)
        var t = SecretBytes(zeroed: length)
        for block in 1...blocks {
            // U_1 = PRF(P, S || INT(i)); U_j = PRF(P, U_{j-1}); T_i = U_1 xor ... xor U_c.
            try hmac.reset()
            try hmac.update(salt)
            let index = [UInt8(truncatingIfNeeded: block >> 24), UInt8(truncatingIfNeeded: block >> 16),
                         UInt8(truncatingIfNeeded: block >> 8), UInt8(truncatingIfNeeded: block)]
            try index.withUnsafeBytes { try hmac.update($0) }
            try u.withUnsafeMutableBytes { try hmac.finish(into: $0) }
            t = u
            if rounds > 1 {
                for _ in 2...rounds {
                    try hmac.reset()
                    try u.withUnsafeBytes { try hmac.update($0) }
                    try u.withUnsafeMutableBytes { try hmac.finish(into: $0) }
                    t.withUnsafeMutableBytes { t in u.withUnsafeBytes { u in for index in 0..<length { t[index] ^= u[index] } } }
                }
            }
            let start = (block - 1) * length
            let count = min(length, output.count - start)
            t.withUnsafeBytes { output.baseAddress!.advanced(by: start).copyMemory(from: $0.baseAddress!, byteCount: count) }  // !: both non-empty
        }
    }

    /// `length` derived bytes.
    public static func deriveKey(
        password: some DataProtocol, salt: some DataProtocol, prf: DigestAlgorithm, rounds: Int, length: Int
    ) throws -> Data {
        var output = Data(count: length)
        let password = SecretBytes(password), salt = Array(salt)
        try password.withUnsafeBytes { password in
            try salt.withUnsafeBytes { salt in
                try output.withUnsafeMutableBytes {
                    try deriveKey(password: password, salt: salt, prf: prf, rounds: rounds, into: $0)
                }
            }
        }
        return output
    }

    /// The number of rounds that takes about `milliseconds` on this machine for these sizes (at least 10 000,
    /// the floor Apple's CommonCrypto applies).
    public static func calibrate(
        passwordLength: Int, saltLength: Int, prf: DigestAlgorithm, derivedKeyLength: Int, milliseconds: Int
    ) throws -> Int {
        let password = [UInt8](repeating: 0x61, count: max(passwordLength, 1))
        let salt = [UInt8](repeating: 0x73, count: max(saltLength, 1))
        let probeRounds = 2000
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            _ = try deriveKey(password: password[..<passwordLength], salt: salt[..<saltLength], prf: prf, rounds: probeRounds, length: max(derivedKeyLength, 1))
        }
        let perRound = max(elapsed.nanoseconds / Double(probeRounds), 1)
        let rounds = Double(milliseconds) * 1e6 / perRound
        return max(10_000, Int(min(rounds, Double(UInt32.max))))
    }
}
