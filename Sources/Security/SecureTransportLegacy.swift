public import Foundation
import Certificates
import TLS
import Trust

// The rest of SecureTransport.h: Apple's deprecated calls (SSLNewContext, the cipher lists, trusted roots, the
// relaxations of certificate checking, protocol versions one by one), the certificate authority names a server
// asks for, the OCSP response it staples, and the datagram calls of a context that cannot be a datagram one.
// Each returns Apple's status for what Apple's returns it for (libsecurity_ssl's sslContext.c and
// sslCipherSpecs.c); where this implementation cannot do what Apple's did, the comment says what it does instead.

// MARK: Contexts

/// The deprecated way to make a context: a stream context for the side asked (``SSLCreateContext(_:_:_:)``).
@discardableResult
public func SSLNewContext(_ isServer: Bool, _ contextPtr: UnsafeMutablePointer<SSLContext?>) -> OSStatus {
    contextPtr.pointee = SSLContext(side: isServer ? .serverSide : .clientSide)
    return errSecSuccess
}

/// Ends a context made by ``SSLNewContext(_:_:)``: the session ends at once, without close_notify (call
/// ``SSLClose(_:)`` first for a graceful end), and later calls on it answer as for an aborted session. The
/// object itself goes when its last reference does (Swift's, not this call's).
@discardableResult
public func SSLDisposeContext(_ context: SSLContext) -> OSStatus {
    context.dispose()
    return errSecSuccess
}

// MARK: Protocol versions

/// Apple's version numbers, in order, for the versions this context knows.
private func tlsVersion(_ version: SSLProtocol) -> TLSVersion? {
    switch version {
    case .tlsProtocol12: .tls12
    case .tlsProtocol13: .tls13
    default: nil
    }
}

/// Enables or disables one version, as Apple's: enabling widens the range to it; disabling TLS 1.2 makes 1.3 the
/// minimum, disabling 1.3 makes 1.2 the maximum, and disabling the last one leaves none (the handshake then fails
/// with `errSSLBadConfiguration`). `sslProtocolAll` is TLS 1.2 and 1.3. Enabling SSL 2/3, TLS 1.0 or 1.1 is
/// `errSSLIllegalParam` (Apple enabled them); disabling them succeeds and changes nothing, as they never are.
/// DTLS and the other values are `errSecParam`.
@discardableResult
public func SSLSetProtocolVersionEnabled(_ context: SSLContext, _ protocol: SSLProtocol, _ enable: Bool) -> OSStatus {
    guard context.sessionState == .idle else { return errSecBadReq }
    let current = context.versions
    switch `protocol` {
    case .sslProtocolAll:
        return context.setVersions(enable ? (.tls12, .tls13) : nil)
    case .sslProtocol2, .sslProtocol3, .tlsProtocol1, .tlsProtocol11:
        return enable ? errSSLIllegalParam : context.setVersions(current)
    case .tlsProtocol12, .tlsProtocol13:
        let version = tlsVersion(`protocol`)!  // !: both map
        if enable {
            guard let current else { return context.setVersions((version, version)) }
            return context.setVersions((min(current.minimum, version), max(current.maximum, version)))
        }
        guard let current else { return context.setVersions(nil) }
        let remaining: (minimum: TLSVersion, maximum: TLSVersion) =
            version == .tls12 ? (max(current.minimum, .tls13), current.maximum) : (current.minimum, min(current.maximum, .tls12))
        return context.setVersions(remaining.minimum <= remaining.maximum ? remaining : nil)
    default:
        return errSecParam
    }
}

/// Whether `protocol` is in the enabled range: TLS 1.2 and 1.3 as set; SSL 2/3, TLS 1.0 and 1.1 never;
/// `sslProtocolAll` when both 1.2 and 1.3 are. `errSecParam` for DTLS and the other values, as Apple's.
@discardableResult
public func SSLGetProtocolVersionEnabled(
    _ context: SSLContext, _ protocol: SSLProtocol, _ enable: UnsafeMutablePointer<DarwinBoolean>
) -> OSStatus {
    let current = context.versions
    switch `protocol` {
    case .sslProtocolAll:
        enable.pointee = DarwinBoolean(current.map { $0.minimum == .tls12 && $0.maximum == .tls13 } ?? false)
    case .sslProtocol2, .sslProtocol3, .tlsProtocol1, .tlsProtocol11:
        enable.pointee = false
    case .tlsProtocol12, .tlsProtocol13:
        let version = tlsVersion(`protocol`)!  // !: both map
        enable.pointee = DarwinBoolean(current.map { $0.minimum <= version && version <= $0.maximum } ?? false)
    default:
        return errSecParam
    }
    return errSecSuccess
}

