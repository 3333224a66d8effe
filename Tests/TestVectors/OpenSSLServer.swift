public import Foundation

/// `openssl s_server` on 127.0.0.1: the real peer of the TLS client tests. `-www` answers each connection with
/// an HTTP status page; started by `init` (which waits until it accepts) and stopped when released.
public final class OpenSSLServer {
    public let port: UInt16
    private let process: Process

    public init(in directory: URL, arguments: [String]) throws {
        port = try SCEPServer.freePort()
        process = try SCEPServer.startServer(
            "/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:\(port)", "-www", "-quiet"] + arguments, in: directory)
        try SCEPServer.waitUntilAccepting(port: port, while: process, name: "openssl s_server")
    }

    deinit {
        // SIGKILL, not terminate(): a child started from a Dispatch thread inherits its blocked signals, SIGTERM
        // among them, and s_server (unlike scepserver, a Go program) never unblocks it.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
