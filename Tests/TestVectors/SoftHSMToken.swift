public import Foundation

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

    public init() throws {
        label = "test-" + UUID().uuidString.prefix(8).lowercased()
        try Self.run("/usr/bin/softhsm2-util", ["--init-token", "--free", "--label", label, "--so-pin", securityOfficerPIN, "--pin", pin])
    }

    deinit {
        _ = try? Self.run("/usr/bin/softhsm2-util", ["--delete-token", "--token", label])
    }

    /// pkcs11-tool on this token, logged in with the user PIN; its standard output.
    @discardableResult
    public func tool(_ arguments: [String], in directory: URL? = nil) throws -> Data {
        try Self.run(
            "/usr/bin/pkcs11-tool", ["--module", Self.module, "--token-label", label, "--login", "--pin", pin] + arguments, in: directory)
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
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