/// The deprecated "this version and below": `tlsProtocol12` allows TLS 1.2 only; `tlsProtocol13`,
/// `sslProtocolAll` and `sslProtocolUnknown` allow 1.2 and 1.3 (Apple's `kTLSProtocol12`, `All` and `Unknown`
/// allowed its whole range). The older versions and the `…Only` values are `errSSLIllegalParam`, DTLS and the
/// others `errSecParam`.
@discardableResult
public func SSLSetProtocolVersion(_ context: SSLContext, _ version: SSLProtocol) -> OSStatus {
    guard context.sessionState == .idle else { return errSecBadReq }
    switch version {
    case .tlsProtocol12: return context.setVersions((.tls12, .tls12))
    case .tlsProtocol13, .sslProtocolAll, .sslProtocolUnknown: return context.setVersions((.tls12, .tls13))
    case .sslProtocol3, .sslProtocol3Only, .tlsProtocol1, .tlsProtocol1Only, .tlsProtocol11, .sslProtocol2: return errSSLIllegalParam
    default: return errSecParam
    }
}

/// The range as ``SSLSetProtocolVersion(_:_:)`` names it: `tlsProtocol12` for TLS 1.2 only, `tlsProtocol13` for
/// 1.2 and 1.3. `errSecParam` for a range it cannot name (1.3 only, or none), as Apple's.
@discardableResult
public func SSLGetProtocolVersion(_ context: SSLContext, _ protocol: UnsafeMutablePointer<SSLProtocol>) -> OSStatus {
    guard let current = context.versions, current.minimum == .tls12 else { return errSecParam }
    `protocol`.pointee = current.maximum == .tls13 ? .tlsProtocol13 : .tlsProtocol12
    return errSecSuccess
}

// MARK: Session options and configurations

/// The value of a session option as last set (all of them round-trip; `enableSessionTickets` is
/// ``SSLSetSessionTicketsEnabled(_:_:)``'s). Options never set are false, but session tickets, which are on here
/// (Apple's were off unless enabled).
@discardableResult
public func SSLGetSessionOption(_ context: SSLContext, _ option: SSLSessionOption, _ value: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    value.pointee = DarwinBoolean(context.option(option))
    return errSecSuccess
}

/// Session tickets (RFC 5077; TLS 1.3's resumption tickets): on by default here, off makes libssl neither ask
/// for nor issue them (`SSL_OP_NO_TICKET`). The same setting as `kSSLSessionOptionEnableSessionTickets`.
@discardableResult
public func SSLSetSessionTicketsEnabled(_ context: SSLContext, _ enabled: Bool) -> OSStatus {
    context.setOption(.enableSessionTickets, enabled)
}

/// Apple's named configurations. `default`, `standard`, `ATSv1` and `ATSv1_noPFS` give TLS 1.2 and 1.3 with
/// every supported cipher suite (what this library offers is already within them). The legacy ones —
/// `legacy`, `legacy_DHE`, `anonymous`, `RC4_fallback`, `3DES_fallback`, `TLSv1_fallback`, `TLSv1_RC4_fallback`,
/// `TLSv1_3DES_fallback` — ask for protocol versions or suites that are not offered (TLS 1.0, RC4, 3DES,
/// anonymous key exchange): `errSecParam`, nothing changed, as for a name Apple does not know.
@discardableResult
public func SSLSetSessionConfig(_ context: SSLContext, _ config: CFString) -> OSStatus {
    let modern = [kSSLSessionConfig_default, kSSLSessionConfig_standard, kSSLSessionConfig_ATSv1, kSSLSessionConfig_ATSv1_noPFS]
    guard modern.contains(where: { $0.isEqual(to: String(config)) }) else { return errSecParam }
    guard context.sessionState == .idle else { return errSecBadReq }
    let status = context.reconfigure { configuration in
        configuration.enabledCipherSuites = nil
        return errSecSuccess
    }
    return status == errSecSuccess ? context.setVersions((.tls12, .tls13)) : status
}

