public import Foundation
import Certificates
import TLS

// Secure Transport (Apple's SecureTransport.h): TLS over the caller's I/O functions, with Apple's names, values and
// OSStatus codes, so that Apple-platform code compiles and behaves the same. The protocol is libssl's (through the
// TLS module's TLSEngine); the peer's certificates are judged by this package's trust evaluator, or handed to the
// application as a SecTrust when it asked to break on authentication. TLS 1.2 and 1.3 only.

// MARK: The functions

/// A new context for one side of a TLS stream; nil for a datagram (DTLS is not offered).
@discardableResult
public func SSLCreateContext(_ alloc: AnyObject?, _ protocolSide: SSLProtocolSide, _ connectionType: SSLConnectionType) -> SSLContext? {
    connectionType == .streamType ? SSLContext(side: protocolSide) : nil
}

@discardableResult
public func SSLSetIOFuncs(_ context: SSLContext, _ readFunc: SSLReadFunc, _ writeFunc: SSLWriteFunc) -> OSStatus {
    context.setIO(read: readFunc, write: writeFunc)
}

@discardableResult
public func SSLSetConnection(_ context: SSLContext, _ connection: SSLConnectionRef?) -> OSStatus {
    context.setConnection(connection)
}

@discardableResult
public func SSLGetConnection(_ context: SSLContext, _ connection: UnsafeMutablePointer<SSLConnectionRef?>) -> OSStatus {
    connection.pointee = context.currentConnection
    return errSecSuccess
}

/// An opaque identifier of the peer (host and port, say): a client's sessions are kept under it, process-wide, and a
/// later context with the same ID resumes one (each used once). A resumed session's chain is judged again (or, with
/// `.breakOnServerAuth`, available to ``SSLCopyPeerTrust(_:_:)`` as before).
@discardableResult
public func SSLSetPeerID(_ context: SSLContext, _ peerID: UnsafeRawPointer?, _ peerIDLen: Int) -> OSStatus {
    guard let peerID, peerIDLen > 0 else { return context.setPeerID(nil) }
    return context.setPeerID(Array(UnsafeRawBufferPointer(start: peerID, count: peerIDLen)))
}

/// The name the server must prove (and the SNI sent); a client's.
@discardableResult
public func SSLSetPeerDomainName(_ context: SSLContext, _ peerName: UnsafePointer<CChar>?, _ peerNameLen: Int) -> OSStatus {
    guard let peerName, peerNameLen > 0 else { return context.setPeerDomainName(nil) }
    let bytes = UnsafeRawBufferPointer(start: peerName, count: peerNameLen)
    // A C caller may count the terminating NUL.
    let name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    return context.setPeerDomainName(name.isEmpty ? nil : name)
}

@discardableResult
public func SSLGetPeerDomainNameLength(_ context: SSLContext, _ peerNameLen: UnsafeMutablePointer<Int>) -> OSStatus {
    peerNameLen.pointee = context.currentPeerDomainName?.utf8.count ?? 0
    return errSecSuccess
}

/// The certificate this side presents: an array whose first element is a ``SecIdentity`` and whose others are
/// ``SecCertificate``s sent after it (intermediates). The private key is used where it is.
@discardableResult
public func SSLSetCertificate(_ context: SSLContext, _ certRefs: CFArray?) -> OSStatus {
    guard let certRefs, certRefs.count > 0 else { return context.setIdentity(nil) }
    guard let identity = certRefs[0] as? SecIdentity else { return errSecParam }
    var chain: [Certificate] = []
    for index in 1..<certRefs.count {
        guard let certificate = certRefs[index] as? SecCertificate else { return errSecParam }
        chain.append(certificate.certificate)
    }
    return context.setIdentity(
        TLSIdentity(certificate: identity.certificate.certificate, privateKey: identity.privateKey.key, chain: chain))
}

/// `kSSLSessionOptionBreakOnServerAuth` (a client) and `…BreakOnClientAuth` (a server): the handshake stops with
/// `errSSLPeerAuthCompleted` once the peer's certificates arrive; the application evaluates ``SSLCopyPeerTrust(_:_:)``
/// and calls ``SSLHandshake(_:)`` again to go on (or ``SSLClose(_:)``). The other options are accepted and have no
/// effect here.
@discardableResult
public func SSLSetSessionOption(_ context: SSLContext, _ option: SSLSessionOption, _ value: Bool) -> OSStatus {
    context.setOption(option, value)
}

/// TLS 1.2 (the default) or 1.3; older versions and DTLS are refused with `errSSLIllegalParam`.
@discardableResult
public func SSLSetProtocolVersionMin(_ context: SSLContext, _ minVersion: SSLProtocol) -> OSStatus {
    context.setVersion(minVersion, minimum: true)
}

/// TLS 1.2 or 1.3 (the default, also as `tlsProtocolMaxSupported`); older versions are refused.
@discardableResult
public func SSLSetProtocolVersionMax(_ context: SSLContext, _ maxVersion: SSLProtocol) -> OSStatus {
    context.setVersion(maxVersion, minimum: false)
}

