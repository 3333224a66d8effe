public import Foundation
import Synchronization
import HardwareKeys
public import Testing

/// A SoftHSM2 token (Debian's softhsm2) initialised for a test, in SoftHSM's own store, under a label of its own:
/// deleted when the value is released. Set up and inspected with softhsm2-util and OpenSC's pkcs11-tool.
public final class SoftHSMToken: @unchecked Sendable {
    /// The SoftHSM2 module.
    public static let module = "/usr/lib/softhsm/libsofthsm2.so"
    public let label: String
    public let pin = "123456"
    public let securityOfficerPIN = "87654321"

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The SoftHSM configuration its tools run with (`SOFTHSM2_CONF`); nil: SoftHSM's own store.
    let configuration: URL?

    /// A token in SoftHSM's store, or in the store `configuration` names.
    public init(configuration: URL? = nil) throws {
        label = "test-" + UUID().uuidString.prefix(8).lowercased()
        self.configuration = configuration
        try run("/usr/bin/softhsm2-util", ["--init-token", "--free", "--label", label, "--so-pin", securityOfficerPIN, "--pin", pin])
    }

    deinit {
        _ = try? run("/usr/bin/softhsm2-util", ["--delete-token", "--token", label])
    }

    /// pkcs11-tool on this token, logged in with the user PIN; its standard output.
    @discardableResult
    public func tool(_ arguments: [String], in directory: URL? = nil) throws -> Data {
        try run(
            "/usr/bin/pkcs11-tool", ["--module", Self.module, "--token-label", label, "--login", "--pin", pin] + arguments, in: directory)
    }

    @discardableResult
    func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) throws -> Data {
        let output = try OpenSSLCLI.tool(
            executable, arguments, in: directory, environment: configuration.map { ["SOFTHSM2_CONF": $0.path] } ?? [:])
        guard output.status == 0 else {
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) exited \(output.status): \(output.stderr)")
        }
        return output.stdout
    }

    /// Writes onto the token a certificate for its key `id` (CKA_ID, hex), labelled `label`, with the subject
    /// `subject`, issued by a CA made in `directory` (ca.pem, ca.key): what an enrolment would have put on a card.
    public func writeCertificate(forKey id: String, label: String, subject: String, in directory: URL) throws {
        try tool(["--read-object", "--type", "pubkey", "--id", id, "-o", directory.appendingPathComponent("\(label)-pub.der").path])
        try OpenSSLCLI.require(["pkey", "-pubin", "-inform", "DER", "-in", "\(label)-pub.der", "-out", "\(label)-pub.pem"], in: directory)
        try OpenSSLCLI.require(
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-subj",
             "/CN=Card CA", "-days", "30"], in: directory)
        try OpenSSLCLI.require(
            ["x509", "-new", "-force_pubkey", "\(label)-pub.pem", "-subj", subject, "-CA", "ca.pem", "-CAkey", "ca.key", "-days", "10",
             "-outform", "DER", "-out", "\(label).der"], in: directory)
        try tool(["--write-object", directory.appendingPathComponent("\(label).der").path, "--type", "cert", "--id", id, "--label", label])
    }
}

/// Runs the tests that use the process's hardware keys one at a time across the test process: SoftHSM reads its
/// tokens when the module is initialised, and a process initialises it once however many load it, so a token a test
/// makes is seen only if no other test holds the module then; and the TPM the Apple-compatible calls use
/// (``TrustedPlatformModule/shared``) is one per process. Each test's modules are released by its end (the shared
/// ones too), and the shared TPM is the environment's again.
public struct HardwareExclusive: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        await Self.turns.acquire()
        // Released at once, not by a task: under the full suite a task may wait minutes for the cooperative pool.
        defer { Self.turns.release() }
        defer {
            PKCS11Modules.setShared(nil)
            TrustedPlatformModule.shared = TrustedPlatformModule(
                configuration: ProcessInfo.processInfo.environment["SECURITYSERVICES_TPM_TCTI"] ?? "device:/dev/tpmrm0")
        }
        try await function()
    }

    private static let turns = Turns()

    /// A lock that waits without holding a thread, released synchronously.
    private final class Turns: Sendable {
        private struct State {
            var held = false
            var waiting: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())

        func acquire() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    if !state.held {
                        state.held = true
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func release() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiting.isEmpty else {
                    state.held = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }
}

extension Trait where Self == HardwareExclusive {
    /// One test at a time in this process among those that use its hardware keys (SoftHSM, the shared TPM).
    public static var hardwareExclusive: Self { HardwareExclusive() }
}