// MARK: Cipher suites

/// Copies `suites` to a caller's buffer of `*count` entries, Apple's way: `errSSLBufferOverflow` when it is
/// short (nothing written), else the count in `*count`.
private func copy(_ suites: [SSLCipherSuite], to ciphers: UnsafeMutablePointer<SSLCipherSuite>, _ count: UnsafeMutablePointer<Int>) -> OSStatus {
    guard count.pointee >= suites.count else { return errSSLBufferOverflow }
    for (index, suite) in suites.enumerated() { ciphers[index] = suite }
    count.pointee = suites.count
    return errSecSuccess
}

/// How many cipher suites ``SSLGetSupportedCiphers(_:_:_:)`` lists.
@discardableResult
public func SSLGetNumberSupportedCiphers(_ context: SSLContext, _ numCiphers: UnsafeMutablePointer<Int>) -> OSStatus {
    numCiphers.pointee = TLSEngine.supportedCipherSuites.count
    return errSecSuccess
}

/// The IANA numbers of the suites libssl offers here for TLS 1.2 and 1.3 (its default list at its default
/// security level), preferred first. `*numCiphers` is the buffer's capacity on input, the count on return;
/// `errSSLBufferOverflow` when the buffer is short.
@discardableResult
public func SSLGetSupportedCiphers(
    _ context: SSLContext, _ ciphers: UnsafeMutablePointer<SSLCipherSuite>, _ numCiphers: UnsafeMutablePointer<Int>
) -> OSStatus {
    copy(TLSEngine.supportedCipherSuites, to: ciphers, numCiphers)
}

/// Restricts the handshake to these suites (TLS 1.3 ones through `SSL_set_ciphersuites`, the others through
/// `SSL_set_cipher_list`): a list without TLS 1.3 suites rules TLS 1.3 out, one without TLS 1.2 suites TLS 1.2.
/// As Apple's, numbers not supported are left out, and a list with none supported (or empty) is `errSecParam`.
/// A server takes the client's preference among them, a client offers them in libssl's order.
@discardableResult
public func SSLSetEnabledCiphers(_ context: SSLContext, _ ciphers: UnsafePointer<SSLCipherSuite>, _ numCiphers: Int) -> OSStatus {
    guard numCiphers > 0 else { return errSecParam }
    let supported = Set(TLSEngine.supportedCipherSuites)
    var chosen: [SSLCipherSuite] = []
    for suite in UnsafeBufferPointer(start: ciphers, count: numCiphers) where supported.contains(suite) && !chosen.contains(suite) {
        chosen.append(suite)
    }
    guard !chosen.isEmpty else { return errSecParam }
    return context.reconfigure { configuration in
        configuration.enabledCipherSuites = chosen
        return errSecSuccess
    }
}

/// How many suites are enabled: all supported ones until ``SSLSetEnabledCiphers(_:_:_:)``.
@discardableResult
public func SSLGetNumberEnabledCiphers(_ context: SSLContext, _ numCiphers: UnsafeMutablePointer<Int>) -> OSStatus {
    numCiphers.pointee = (context.configuration.enabledCipherSuites ?? TLSEngine.supportedCipherSuites).count
    return errSecSuccess
}

/// The enabled suites (all supported ones until ``SSLSetEnabledCiphers(_:_:_:)``); `errSSLBufferOverflow` when
/// the buffer is short.
@discardableResult
public func SSLGetEnabledCiphers(
    _ context: SSLContext, _ ciphers: UnsafeMutablePointer<SSLCipherSuite>, _ numCiphers: UnsafeMutablePointer<Int>
) -> OSStatus {
    copy(context.configuration.enabledCipherSuites ?? TLSEngine.supportedCipherSuites, to: ciphers, numCiphers)
}

// MARK: Peer names and IDs

/// Copies the peer domain name set with ``SSLSetPeerDomainName(_:_:_:)`` (its bytes, no terminating NUL counted;
/// one is written when the buffer has room): `*peerNameLen` is the buffer's size on input, the name's length on
/// return. `errSSLBufferOverflow` when the buffer is short, as Apple's.
@discardableResult
public func SSLGetPeerDomainName(
    _ context: SSLContext, _ peerName: UnsafeMutablePointer<CChar>, _ peerNameLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    copyName(context.currentPeerDomainName ?? "", to: peerName, peerNameLen)
}

