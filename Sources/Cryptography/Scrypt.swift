import SecurityBase
import CryptoContract
internal import COpenSSL
import Foundation

/// scrypt (RFC 7914): password-based key derivation that costs memory as well as time, so that guessing passwords
/// on parallel hardware costs as much memory per guess as the defender spent once. OpenSSL's implementation: no
/// engine serves a memory-hard function, so it is not a dispatcher route (as PBKDF2's HMAC is).
public enum Scrypt {
    /// The cost parameters: N = 2^``costLog2`` (CPU and memory), r = ``blockSize``, p = ``parallelism``.
    public struct Parameters: Sendable, Hashable {
        public var costLog2: Int
        public var blockSize: Int
        public var parallelism: Int

        public init(costLog2: Int, blockSize: Int = 8, parallelism: Int = 1) {
            self.costLog2 = costLog2
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// The memory one derivation needs: 128·r·(N + p + 2) bytes (RFC 7914 §6: V and B, plus X and scratch).
        public var memoryBytes: Int { 128 * blockSize * ((1 << costLog2) + parallelism + 2) }

        /// The largest N accepted: 2^22 with r = 8 is 4 GiB, beyond what a keychain may ask of a machine.
        public static let maximumCostLog2 = 22

        func validated() throws -> Parameters {
            // RFC 7914 §2: N a power of two greater than 1, r·p < 2^30; the memory bound keeps a hostile parameter
            // set (read from a file) from asking for more than 4 GiB.
            guard (1...Self.maximumCostLog2).contains(costLog2), blockSize >= 1, parallelism >= 1,
                blockSize.multipliedReportingOverflow(by: parallelism).partialValue < 1 << 30,
                blockSize <= 1 << 20, parallelism <= 1 << 20, memoryBytes <= 1 << 32
            else {
                throw CryptoError(.invalidParameter, "scrypt parameters out of range (N 2^\(costLog2), r \(blockSize), p \(parallelism))")
            }
            return self
        }
    }

    /// Derives `output.count` bytes from `password` and `salt`.
    /// - Throws: ``CryptoError`` `.invalidParameter` for parameters out of range or an empty output,
    ///   `.backendFailure` with OpenSSL's error code when it fails (the memory could not be had).
    public static func deriveKey(
        password: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, parameters: Parameters,
        into output: UnsafeMutableRawBufferPointer
    ) throws {
        let parameters = try parameters.validated()
        guard output.count > 0 else { throw CryptoError(.invalidParameter, "scrypt needs a non-empty output") }
        // EVP_PBE_scrypt refuses to allocate more than maxmem (32 MiB by default): allow what these parameters need.
        let maximumMemory = UInt64(parameters.memoryBytes) + 1 << 20
        ERR_clear_error()
        // An empty buffer's base address may be nil; OpenSSL takes (NULL, 0) for an empty password or salt.
        let status = EVP_PBE_scrypt(
            password.baseAddress?.assumingMemoryBound(to: CChar.self), password.count,
            salt.baseAddress?.assumingMemoryBound(to: UInt8.self), salt.count,
            UInt64(1) << UInt64(parameters.costLog2), UInt64(parameters.blockSize), UInt64(parameters.parallelism),
            maximumMemory, output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count)  // !: count > 0
        guard status == 1 else {
            let code = ERR_get_error()
            ERR_clear_error()
            secureWipe(output)
            throw CryptoError(.backendFailure, "scrypt failed", nativeCode: Int(code))
        }
    }

    /// The parameters that take about `milliseconds` here, with r = 8 and p = 1: N is measured at 2^14 and scaled
    /// (scrypt's time is linear in N), a power of two between 2^15 and 2^20 (32 MiB to 1 GiB).
    public static func calibrate(milliseconds: Int) throws -> Parameters {
        let probe = Parameters(costLog2: 14)
        var output = SecretBytes(zeroed: 32)
        let password = Array("calibration".utf8), salt = [UInt8](repeating: 0x5a, count: 16)
        let elapsed = try ContinuousClock().measure {
            try password.withUnsafeBytes { password in
                try salt.withUnsafeBytes { salt in
                    try output.withUnsafeMutableBytes { try deriveKey(password: password, salt: salt, parameters: probe, into: $0) }
                }
            }
        }
        let probeMilliseconds = max(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3, 0.01)
        let scale = Double(milliseconds) / probeMilliseconds
        let costLog2 = 14 + Int((log2(max(scale, 1))).rounded())
        return Parameters(costLog2: min(max(costLog2, 15), 20))
    }
}
