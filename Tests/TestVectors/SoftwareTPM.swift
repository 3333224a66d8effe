public import Foundation

/// A software TPM 2.0 (`swtpm`, Debian's swtpm package) on loopback, with a fresh state of its own (a new owner
/// seed: keys another instance made do not load here), for as long as the value lives.
public final class SoftwareTPM: @unchecked Sendable {
    /// The TSS2 TCTI configuration that reaches it (`swtpm:host=127.0.0.1,port=N`; its control port is N+1).
    public let configuration: String
    /// The same, for tpm2-tools (`TPM2TOOLS_TCTI`).
    public var toolsEnvironment: [String: String] { ["TPM2TOOLS_TCTI": configuration] }
    private let process: Process
    private let directory: URL

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts one, and waits until it accepts connections.
    /// - Throws: ``Failure`` when swtpm is not installed or does not come up.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("swtpm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError = ""
        for _ in 0..<20 {
            let port = UInt16.random(in: 20000...59998)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/swtpm")
            process.arguments = [
                "socket", "--tpm2", "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1", "--ctrl",
                "type=tcp,port=\(port + 1),bindaddr=127.0.0.1", "--tpmstate", "dir=\(directory.path)", "--flags",
                "not-need-init,startup-clear",
            ]
            process.standardOutput = FileHandle.nullDevice
            let errors = Pipe()
            process.standardError = errors
            process.standardInput = FileHandle.nullDevice
            try process.run()
            if Self.waitUntilListening(port, process) {
                self.process = process
                configuration = "swtpm:host=127.0.0.1,port=\(port)"
                return
            }
            process.terminate()
            process.waitUntilExit()
            lastError = String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
        }
        try? FileManager.default.removeItem(at: directory)
        throw Failure(description: "swtpm did not start: \(lastError)")
    }

    deinit {
        // Killed: swtpm does not end on SIGTERM while a client holds a connection, and its state is thrown away.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a tpm2-tools command against it, in `directory`; its standard output.
    /// - Throws: ``Failure`` naming the command, its status and its stderr.
    @discardableResult
    public func tools(_ tool: String, _ arguments: [String], in directory: URL) throws -> Data {
        let output = try OpenSSLCLI.tool("/usr/bin/\(tool)", arguments, in: directory, environment: toolsEnvironment)
        guard output.status == 0 else {
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) exited \(output.status): \(output.stderr)")
        }
        return output.stdout
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` within five seconds, while `process` runs.
    private static func waitUntilListening(_ port: UInt16, _ process: Process) -> Bool {
        for _ in 0..<100 {
            guard process.isRunning else { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if connected == 0 { return true }
            usleep(50_000)
        }
        return false
    }
}