private func copyName(_ name: String, to buffer: UnsafeMutablePointer<CChar>, _ length: UnsafeMutablePointer<Int>) -> OSStatus {
    let bytes = Array(name.utf8)
    guard length.pointee >= bytes.count else { return errSSLBufferOverflow }
    for (index, byte) in bytes.enumerated() { buffer[index] = CChar(bitPattern: byte) }
    if length.pointee > bytes.count { buffer[bytes.count] = 0 }
    length.pointee = bytes.count
    return errSecSuccess
}

/// A server: the length of the name the client asked for (SNI). `errSecParam` when it sent none (or before its
/// hello), as Apple's.
@discardableResult
public func SSLCopyRequestedPeerNameLength(_ context: SSLContext, _ peerNameLen: UnsafeMutablePointer<Int>) -> OSStatus {
    guard let name = context.requestedPeerName else { return errSecParam }
    peerNameLen.pointee = name.utf8.count
    return errSecSuccess
}

/// A server: the name the client asked for (SNI), copied as ``SSLGetPeerDomainName(_:_:_:)`` copies; `errSecParam`
/// when it sent none, `errSSLBufferOverflow` when the buffer is short.
@discardableResult
public func SSLCopyRequestedPeerName(
    _ context: SSLContext, _ peerName: UnsafeMutablePointer<CChar>, _ peerNameLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    guard let name = context.requestedPeerName else { return errSecParam }
    return copyName(name, to: peerName, peerNameLen)
}

/// The peer ID set with ``SSLSetPeerID(_:_:_:)``: a pointer into the context's copy (valid until the ID is set
/// again or the context goes) and its length; nil and 0 when none was set.
@discardableResult
public func SSLGetPeerID(
    _ context: SSLContext, _ peerID: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ peerIDLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    let current = context.currentPeerID
    peerID.pointee = current.address.map { UnsafeMutableRawPointer(mutating: $0) }
    peerIDLen.pointee = current.count
    return errSecSuccess
}

// MARK: Certificates and trust

/// The deprecated way to get the peer's certificates: its chain as presented, leaf first, as ``SecCertificate``s.
/// `errSecBadReq` before they arrive (Apple's, when there is no peer trust yet).
@discardableResult
public func SSLCopyPeerCertificates(_ context: SSLContext, _ certs: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    let chain = context.peerCertificates
    guard !chain.isEmpty else { return errSecBadReq }
    certs.pointee = NSArray(array: chain.map(SecCertificate.init))
    return errSecSuccess
}

/// Anchors for the context's own evaluation (when it does not break on authentication): with `replaceExisting`,
/// these alone (the system's anchors are no longer used); without, added to those set before and to the
/// system's. Every element must be a ``SecCertificate`` (`errSecParam`, nothing changed, otherwise).
@discardableResult
public func SSLSetTrustedRoots(_ context: SSLContext, _ trustedRoots: CFArray, _ replaceExisting: Bool) -> OSStatus {
    var roots: [SecCertificate] = []
    for element in trustedRoots {
        guard let root = element as? SecCertificate else { return errSecParam }
        roots.append(root)
    }
    return context.reconfigure { configuration in
        if replaceExisting {
            configuration.trustedRoots = roots
            configuration.trustedRootsOnly = true
        } else {
            configuration.trustedRoots = (configuration.trustedRoots ?? []) + roots
        }
        return errSecSuccess
    }
}

/// The anchors set with ``SSLSetTrustedRoots(_:_:_:)``, as Apple's; the system's anchors when none were set
/// (Apple's macOS behaviour).
@discardableResult
public func SSLCopyTrustedRoots(_ context: SSLContext, _ trustedRoots: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    let roots = context.configuration.trustedRoots ?? SystemAnchors.all.map(SecCertificate.init)
    trustedRoots.pointee = NSArray(array: roots)
    return errSecSuccess
}

/// Off: the context's own evaluation accepts any chain the peer presents (a break on authentication still hands
/// it to the application). On by default.
@discardableResult
public func SSLSetEnableCertVerify(_ context: SSLContext, _ enableVerify: Bool) -> OSStatus {
    setFlag(context, \.verifiesCertificates, enableVerify)
}

