public import Foundation

/// `openssl s_server` on 127.0.0.1: the real peer of the TLS client tests. `-www` answers each connection with
/// an HTTP status page; started by `init` (which waits until it accepts) and stopped when released.
public final class OpenSSLServer {
    public let port: UInt16
    private let process: Process
    private let logFile: URL?

    /// - Parameter keepingLog: keep what the server prints (``log``) instead of discarding it; with `-msg` among
    ///   `arguments`, that is every handshake message and alert it receives (`<<<`) and sends (`>>>`).
    public init(in directory: URL, arguments: [String], keepingLog: Bool = false) throws {
        port = try SCEPServer.freePort()
        logFile = keepingLog ? directory.appendingPathComponent("s_server-\(port).log") : nil
        process = try SCEPServer.startServer(
            "/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:\(port)", "-www", "-quiet"] + arguments, in: directory, log: logFile)
        try SCEPServer.waitUntilAccepting(port: port, while: process, name: "openssl s_server")
    }

    /// What the server printed so far (empty unless started `keepingLog`).
    public var log: String { logFile.flatMap { try? String(contentsOf: $0, encoding: .utf8) } ?? "" }

    deinit {
        // SIGKILL, not terminate(): a child started from a Dispatch thread inherits its blocked signals, SIGTERM
        // among them, and s_server (unlike scepserver, a Go program) never unblocks it.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
