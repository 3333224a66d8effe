internal import CTPM
import Foundation
import SecurityBase
import Synchronization

/// A TPM 2.0, reached through the TSS2 ESAPI: where the keys that stand for Apple's Secure Enclave keys are made and
/// used (``TPMKey``). Which TPM is a TCTI configuration: `SECURITYSERVICES_TPM_TCTI` (for a software TPM:
/// `swtpm:host=127.0.0.1,port=2321`), else the kernel's resource manager `device:/dev/tpmrm0`.
///
/// The connection opens at the first call and stays open; the ESAPI context serves one caller at a time, so calls
/// are serialised. A call that fails in the transport (a TPM that went away) closes it, and the next call opens it
/// again. TSS2 logs its own failures to standard error; `TSS2_LOG=all+none` silences it.
public final class TrustedPlatformModule: Sendable {
    /// The TCTI configuration.
    public let configuration: String
    private let connection = Mutex<Connection?>(nil)

    /// The TPM the Apple-compatible calls use (`SecKeyCreateRandomKey` with `kSecAttrTokenIDSecureEnclave`, keys
    /// read back from the keychain): the one the environment names, unless the application set another.
    public static var shared: TrustedPlatformModule {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    private static let current = Mutex(
        TrustedPlatformModule(configuration: ProcessInfo.processInfo.environment["SECURITYSERVICES_TPM_TCTI"] ?? "device:/dev/tpmrm0"))

    public init(configuration: String) {
        self.configuration = configuration
    }

    /// Opens the connection now, if it is not open (calls open it by themselves): whether the TPM is there.
    /// - Throws: ``HardwareKeyError`` `.unavailable`.
    public func open() throws {
        try connection.withLock { state in
            if state == nil { state = try Connection(configuration) }
        }
    }

    /// Makes a P-256 key in the TPM: its public and private areas (the private one encrypted by the TPM's storage
    /// key, useless elsewhere).
    func createP256() throws -> TPMKeyAreas {
        try create("key creation") { ctpm_create_p256($0, $1, $2, $3, $4) }
    }

    /// Makes an RSA key of `bits` in the TPM (exponent 65537): its public and private areas.
    func createRSA(bits: Int) throws -> TPMKeyAreas {
        try create("RSA-\(bits) key creation") { ctpm_create_rsa($0, UInt16(bits), $1, $2, $3, $4) }
    }

    /// A key `make` creates in the TPM, its areas written into buffers of `CTPM_BLOB_MAX` bytes.
    private func create(
        _ what: String,
        _ make: (OpaquePointer, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<Int>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<Int>) -> UInt32
    ) throws -> TPMKeyAreas {
        try call(what) { tpm in
            var publicArea = [UInt8](repeating: 0, count: Int(CTPM_BLOB_MAX))
            var privateArea = [UInt8](repeating: 0, count: Int(CTPM_BLOB_MAX))
            var publicSize = 0
            var privateSize = 0
            let rc = make(tpm, &publicArea, &publicSize, &privateArea, &privateSize)
            return (rc, TPMKeyAreas(publicArea: Array(publicArea.prefix(publicSize)), privateArea: Array(privateArea.prefix(privateSize))))
        }
    }

    /// The raw RSA private operation of the key of `areas` on `block` (one modulus long): the result, as long.
    func rsaRaw(_ block: [UInt8], with areas: TPMKeyAreas) throws -> SecretBytes {
        try call("RSA private operation") { tpm in
            var output = SecretBytes(zeroed: block.count)
            let rc = output.withUnsafeMutableBytes { output in
                ctpm_rsa_raw(
                    tpm, areas.publicArea, areas.publicArea.count, areas.privateArea, areas.privateArea.count, block, block.count,
                    output.baseAddress, output.count)
            }
            return (rc, output)
        }
    }

    /// ECDSA over a 32-byte digest with the key of `areas`: r and s, 32 bytes each.
    func sign(_ digest: [UInt8], with areas: TPMKeyAreas) throws -> (r: [UInt8], s: [UInt8]) {
        try call("signing") { tpm in
            var r = [UInt8](repeating: 0, count: 32)
            var s = [UInt8](repeating: 0, count: 32)
            let rc = ctpm_sign_p256(
                tpm, areas.publicArea, areas.publicArea.count, areas.privateArea, areas.privateArea.count, digest, digest.count, &r, &s)
            return (rc, (r, s))
        }
    }

    /// ECDH of the key of `areas` with `peer` (`04||x||y`): the shared point's x-coordinate.
    func sharedSecret(_ areas: TPMKeyAreas, peer: [UInt8]) throws -> [UInt8] {
        try call("key exchange") { tpm in
            var x = [UInt8](repeating: 0, count: 32)
            let rc = ctpm_ecdh_p256(tpm, areas.publicArea, areas.publicArea.count, areas.privateArea, areas.privateArea.count, peer, &x)
            return (rc, x)
        }
    }

    /// Runs `body` on the open connection (opening it first), turning a nonzero response code into an error.
    private func call<T>(_ what: String, _ body: (OpaquePointer) -> (UInt32, T)) throws -> T {
        try connection.withLock { state in
            if state == nil { state = try Connection(configuration) }
            let (rc, result) = body(state!.tpm)  // set above
            guard rc == 0 else {
                // The TSS2 layer of a response code is its top byte: 0 (TPM) and 1 (a format-one TPM code) are the
                // TPM's answer; others (the TCTI, the ESAPI) mean the conversation itself failed.
                if rc >> 16 != 0 { state = nil }
                throw HardwareKeyError(.deviceFailure, "the TPM (\(configuration)) failed the \(what): \(Connection.describe(rc))")
            }
            return result
        }
    }

    /// The ESAPI context and the primary storage key: owned here, closed when released.
    private final class Connection {
        let tpm: OpaquePointer

        init(_ configuration: String) throws {
            // A device that is not there is the common case of no TPM: say so without TSS2's own complaint.
            if configuration.hasPrefix("device:") {
                let path = configuration.dropFirst("device:".count)
                guard access(String(path.isEmpty ? "/dev/tpmrm0" : path), F_OK) == 0 else {
                    throw HardwareKeyError(
                        .unavailable, "no TPM here: \(path) does not exist (SECURITYSERVICES_TPM_TCTI names another TPM)")
                }
            }
            var tpm: OpaquePointer?
            let rc = ctpm_open(configuration, &tpm)
            guard rc == 0, let tpm else {
                throw HardwareKeyError(.unavailable, "the TPM at \(configuration) does not answer: \(Self.describe(rc))")
            }
            self.tpm = tpm
        }

        deinit { ctpm_close(tpm) }

        static func describe(_ rc: UInt32) -> String {
            ctpm_describe(rc).map { String(cString: $0) } ?? String(rc, radix: 16)
        }
    }
}

/// A TPM key's two areas as the TPM gave them (marshalled TPM2B_PUBLIC and TPM2B_PRIVATE).
struct TPMKeyAreas: Sendable, Hashable {
    let publicArea: [UInt8]
    let privateArea: [UInt8]
}