/// Whether the context's own evaluation verifies the peer's chain (``SSLSetEnableCertVerify(_:_:)``; true at first).
@discardableResult
public func SSLGetEnableCertVerify(_ context: SSLContext, _ enableVerify: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    getFlag(context, \.verifiesCertificates, enableVerify)
}

/// On: the context's own evaluation accepts a chain whose only failures are an untrusted root or a missing one
/// (the name, the validity period and the rest are still checked).
@discardableResult
public func SSLSetAllowsAnyRoot(_ context: SSLContext, _ anyRoot: Bool) -> OSStatus {
    setFlag(context, \.allowsAnyRoot, anyRoot)
}

/// Whether an untrusted or missing root is forgiven (``SSLSetAllowsAnyRoot(_:_:)``; false at first).
@discardableResult
public func SSLGetAllowsAnyRoot(_ context: SSLContext, _ anyRoot: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    getFlag(context, \.allowsAnyRoot, anyRoot)
}

/// On: the context's own evaluation forgives the validity period of the certificates below the root. (Apple's
/// has done nothing since macOS 10.10 and its getter answers `errSecUnimplemented`; this one does what the
/// documentation promises.)
@discardableResult
public func SSLSetAllowsExpiredCerts(_ context: SSLContext, _ allowsExpired: Bool) -> OSStatus {
    setFlag(context, \.allowsExpiredCertificates, allowsExpired)
}

/// Whether expired certificates below the root are forgiven (``SSLSetAllowsExpiredCerts(_:_:)``; false at first).
/// Apple's answers `errSecUnimplemented`; this one answers the setting.
@discardableResult
public func SSLGetAllowsExpiredCerts(_ context: SSLContext, _ allowsExpired: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    getFlag(context, \.allowsExpiredCertificates, allowsExpired)
}

/// On: the context's own evaluation forgives the validity period of the root (the chain's self-issued last
/// certificate).
@discardableResult
public func SSLSetAllowsExpiredRoots(_ context: SSLContext, _ allowsExpired: Bool) -> OSStatus {
    setFlag(context, \.allowsExpiredRoots, allowsExpired)
}

/// Whether an expired root is forgiven (``SSLSetAllowsExpiredRoots(_:_:)``; false at first).
@discardableResult
public func SSLGetAllowsExpiredRoots(_ context: SSLContext, _ allowsExpired: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    getFlag(context, \.allowsExpiredRoots, allowsExpired)
}

/// Where the client certificate exchange stands. A client: `certNone` until the server asks, then `certSent` when
/// the context has an identity (``SSLSetCertificate(_:_:)``), else `certRequested`. A server: `certNone` when it
/// does not ask, `certRequested` until a certificate arrives, then `certSent` when it passed the context's
/// evaluation (or was handed to the application at a break), `certRejected` when it failed.
@discardableResult
public func SSLGetClientCertificateState(
    _ context: SSLContext, _ clientState: UnsafeMutablePointer<SSLClientCertificateState>
) -> OSStatus {
    clientState.pointee = context.clientCertificateState
    return errSecSuccess
}

/// Apple's certificate for RSA key exchange with a separate encryption key (SSL 3-era export rules): checked as
/// ``SSLSetCertificate(_:_:)`` checks (an identity first, then certificates) and kept, without effect — libssl
/// decrypts RSA key exchange with the signing identity's key, and TLS 1.3 has none (Apple's TLS stack no longer
/// used it either).
@discardableResult
public func SSLSetEncryptionCertificate(_ context: SSLContext, _ certRefs: CFArray) -> OSStatus {
    guard certRefs.count > 0, certRefs[0] is SecIdentity, certRefs.dropFirst().allSatisfy({ $0 is SecCertificate }) else { return errSecParam }
    return context.reconfigure { configuration in
        configuration.encryptionCertificates = certRefs
        return errSecSuccess
    }
}

// MARK: Certificate authorities (a server's CertificateRequest)