/// `sslProtocolUnknown` when every version was disabled (``SSLSetProtocolVersionEnabled(_:_:_:)``), as Apple's.
@discardableResult
public func SSLGetProtocolVersionMin(_ context: SSLContext, _ minVersion: UnsafeMutablePointer<SSLProtocol>) -> OSStatus {
    minVersion.pointee = context.versions.map { $0.minimum == .tls13 ? .tlsProtocol13 : .tlsProtocol12 } ?? .sslProtocolUnknown
    return errSecSuccess
}

/// `sslProtocolUnknown` when every version was disabled (``SSLSetProtocolVersionEnabled(_:_:_:)``), as Apple's.
@discardableResult
public func SSLGetProtocolVersionMax(_ context: SSLContext, _ maxVersion: UnsafeMutablePointer<SSLProtocol>) -> OSStatus {
    maxVersion.pointee = context.versions.map { $0.maximum == .tls13 ? .tlsProtocol13 : .tlsProtocol12 } ?? .sslProtocolUnknown
    return errSecSuccess
}

/// The protocols offered (a client) or accepted, first preferred (a server): an array of strings.
@discardableResult
public func SSLSetALPNProtocols(_ context: SSLContext, _ protocols: CFArray) -> OSStatus {
    var names: [String] = []
    for element in protocols {
        guard let name = stringValue(element) else { return errSecParam }
        names.append(name)
    }
    return context.setApplicationProtocols(names)
}

/// The protocol the handshake chose, as a one-element array (empty when none was). As Apple's, the array is
/// returned retained (`*protocols` should be nil on input): take it with `takeRetainedValue()`.
@discardableResult
public func SSLCopyALPNProtocols(_ context: SSLContext, _ protocols: UnsafeMutablePointer<Unmanaged<CFArray>?>) -> OSStatus {
    let array = NSArray(array: context.selectedApplicationProtocol.map { [NSString(string: $0)] } ?? [])
    protocols.pointee = Unmanaged.passRetained(array)
    return errSecSuccess
}

/// A server's request for a client certificate: never (the default), always (the handshake fails without one), or
/// try.
@discardableResult
public func SSLSetClientSideAuthenticate(_ context: SSLContext, _ auth: SSLAuthenticate) -> OSStatus {
    context.setClientAuthentication(auth)
}

/// Runs the handshake: `noErr` when done, `errSSLWouldBlock` when the I/O functions would block (call again),
/// `errSSLPeerAuthCompleted` at a break on authentication, else the failure's status.
@discardableResult
public func SSLHandshake(_ context: SSLContext) -> OSStatus { context.handshake() }

/// The peer's certificates as a trust object with the SSL policy for the peer domain name (and no evaluation yet):
/// nil before they arrive.
@discardableResult
public func SSLCopyPeerTrust(_ context: SSLContext, _ trust: UnsafeMutablePointer<SecTrust?>) -> OSStatus {
    trust.pointee = context.copyPeerTrust()
    return errSecSuccess
}

@discardableResult
public func SSLGetSessionState(_ context: SSLContext, _ state: UnsafeMutablePointer<SSLSessionState>) -> OSStatus {
    state.pointee = context.sessionState
    return errSecSuccess
}

/// Reads decrypted bytes: what one record holds, up to `dataLength` (`*processed` says how many). `errSSLWouldBlock`
/// with none, `errSSLClosedGraceful` after the peer's close_notify, `errSSLClosedNoNotify` when it went without.
@discardableResult
public func SSLRead(
    _ context: SSLContext, _ data: UnsafeMutableRawPointer, _ dataLength: Int, _ processed: UnsafeMutablePointer<Int>
) -> OSStatus {
    var count = 0
    let status = context.read(UnsafeMutableRawBufferPointer(start: data, count: max(dataLength, 0)), &count)
    processed.pointee = count
    return status
}

/// Writes `dataLength` bytes; `*processed` says how many were taken (fewer with `errSSLWouldBlock`: call again with
/// the rest).
@discardableResult
public func SSLWrite(
    _ context: SSLContext, _ data: UnsafeRawPointer?, _ dataLength: Int, _ processed: UnsafeMutablePointer<Int>
) -> OSStatus {
    var count = 0
    let status = context.write(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : max(dataLength, 0)), &count)
    processed.pointee = count
    return status
}

/// Sends close_notify and ends the session.
@discardableResult
public func SSLClose(_ context: SSLContext) -> OSStatus { context.close() }

@discardableResult
public func SSLGetBufferedReadSize(_ context: SSLContext, _ bufferSize: UnsafeMutablePointer<Int>) -> OSStatus {
    bufferSize.pointee = context.bufferedReadSize
    return errSecSuccess
}

@discardableResult
public func SSLGetNegotiatedProtocolVersion(_ context: SSLContext, _ protocol: UnsafeMutablePointer<SSLProtocol>) -> OSStatus {
    `protocol`.pointee = context.negotiatedVersion
    return errSecSuccess
}

/// The IANA number of the negotiated cipher suite; `errSecBadReq` before the handshake completes.
@discardableResult
public func SSLGetNegotiatedCipher(_ context: SSLContext, _ cipherSuite: UnsafeMutablePointer<SSLCipherSuite>) -> OSStatus {
    guard let suite = context.negotiatedCipher else { return errSecBadReq }
    cipherSuite.pointee = suite
    return errSecSuccess
}
