public import KeychainWire
import Foundation
import Synchronization

/// A connection to the keychain service (`securityd`) on its Unix socket: one request at a time, each answered
/// within the timeout. The service, not this process, decides which access groups the calls act in.
public final class KeychainServiceClient: Sendable {
    /// The socket's path.
    public let socketPath: String
    private let connection: Mutex<FrameReader>

    /// Connects to the service at `socketPath`.
    /// - Throws: ``KeychainError`` `.io` when no service listens there, `.parameter` for an empty or too long path.
    public init(socketPath: String, timeout: Duration = .seconds(30)) throws {
        self.socketPath = socketPath
        let fd = try UnixSocket.open(socketPath, Glibc.connect, failure: "no keychain service listens at \(socketPath)")
        KeychainFraming.setTimeout(timeout, on: fd)
        // An answer takes the service a few microseconds to tens of them.
        connection = Mutex(FrameReader(fd: fd, spin: .microseconds(50)))
    }

    deinit { connection.withLock { _ = close($0.fd) } }

    /// Sends `request` and returns the service's answer.
    /// - Throws: the ``KeychainError`` the service answered with; `.io` when the connection fails; `.parameter`
    ///   when the answer is malformed.
    public func call(_ request: KeychainWire.Request) throws -> KeychainWire.Response {
        let body = try connection.withLock { connection -> [UInt8] in
            do {
                try KeychainFraming.send(KeychainWire.encode(request), on: connection.fd)
            } catch {
                // The service may have refused the connection (too many, or a caller it cannot identify) and closed
                // it: its answer, already sent, says why.
                guard let refusal = try? connection.next() else { throw error }
                return refusal
            }
            guard let body = try connection.next() else {
                throw KeychainError(.io, "the keychain service closed the connection")
            }
            return body
        }
        let response = try KeychainWire.decodeResponse(body)
        if case .failure(let error) = response { throw error }
        return response
    }
}