/// A server: CA certificates whose subject names its CertificateRequest lists (sent when it asks for a client
/// certificate, ``SSLSetClientSideAuthenticate(_:_:)``): one ``SecCertificate`` or an array of them, replacing
/// or added to those before. `errSecParam` on a client, after the handshake began (as Apple's), or for an element
/// that is not a certificate (nothing changed).
@discardableResult
public func SSLSetCertificateAuthorities(_ context: SSLContext, _ certificateOrArray: CFTypeRef, _ replaceExisting: Bool) -> OSStatus {
    guard context.side == .serverSide, context.sessionState == .idle else { return errSecParam }
    let given: [SecCertificate]
    if let certificate = certificateOrArray as? SecCertificate {
        given = [certificate]
    } else if let array = certificateOrArray as? NSArray {
        var certificates: [SecCertificate] = []
        for element in array {
            guard let certificate = element as? SecCertificate else { return errSecParam }
            certificates.append(certificate)
        }
        given = certificates
    } else {
        return errSecParam
    }
    return context.reconfigure { configuration in
        if replaceExisting {
            configuration.certificateAuthorities = nil
            configuration.distinguishedNames = []
        }
        configuration.certificateAuthorities = (configuration.certificateAuthorities ?? []) + given
        configuration.distinguishedNames += given.map { Array($0.certificate.subject.derEncoded) }
        return errSecSuccess
    }
}

/// The certificates given to ``SSLSetCertificateAuthorities(_:_:_:)``; nil when none were.
@discardableResult
public func SSLCopyCertificateAuthorities(_ context: SSLContext, _ certificates: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    certificates.pointee = context.configuration.certificateAuthorities.map { NSArray(array: $0) }
    return errSecSuccess
}

/// A server: one more DER-encoded X.509 Name for its CertificateRequest. `errSecParam` for bytes that are not one
/// Name (libssl must parse it), `errSecBadReq` after the handshake began.
@discardableResult
public func SSLAddDistinguishedName(_ context: SSLContext, _ derDN: UnsafeRawPointer?, _ derDNLen: Int) -> OSStatus {
    guard let derDN, derDNLen > 0 else { return errSecParam }
    let name = Array(UnsafeRawBufferPointer(start: derDN, count: derDNLen))
    guard TLSEngine.isDistinguishedName(name) else { return errSecParam }
    return context.reconfigure { configuration in
        configuration.distinguishedNames.append(name)
        return errSecSuccess
    }
}

/// The CA names as DER-encoded X.509 Names (``CFData``): a client's, those the server's CertificateRequest listed
/// (nil before one arrived, or when it listed none); a server's, its own. In the order sent.
@discardableResult
public func SSLCopyDistinguishedNames(_ context: SSLContext, _ names: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    let list = context.acceptableDistinguishedNames
    names.pointee = list.isEmpty ? nil : NSArray(array: list.map { NSData(bytes: $0, length: $0.count) })
    return errSecSuccess
}

// MARK: Server extras

/// A server: the OCSP response (DER) it staples when the client asks for its certificate's status (libssl's
/// `SSL_set_tlsext_status_ocsp_resp`; TLS 1.2's CertificateStatus, TLS 1.3's status_request in the Certificate).
/// `errSecParam` for an empty response, `errSecBadReq` after the handshake began.
@discardableResult
public func SSLSetOCSPResponse(_ context: SSLContext, _ response: CFData) -> OSStatus {
    guard response.length > 0 else { return errSecParam }
    let bytes = [UInt8](Data(referencing: response))
    return context.reconfigure { configuration in
        configuration.stapledResponse = bytes
        return errSecSuccess
    }
}

/// Diffie-Hellman parameters (DER PKCS #3 DHParameter, as `openssl dhparam -outform DER` writes) for a server's
/// TLS 1.2 DHE suites: real here — libssl takes them (`SSL_set0_tmp_dh_pkey`), and without them no DHE suite is
/// chosen. Kept on a client too, without effect (the server picks the group). nil or empty clears them;
/// `errSecParam` for bytes libssl cannot use, `errSecBadReq` after the handshake began.
@discardableResult
public func SSLSetDiffieHellmanParams(_ context: SSLContext, _ dhParams: UnsafeRawPointer?, _ dhParamsLen: Int) -> OSStatus {
    var parameters: [UInt8]?
    if let dhParams, dhParamsLen > 0 {
        let bytes = Array(UnsafeRawBufferPointer(start: dhParams, count: dhParamsLen))
        guard TLSEngine.isDiffieHellmanParameters(bytes) else { return errSecParam }
        parameters = bytes
    }
    return context.reconfigure { configuration in
        configuration.diffieHellmanParameters = parameters
        return errSecSuccess
    }
}

