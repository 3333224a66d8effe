/// What a transport did with one read or write the TLS engine asked of it.
public enum TLSTransportResult: Sendable, Equatable {
    /// This many bytes moved (more than zero).
    case transferred(Int)
    /// Nothing now; ask again later (a non-blocking transport).
    case wouldBlock
    /// The peer closed the connection (reads only).
    case closed
    /// The transport failed; the engine's step fails with this status.
    case failed(Int32)
}

/// The bytes under a TLS engine: whatever carries them (a socket, Secure Transport's `SSLReadFunc`/`SSLWriteFunc`).
public protocol TLSTransport: AnyObject {
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TLSTransportResult
    func send(_ bytes: UnsafeRawBufferPointer) -> TLSTransportResult
}
