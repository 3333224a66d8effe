import Certificates
import Foundation
import HardwareKeys
import SecurityBase

/// What holding a key in hardware costs: P-256 ECDSA signatures and ECDH with a key in the TPM and on a PKCS#11
/// token against the same operations in software, same run. The TPM is the one `SECURITYSERVICES_TPM_TCTI` names,
/// else a software TPM (swtpm on loopback) the benchmark starts, else none; the token is a SoftHSM2 token the
/// benchmark initialises in a store of its own, else none (not measured).
struct HardwareKeyBench {
    struct Row: Encodable {
        let holder: String
        let op: String
        /// Median microseconds per call.
        let microseconds: Double
        let softwareMicroseconds: Double
        /// How many times software's time the held key takes.
        var factor: Double { microseconds / softwareMicroseconds }

        enum CodingKeys: String, CodingKey { case holder, op, microseconds = "us", softwareMicroseconds = "software_us", factor }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(holder, forKey: .holder)
            try container.encode(op, forKey: .op)
            try container.encode(microseconds, forKey: .microseconds)
            try container.encode(softwareMicroseconds, forKey: .softwareMicroseconds)
            try container.encode(factor, forKey: .factor)
        }
    }

    let rounds: Int
    let budget: Duration

    /// The rows, and why some holders have none.
    func run() -> (rows: [Row], notes: [String]) {
        var rows: [Row] = []
        var notes: [String] = []
        do {
            let (tpm, holder, running) = try Self.tpm()
            defer { running?.stop() }
            if let tpm {
                rows += try measure(try TPMKey.generate(in: tpm).privateKey(), holder: holder)
            } else {
                notes.append("no TPM (neither SECURITYSERVICES_TPM_TCTI nor swtpm): not measured")
            }
        } catch {
            notes.append("the TPM failed: \(error)")
        }
        do {
            if let (key, store) = try Self.softHSMKey() {
                defer { store.remove() }
                rows += try measure(key, holder: "SoftHSM2 token")
            } else {
                notes.append("no SoftHSM2 (softhsm2-util): PKCS#11 not measured")
            }
        } catch {
            notes.append("the PKCS#11 token failed: \(error)")
        }
        return (rows, notes)
    }

    /// ECDSA over a SHA-256 digest and ECDH with `held` against a software P-256 key.
    private func measure(_ held: AsymmetricKey, holder: String) throws -> [Row] {
        let software = try AsymmetricKey.generateEC(curve: .p256)
        let peer = try AsymmetricKey.generateEC(curve: .p256).publicKey()
        let digest = Data(repeating: 0x5a, count: 32)
        let algorithm = SignatureAlgorithm.ecdsaX962(.sha256, hashing: false)
        func row(_ op: String, _ call: @escaping (AsymmetricKey) throws -> Data) throws -> Row {
            guard (try? call(held)) != nil else { throw BenchFailure("\(holder) \(op) fails before timing") }
            let times = Comparison.compare(
                rounds: rounds, budget: budget, ours: { (try? call(held)) != nil }, theirs: { (try? call(software)) != nil })
            return Row(holder: holder, op: op, microseconds: times.ours, softwareMicroseconds: times.theirs)
        }
        return [
            try row("ec-sign") { try $0.signature(for: digest, algorithm: algorithm) },
            try row("ecdh") { try $0.sharedSecret(with: peer) },
        ]
    }

    /// A P-256 key made on a SoftHSM2 token initialised in a store of the benchmark's own (SOFTHSM2_CONF, set
    /// before this process loads SoftHSM), and the store; nil without SoftHSM.
    private static func softHSMKey() throws -> (AsymmetricKey, TemporaryDirectory)? {
        let module = "/usr/lib/softhsm/libsofthsm2.so"
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/softhsm2-util"), FileManager.default.fileExists(atPath: module) else {
            return nil
        }
        let store = try TemporaryDirectory(prefix: "secbench-softhsm")
        let configuration = store.path + "/softhsm2.conf"
        try "directories.tokendir = \(store.path)\nobjectstore.backend = file\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        setenv("SOFTHSM2_CONF", configuration, 1)
        let setup = Process()
        setup.executableURL = URL(fileURLWithPath: "/usr/bin/softhsm2-util")
        setup.arguments = ["--init-token", "--free", "--label", "secbench", "--so-pin", "87654321", "--pin", "123456"]
        setup.standardOutput = FileHandle.nullDevice
        try setup.run()
        setup.waitUntilExit()
        guard setup.terminationStatus == 0, let token = try PKCS11Modules(path: module).tokens().first(where: { $0.label == "secbench" })
        else {
            store.remove()
            throw BenchFailure("softhsm2-util did not make a token")
        }
        let key = try token.generateP256(label: "secbench", pin: SecretBytes(Array("123456".utf8)))
        return (try key.privateKey(), store)
    }

    /// The TPM to measure and how to name it, and the swtpm started for it.
    private static func tpm() throws -> (TrustedPlatformModule?, String, SoftwareTPMProcess?) {
        if let configured = ProcessInfo.processInfo.environment["SECURITYSERVICES_TPM_TCTI"] {
            return (TrustedPlatformModule(configuration: configured), "TPM (\(configured))", nil)
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/swtpm") else { return (nil, "", nil) }
        let running = try SoftwareTPMProcess()
        return (running.tpm, "swtpm on loopback", running)
    }
}

/// swtpm on a loopback port with a throwaway state, for as long as the benchmark measures.
final class SoftwareTPMProcess {
    let tpm: TrustedPlatformModule
    private let process = Process()
    private let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "secbench-swtpm")
        let port = UInt16.random(in: 20000...59998)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/swtpm")
        process.arguments = [
            "socket", "--tpm2", "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1", "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
            "--tpmstate", "dir=\(directory.path)", "--flags", "not-need-init,startup-clear",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        tpm = TrustedPlatformModule(configuration: "swtpm:host=127.0.0.1,port=\(port)")
        // Connected once it listens (a TCP connection that succeeds; TSS2 would log each refused one).
        for _ in 0..<50 where process.isRunning {
            if Self.listens(port) {
                try tpm.open()
                return
            }
            usleep(100_000)
        }
        stop()
        throw BenchFailure("swtpm did not start")
    }

    private static func listens(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        directory.remove()
    }
}
