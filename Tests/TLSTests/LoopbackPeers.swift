import Foundation
import TestVectors

/// A TCP listener on 127.0.0.1 and a free port, closed when released.
final class Listener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 4) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    /// The next connection's descriptor (blocking).
    func accept() -> Int32 { Glibc.accept(fd, nil, nil) }

    deinit { close(fd) }
}

/// `openssl s_client` against 127.0.0.1:`port`, run in `directory`: it verifies the server's chain against
/// root.pem for tls.example (`-verify_return_error`, `-brief` reporting on stderr), writes `input`, and stays
/// until the server closes (`-ign_eof`).
final class OpenSSLClient {
    private let process = Process()
    private let output = Pipe()
    private let errors = Pipe()

    convenience init(port: UInt16, in directory: URL, input: String, extra: [String] = []) throws {
        try self.init(
            port: port, in: directory, input: input,
            arguments: ["-servername", "tls.example", "-verify_hostname", "tls.example", "-CAfile", "root.pem", "-verify_return_error", "-brief"] + extra)
    }

    /// `openssl s_client -connect 127.0.0.1:port -ign_eof` with `arguments` and nothing else.
    init(port: UInt16, in directory: URL, input: String, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-ign_eof"] + arguments
        process.currentDirectoryURL = directory
        let stdin = Pipe()
        process.standardInput = stdin
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
    }

    /// Waits for s_client to end: what it printed and reported, together (for checks that look for a line in either).
    func finishJoined() -> String {
        let (printed, report) = finish()
        return printed + report
    }

    /// Waits for s_client to end: what it printed (the server's bytes) and its report.
    func finish() -> (stdout: String, stderr: String) {
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let report = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: printed, as: UTF8.self), String(decoding: report, as: UTF8.self))
    }
}

/// `openssl s_server` without `-www`: what is written to its standard input after a client connected goes to the
/// client, and `kill()` ends it with SIGKILL, so the connection stops without close_notify.
final class OpenSSLEchoServer {
    let port: UInt16
    private let process: Process
    private let input = Pipe()

    init(in directory: URL, arguments: [String]) throws {
        port = try SCEPServer.freePort()
        process = try SCEPServer.startServer(
            "/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:\(port)", "-quiet"] + arguments, in: directory, input: input)
        try SCEPServer.waitUntilAccepting(port: port, while: process, name: "openssl s_server")
    }

    /// Sends `text` to the connected client.
    func send(_ text: String) throws { try input.fileHandleForWriting.write(contentsOf: Data(text.utf8)) }

    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { kill() } }
}
