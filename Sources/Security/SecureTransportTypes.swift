public import Foundation

/// What the I/O functions are given: the value set by ``SSLSetConnection(_:_:)``.
public typealias SSLConnectionRef = UnsafeRawPointer
/// Reads up to `*dataLength` bytes into `data`; sets `*dataLength` to the count read. `noErr` when all were read,
/// `errSSLWouldBlock` when fewer (a non-blocking socket), `errSSLClosedGraceful` at the end of the stream.
public typealias SSLReadFunc = @convention(c) (SSLConnectionRef, UnsafeMutableRawPointer, UnsafeMutablePointer<Int>) -> OSStatus
/// Writes `*dataLength` bytes from `data`; sets `*dataLength` to the count written (`errSSLWouldBlock` when fewer).
public typealias SSLWriteFunc = @convention(c) (SSLConnectionRef, UnsafeRawPointer, UnsafeMutablePointer<Int>) -> OSStatus
/// An IANA TLS cipher suite number.
public typealias SSLCipherSuite = UInt16

public enum SSLProtocolSide: Int32, Sendable {
    case serverSide = 0
    case clientSide = 1
}

public enum SSLConnectionType: Int32, Sendable {
    case streamType = 0
    case datagramType = 1
}

public enum SSLProtocol: Int32, Sendable {
    case sslProtocolUnknown = 0
    case sslProtocol2 = 1
    case sslProtocol3 = 2
    case sslProtocol3Only = 3
    case tlsProtocol1 = 4
    case tlsProtocol1Only = 5
    case sslProtocolAll = 6
    case tlsProtocol11 = 7
    case tlsProtocol12 = 8
    case dtlsProtocol1 = 9
    case tlsProtocol13 = 10
    case dtlsProtocol12 = 11
    case tlsProtocolMaxSupported = 999
}

public enum SSLSessionOption: Int32, Sendable {
    case breakOnServerAuth = 0
    case breakOnCertRequested = 1
    case breakOnClientAuth = 2
    case falseStart = 3
    case sendOneByteRecord = 4
    case allowServerIdentityChange = 5
    case fallback = 6
    case breakOnClientHello = 7
    case allowRenegotiation = 8
    case enableSessionTickets = 9
}

public enum SSLSessionState: Int32, Sendable {
    case idle = 0
    case handshake = 1
    case connected = 2
    case closed = 3
    case aborted = 4
}

/// Where a client certificate exchange stands (``SSLGetClientCertificateState(_:_:)``).
public enum SSLClientCertificateState: Int32, Sendable {
    /// The server did not ask for a certificate, and the client sent none.
    case certNone = 0
    /// The server asked, and the client sent none (or, on a server, none arrived yet).
    case certRequested = 1
    /// The server asked and the client sent one (on a server: and it passed the server's evaluation).
    case certSent = 2
    /// The client sent one and it failed the server's evaluation.
    case certRejected = 3
}

public enum SSLAuthenticate: Int32, Sendable {
    case neverAuthenticate = 0
    case alwaysAuthenticate = 1
    case tryAuthenticate = 2
}

/// `SSLSetSessionConfig`'s configuration names (Apple's values).
nonisolated(unsafe) public let kSSLSessionConfig_default: CFString = "default"
nonisolated(unsafe) public let kSSLSessionConfig_ATSv1: CFString = "ATSv1"
nonisolated(unsafe) public let kSSLSessionConfig_ATSv1_noPFS: CFString = "ATSv1_noPFS"
nonisolated(unsafe) public let kSSLSessionConfig_standard: CFString = "standard"
nonisolated(unsafe) public let kSSLSessionConfig_RC4_fallback: CFString = "RC4_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_TLSv1_fallback: CFString = "TLSv1_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_TLSv1_RC4_fallback: CFString = "TLSv1_RC4_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_legacy: CFString = "legacy"
nonisolated(unsafe) public let kSSLSessionConfig_legacy_DHE: CFString = "legacy_DHE"
nonisolated(unsafe) public let kSSLSessionConfig_anonymous: CFString = "anonymous"
nonisolated(unsafe) public let kSSLSessionConfig_3DES_fallback: CFString = "3DES_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_TLSv1_3DES_fallback: CFString = "TLSv1_3DES_fallback"
