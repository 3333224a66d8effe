import Foundation
import Testing

/// A temporary directory with a keychain path in it, and the `security` binary run there with an environment
/// that points every default (the XDG data directory, HOME) into the directory. Removed when released.
final class Sandbox {
    struct Run: Equatable, CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String
        var description: String {
            "status \(status), stdout \(stdout.debugDescription), stderr \(stderr.debugDescription)"
        }
    }

    struct MissingBinary: Error, CustomStringConvertible {
        let searched: [String]
        var description: String {
            "the security binary is not built (looked in \(searched.joined(separator: ", "))): "
                + "run swift build --build-tests (or swift build --product security) first"
        }
    }

    let directory: URL
    /// The keychain database the tests name (created by the first command that adds to it).
    let keychain: String

    init() throws {
        directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("security-command-\(UUID().uuidString)").standardizedFileURL
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        keychain = directory.appendingPathComponent("keychain.db").path
        // A SoftHSM store of the sandbox's own: the tokens other tests make in SoftHSM's system store are not this
        // sandbox's smart cards.
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("softhsm"), withIntermediateDirectories: true)
        try "directories.tokendir = \(directory.appendingPathComponent("softhsm").path)\nobjectstore.backend = file\n"
            .write(to: softHSMConfiguration, atomically: true, encoding: .utf8)
    }

    /// The sandbox's SoftHSM configuration (`SOFTHSM2_CONF` of every command run here).
    var softHSMConfiguration: URL { directory.appendingPathComponent("softhsm2.conf") }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The `security` executable: beside the test bundle in the build directory, else the package's
    /// `.build/debug`.
    static func binary() throws -> URL {
        var directories: [URL] = []
        if let bundle = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: bundle).deletingLastPathComponent())
        }
        directories.append(Bundle.main.bundleURL)
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        directories.append(package.appendingPathComponent(".build/debug"))
        let candidates = directories.map { $0.appendingPathComponent("security") }
        guard let binary = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw MissingBinary(searched: directories.map(\.path))
        }
        return binary
    }

    /// Runs `security arguments… <keychain>`: the sandbox's keychain as the trailing argument, as on macOS.
    func security(_ arguments: String...) throws -> Run {
        try run(arguments + [keychain])
    }

    func security(_ arguments: [String]) throws -> Run {
        try run(arguments + [keychain])
    }

    /// Runs `security arguments… <keychain>` and expects it to succeed without output (an add).
    func expectSilentSuccess(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectSilentSuccess(arguments, sourceLocation: sourceLocation)
    }

    func expectSilentSuccess(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try security(arguments)
        #expect(run == Run(status: 0, stdout: "", stderr: ""), "\(arguments)", sourceLocation: sourceLocation)
    }

    /// Runs `security arguments`, with `input` on stdin (else /dev/null) and `environment` over the sandbox's.
    func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws -> Run {
        try start(arguments, input: input, environment: environment).wait()
    }

    /// A `security` process started by ``start(_:input:environment:)``.
    struct Started {
        let process: Process
        let stdout: URL
        let stderr: URL

        /// Waits for the process to exit; its status and output.
        func wait() throws -> Run {
            process.waitUntilExit()
            return Run(
                status: process.terminationStatus,
                stdout: String(decoding: try Data(contentsOf: stdout), as: UTF8.self),
                stderr: String(decoding: try Data(contentsOf: stderr), as: UTF8.self))
        }
    }

    /// Starts `security arguments` as ``run(_:input:environment:)`` runs it, without waiting: several started
    /// before any is waited for run at once.
    func start(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws -> Started {
        let process = Process()
        process.executableURL = try Self.binary()
        process.arguments = arguments
        var variables = ProcessInfo.processInfo.environment
        variables["SECURITYSERVICES_KEYCHAIN"] = nil
        variables["SECURITYSERVICES_ACCESS_GROUPS"] = nil
        variables["XDG_DATA_HOME"] = directory.appendingPathComponent("xdg").path
        variables["HOME"] = directory.path
        variables["SOFTHSM2_CONF"] = softHSMConfiguration.path
        process.environment = variables.merging(environment) { $1 }

        // Files rather than pipes: nothing to drain while the child runs.
        let name = UUID().uuidString
        let stdoutURL = directory.appendingPathComponent("\(name).stdout")
        let stderrURL = directory.appendingPathComponent("\(name).stderr")
        try Data().write(to: stdoutURL)
        try Data().write(to: stderrURL)
        let stdout = try FileHandle(forWritingTo: stdoutURL)
        let stderr = try FileHandle(forWritingTo: stderrURL)
        defer {
            // The child has its own copies once started.
            try? stdout.close()
            try? stderr.close()
        }
        process.standardOutput = stdout
        process.standardError = stderr
        if let input {
            let stdinURL = directory.appendingPathComponent("\(name).stdin")
            try Data(input.utf8).write(to: stdinURL)
            process.standardInput = try FileHandle(forReadingFrom: stdinURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        try process.run()
        return Started(process: process, stdout: stdoutURL, stderr: stderrURL)
    }

    /// `text` with each CSSM time value (`=0x…  "YYYYMMDDhhmmssZ\000"`) replaced by `=<date>`.
    static func normalizingDates(_ text: String) -> String {
        text.replacing(#/=0x[0-9A-F]{32}  "[0-9]{14}Z\\000"/#, with: "=<date>")
    }
}
