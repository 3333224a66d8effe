public import Foundation
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let configuration {
            process.environment = ProcessInfo.processInfo.environment.merging(["SOFTHSM2_CONF": configuration.path]) { $1 }
        }
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let errors = OpenSSLCLI.PipeReader(err.fileHandleForReading)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(errors.text())")
        }
        return data
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
        defer { Task { await Self.turns.release() } }
        defer {
            PKCS11Modules.setShared(nil)
            TrustedPlatformModule.shared = TrustedPlatformModule(
                configuration: ProcessInfo.processInfo.environment["SECURITYSERVICES_TPM_TCTI"] ?? "device:/dev/tpmrm0")
        }
        try await function()
    }

    private static let turns = Turns()

    /// A lock that waits without holding a thread.
    private actor Turns {
        private var held = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard held else {
                held = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
        }
    }
}

extension Trait where Self == HardwareExclusive {
    /// One test at a time in this process among those that use its hardware keys (SoftHSM, the shared TPM).
    public static var hardwareExclusive: Self { HardwareExclusive() }
}
