public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's `scepserver` (micromdm scep 2.1.0, package `scep`) on 127.0.0.1 with a CA of its own in a temporary
/// depot: the real peer of the enrollment tests. Started by `init` (which waits until it answers GetCACaps) and
/// stopped when released.
public final class SCEPServer {
    public static let executable = "/usr/bin/scepserver"

    public let depot: TemporaryDirectory
    public let port: UInt16
    private let process: Process

    /// `http://127.0.0.1:<port>/scep`.
    public var url: String { "http://127.0.0.1:\(port)/scep" }
    /// The CA certificate (`depot/ca.pem`).
    public var caPath: String { depot.path("depot/ca.pem") }

    /// - Parameters:
    ///   - challenge: the challenge password the server enforces.
    ///   - csrVerifier: a shell script run on each request (`-csrverifierexec`); exit 0 accepts, anything else
    ///     refuses.
    public init(challenge: String, csrVerifier: String? = nil) throws {
        depot = try TemporaryDirectory("scep-depot")
        try Self.run([
            "ca", "-init", "-depot", depot.path("depot"), "-keySize", "2048", "-years", "2",
            "-organization", "SecurityServices Tests",
        ])
        var arguments = ["-depot", depot.path("depot"), "-challenge", challenge, "-allowrenew", "0"]
        if let csrVerifier {
            try BuiltExecutable.install(Data(("#!/bin/sh\n" + csrVerifier + "\n").utf8), at: depot.path("verifier.sh"))
            arguments += ["-csrverifierexec", depot.path("verifier.sh")]
        }
        port = try Self.freePort()
        process = try Self.startServer(Self.executable, arguments + ["-port", String(port)])
        try Self.waitUntilAccepting(port: port, while: process, name: "scepserver")
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    /// Runs `scepserver` with `arguments` to its end; throws with its output when it fails.
    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw OpenSSLCLI.Failure(
                "scepserver \(arguments.joined(separator: " ")) exited \(process.terminationStatus): "
                    + String(decoding: output, as: UTF8.self))
        }
    }

    /// A loopback port nobody listens on now (bound to port 0 and closed: the kernel does not hand it out again
    /// at once).
    public static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Starts a test server process (`executable` with `arguments`, in `directory` when given). Its output goes to
    /// `log` when given, else is drained on a thread of its own so that it never blocks on a full pipe; `input` is its
    /// standard input (none by default). Shared by the servers the tests start.
    public static func startServer(
        _ executable: String, _ arguments: [String], in directory: URL? = nil, input: Pipe? = nil, log: URL? = nil
    ) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.standardInput = input ?? FileHandle.nullDevice
        if let log {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: log)
            process.standardError = process.standardOutput
            try process.run()
            return process
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let handle = output.fileHandleForReading
        Thread.detachNewThread { _ = handle.readDataToEndOfFile() }
        return process
    }

    /// Waits (at most 20 s) until a TCP connection to 127.0.0.1:`port` succeeds; throws if `process` (the server
    /// named `name`) exits first. Shared by the test servers started as processes (scepserver, openssl s_server).
    public static func waitUntilAccepting(port: UInt16, while process: Process, name: String) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            guard process.isRunning else {
                throw OpenSSLCLI.Failure("\(name) exited with status \(process.terminationStatus)")
            }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return }
            usleep(50_000)
        }
        throw OpenSSLCLI.Failure("\(name) did not listen on port \(port) within 20 s")
    }
}