/// The parameters set: a pointer into the context's copy (valid until they are set again or the context goes)
/// and their length; nil and 0 when none were set.
@discardableResult
public func SSLGetDiffieHellmanParams(
    _ context: SSLContext, _ dhParams: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ dhParamsLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    let current = context.diffieHellmanParameterBytes
    dhParams.pointee = current.address
    dhParamsLen.pointee = current.count
    return errSecSuccess
}

/// Kept for the getter, without effect, as Apple's: libssl always blinds RSA private-key operations.
@discardableResult
public func SSLSetRsaBlinding(_ context: SSLContext, _ blinding: Bool) -> OSStatus {
    context.setRSABlinding(blinding)
}

/// The value last set with ``SSLSetRsaBlinding(_:_:)`` (true at first).
@discardableResult
public func SSLGetRsaBlinding(_ context: SSLContext, _ blinding: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    blinding.pointee = DarwinBoolean(context.rsaBlindingEnabled)
    return errSecSuccess
}

// MARK: Errors and new handshakes

/// Apple's out-of-band error: `errSecCertificateExpired` or `errSecCertificateRevoked` makes the next
/// ``SSLHandshake(_:)`` end the session (it returns `noErr` and the state is closed; Apple sends the matching
/// alert first, libssl has no call to send one of the application's choosing, so none is sent). Other
/// statuses are kept without effect, as Apple's.
@discardableResult
public func SSLSetError(_ context: SSLContext, _ status: OSStatus) -> OSStatus {
    context.setError(status)
}

/// A new handshake, as Apple's: before the first, the first; on a session in TLS 1.2, renegotiation (a client
/// runs it now; a server sends HelloRequest and takes the client's handshake in as it reads); in TLS 1.3, which
/// has no renegotiation, a key update asking the peer to update too (RFC 8446 §4.6.3). `errSecBadReq` during a
/// handshake, `errSSLClosedGraceful`/`errSSLClosedAbort` after the session ended. A peer may refuse
/// renegotiation (OpenSSL 3 servers refuse a client's unless allowed): `errSSLPeerNoRenegotiation`, and the
/// session is over.
@discardableResult
public func SSLReHandshake(_ context: SSLContext) -> OSStatus { context.rehandshake() }

// MARK: Datagrams (DTLS is not offered)

/// `errSecParam`: as Apple's for a stream context, and every context is one here (``SSLCreateContext(_:_:_:)``
/// refuses datagram contexts).
@discardableResult
public func SSLSetDatagramHelloCookie(_ context: SSLContext, _ cookie: UnsafeRawPointer?, _ cookieLen: Int) -> OSStatus { errSecParam }

/// `errSecParam`: as Apple's for a stream context (every context here).
@discardableResult
public func SSLSetMaxDatagramRecordSize(_ context: SSLContext, _ maxSize: Int) -> OSStatus { errSecParam }

/// `errSecParam`: as Apple's for a stream context (every context here).
@discardableResult
public func SSLGetMaxDatagramRecordSize(_ context: SSLContext, _ maxSize: UnsafeMutablePointer<Int>) -> OSStatus { errSecParam }

/// `errSecParam`: as Apple's for a stream context (every context here).
@discardableResult
public func SSLGetDatagramWriteSize(_ context: SSLContext, _ bufSize: UnsafeMutablePointer<Int>) -> OSStatus { errSecParam }

/// Sets one of the context's switches (before the handshake; `errSecBadReq` after it began).
private func setFlag(_ context: SSLContext, _ flag: WritableKeyPath<SSLContext.Configuration, Bool>, _ value: Bool) -> OSStatus {
    context.reconfigure { configuration in
        configuration[keyPath: flag] = value
        return errSecSuccess
    }
}

/// Reads one of the context's switches into Apple's `Boolean`.
private func getFlag(
    _ context: SSLContext, _ flag: KeyPath<SSLContext.Configuration, Bool>, _ value: UnsafeMutablePointer<DarwinBoolean>
) -> OSStatus {
    value.pointee = DarwinBoolean(context.configuration[keyPath: flag])
    return errSecSuccess
}
