import TLS

/// The caller's I/O functions as the engine's transport.
final class FunctionTransport: TLSTransport {
    let readFunc: SSLReadFunc
    let writeFunc: SSLWriteFunc
    let connection: SSLConnectionRef

    init(read: SSLReadFunc, write: SSLWriteFunc, connection: SSLConnectionRef) {
        readFunc = read
        writeFunc = write
        self.connection = connection
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TLSTransportResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .wouldBlock }
        var length = buffer.count
        let status = readFunc(connection, base, &length)
        // Bytes read count whatever the status says (a short read comes with errSSLWouldBlock).
        if length > 0 { return .transferred(min(length, buffer.count)) }
        switch status {
        case errSecSuccess, errSSLWouldBlock: return .wouldBlock
        case errSSLClosedGraceful, errSSLClosedNoNotify: return .closed
        default: return .failed(status)
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> TLSTransportResult {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .transferred(0) }
        var length = bytes.count
        let status = writeFunc(connection, base, &length)
        if length > 0 { return .transferred(min(length, bytes.count)) }
        switch status {
        case errSecSuccess, errSSLWouldBlock: return .wouldBlock
        default: return .failed(status)
        }
    }
}
