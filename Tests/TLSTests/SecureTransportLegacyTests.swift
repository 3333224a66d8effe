import Certificates
import Foundation
import Security
import TLS
import TestVectors
import Testing
import Trust

/// The rest of SecureTransport.h (Apple's deprecated calls, cipher lists, trusted roots and relaxations, CA names,
/// OCSP stapling, renegotiation), against `openssl s_server` and `openssl s_client` on loopback where a peer is
/// involved, with the helpers of ``SecureTransportTests``.
@Suite("Secure Transport's legacy calls against openssl s_server and s_client on loopback", .serialized, .hostOnly)
struct SecureTransportLegacyTests {
    typealias Helpers = SecureTransportTests

    /// The handshake without a break, to the end: its status.
    static func handshake(_ context: SSLContext) -> OSStatus {
        var status = SSLHandshake(context)
        while status == errSSLWouldBlock { status = SSLHandshake(context) }
        return status
    }

    static func supportedCiphers(_ context: SSLContext) -> [SSLCipherSuite] {
        var count = 0
        #expect(SSLGetNumberSupportedCiphers(context, &count) == errSecSuccess)
        var suites = [SSLCipherSuite](repeating: 0, count: count)
        #expect(SSLGetSupportedCiphers(context, &suites, &count) == errSecSuccess)
        return Array(suites.prefix(count))
    }

    static func enabledCiphers(_ context: SSLContext) -> [SSLCipherSuite] {
        var count = 0
        #expect(SSLGetNumberEnabledCiphers(context, &count) == errSecSuccess)
        var suites = [SSLCipherSuite](repeating: 0, count: count)
        #expect(SSLGetEnabledCiphers(context, &suites, &count) == errSecSuccess)
        return Array(suites.prefix(count))
    }

    /// A server context on an accepted connection, with the identity for tls.example.
    static func server(_ connection: Helpers.Socket, _ world: TLSWorld) throws -> SSLContext {
        let identity = try TLSServerTests.serverIdentity(world)
        let context = try #require(SSLCreateContext(nil, .serverSide, .streamType))
        #expect(SSLSetIOFuncs(context, Helpers.socketRead, Helpers.socketWrite) == errSecSuccess)
        #expect(SSLSetConnection(context, connection.connection) == errSecSuccess)
        let secIdentity = SecIdentity(certificate: SecCertificate(identity.certificate), privateKey: SecKey(identity.privateKey))
        #expect(SSLSetCertificate(context, [secIdentity] as CFArray) == errSecSuccess)
        return context
    }

    // MARK: Without a peer

    @Test("getters return what the setters set: session options, versions one by one and as a range, ciphers, relaxations, roots, peer name and ID, DH parameters, RSA blinding")
    func roundTrips() throws {
        let context = try #require(SSLCreateContext(nil, .clientSide, .streamType))
        let allOptions: [SSLSessionOption] = [
            .breakOnServerAuth, .breakOnCertRequested, .breakOnClientAuth, .falseStart, .sendOneByteRecord,
            .allowServerIdentityChange, .fallback, .breakOnClientHello, .allowRenegotiation, .enableSessionTickets,
        ]
        for value in [true, false] {
            for option in allOptions {
                #expect(SSLSetSessionOption(context, option, value) == errSecSuccess)
                var read = DarwinBoolean(!value)
                #expect(SSLGetSessionOption(context, option, &read) == errSecSuccess)
                #expect(read.boolValue == value, "\(option)")
            }
        }
        #expect(SSLSetSessionTicketsEnabled(context, true) == errSecSuccess)
        var tickets: DarwinBoolean = false
        #expect(SSLGetSessionOption(context, .enableSessionTickets, &tickets) == errSecSuccess && tickets.boolValue)

        func enabled(_ version: SSLProtocol) -> Bool {
            var value: DarwinBoolean = false
            #expect(SSLGetProtocolVersionEnabled(context, version, &value) == errSecSuccess)
            return value.boolValue
        }
        #expect(enabled(.tlsProtocol12) && enabled(.tlsProtocol13) && enabled(.sslProtocolAll) && !enabled(.tlsProtocol11))
        #expect(SSLSetProtocolVersionEnabled(context, .tlsProtocol12, false) == errSecSuccess)
        #expect(!enabled(.tlsProtocol12) && enabled(.tlsProtocol13) && !enabled(.sslProtocolAll))
        var bound = SSLProtocol.sslProtocolUnknown
        #expect(SSLGetProtocolVersionMin(context, &bound) == errSecSuccess && bound == .tlsProtocol13)
        #expect(SSLGetProtocolVersion(context, &bound) == errSecParam, "1.3 alone has no single-value name")
        #expect(SSLSetProtocolVersionEnabled(context, .tlsProtocol13, false) == errSecSuccess)
        #expect(!enabled(.tlsProtocol12) && !enabled(.tlsProtocol13))
        #expect(SSLGetProtocolVersionMax(context, &bound) == errSecSuccess && bound == .sslProtocolUnknown)
        #expect(SSLSetProtocolVersionEnabled(context, .tlsProtocol12, true) == errSecSuccess)
        #expect(enabled(.tlsProtocol12) && !enabled(.tlsProtocol13))
        #expect(SSLGetProtocolVersion(context, &bound) == errSecSuccess && bound == .tlsProtocol12)
        #expect(SSLSetProtocolVersionEnabled(context, .tlsProtocol13, true) == errSecSuccess)
        #expect(SSLGetProtocolVersion(context, &bound) == errSecSuccess && bound == .tlsProtocol13)
        #expect(SSLSetProtocolVersion(context, .tlsProtocol12) == errSecSuccess)
        #expect(SSLGetProtocolVersionMax(context, &bound) == errSecSuccess && bound == .tlsProtocol12)
        #expect(SSLSetProtocolVersion(context, .sslProtocolAll) == errSecSuccess)
        #expect(enabled(.sslProtocolAll))
        #expect(SSLSetProtocolVersionEnabled(context, .sslProtocolAll, false) == errSecSuccess)
        #expect(!enabled(.tlsProtocol12) && !enabled(.tlsProtocol13))
        #expect(SSLSetSessionConfig(context, kSSLSessionConfig_ATSv1) == errSecSuccess)
        #expect(enabled(.tlsProtocol12) && enabled(.tlsProtocol13))

        // Ciphers: the supported list is libssl's, as `openssl ciphers` numbers it, TLS 1.3 suites included.
        let supported = Self.supportedCiphers(context)
        #expect(supported.contains(0x1301) && supported.contains(0xC02F) && Set(supported).count == supported.count)
        let listing = try OpenSSLCLI.require(["ciphers", "-V", "DEFAULT"]).text
        for suite in supported {
            #expect(listing.contains(String(format: "0x%02X,0x%02X", suite >> 8, suite & 0xff)), "\(suite)")
        }
        #expect(Self.enabledCiphers(context) == supported)
        let chosen: [SSLCipherSuite] = [0xC02F, 0x1302]
        #expect(SSLSetEnabledCiphers(context, chosen, chosen.count) == errSecSuccess)
        #expect(Self.enabledCiphers(context) == chosen)
        #expect(SSLSetSessionConfig(context, kSSLSessionConfig_default) == errSecSuccess)
        #expect(Self.enabledCiphers(context) == supported, "a configuration resets the suites")

        // Relaxations and roots.
        for (set, get) in [
            (SSLSetEnableCertVerify, SSLGetEnableCertVerify), (SSLSetAllowsAnyRoot, SSLGetAllowsAnyRoot),
            (SSLSetAllowsExpiredCerts, SSLGetAllowsExpiredCerts), (SSLSetAllowsExpiredRoots, SSLGetAllowsExpiredRoots),
            (SSLSetRsaBlinding, SSLGetRsaBlinding),
        ] {
            for value in [false, true, false] {
                #expect(set(context, value) == errSecSuccess)
                var read = DarwinBoolean(!value)
                #expect(get(context, &read) == errSecSuccess && read.boolValue == value)
            }
        }
        let world = try TLSWorld()
        let root = SecCertificate(world.root)
        let other = SecCertificate(world.otherRoot)
        var roots: CFArray?
        #expect(SSLCopyTrustedRoots(context, &roots) == errSecSuccess)
        #expect(roots?.count == SystemAnchors.all.count, "the system's anchors until roots are set")
        #expect(SSLSetTrustedRoots(context, [root] as CFArray, true) == errSecSuccess)
        #expect(SSLSetTrustedRoots(context, [other] as CFArray, false) == errSecSuccess)
        #expect(SSLCopyTrustedRoots(context, &roots) == errSecSuccess)
        #expect((roots as? [SecCertificate])?.map(\.certificate) == [world.root, world.otherRoot])
        #expect(SSLSetTrustedRoots(context, [other] as CFArray, true) == errSecSuccess)
        #expect(SSLCopyTrustedRoots(context, &roots) == errSecSuccess)
        #expect((roots as? [SecCertificate])?.map(\.certificate) == [world.otherRoot])

        // The peer domain name, copied; a short buffer is Apple's errSSLBufferOverflow, nothing written.
        let name = "tls.example"
        #expect(SSLSetPeerDomainName(context, name, name.utf8.count) == errSecSuccess)
        var buffer = [CChar](repeating: 0x55, count: 32)
        var length = buffer.count
        #expect(SSLGetPeerDomainName(context, &buffer, &length) == errSecSuccess)
        #expect(length == name.utf8.count && String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == name)
        var short = [CChar](repeating: 0x55, count: 4)
        length = short.count
        #expect(SSLGetPeerDomainName(context, &short, &length) == errSSLBufferOverflow)
        #expect(short == [CChar](repeating: 0x55, count: 4) && length == 4)

        // The peer ID: a pointer into the context's copy.
        var idPointer: UnsafeMutableRawPointer?
        var idLength = -1
        #expect(SSLGetPeerID(context, &idPointer, &idLength) == errSecSuccess && idPointer == nil && idLength == 0)
        var id = Array("host:443".utf8)
        #expect(SSLSetPeerID(context, id, id.count) == errSecSuccess)
        id[0] = 0
        #expect(SSLGetPeerID(context, &idPointer, &idLength) == errSecSuccess)
        let copied = try #require(idPointer)
        #expect(Array(UnsafeRawBufferPointer(start: copied, count: idLength)) == Array("host:443".utf8))

        // Diffie-Hellman parameters (RFC 7919's ffdhe2048, from openssl), returned as set.
        let dh = try Self.diffieHellmanParameters(world)
        #expect(dh.withUnsafeBytes { SSLSetDiffieHellmanParams(context, $0.baseAddress, $0.count) } == errSecSuccess)
        var dhPointer: UnsafeMutableRawPointer?
        var dhLength = 0
        #expect(SSLGetDiffieHellmanParams(context, &dhPointer, &dhLength) == errSecSuccess)
        #expect(Data(bytes: try #require(dhPointer), count: dhLength) == dh)

        // The type identifier, and the deprecated constructor pair.
        #expect(CFGetTypeID(context) == SSLContextGetTypeID())
        #expect(SSLContextGetTypeID() != SecTrustGetTypeID() && SSLContextGetTypeID() != CFArrayGetTypeID())
        var made: SSLContext?
        #expect(SSLNewContext(true, &made) == errSecSuccess)
        let server = try #require(made)
        #expect(SSLSetCertificateAuthorities(server, root, true) == errSecSuccess, "a server's call: SSLNewContext(true) made a server")
        #expect(SSLDisposeContext(server) == errSecSuccess)
        var state = SSLSessionState.idle
        #expect(SSLGetSessionState(server, &state) == errSecSuccess && state == .aborted)
        #expect(SSLHandshake(server) == errSSLClosedAbort)
    }

    /// RFC 7919's ffdhe2048 group as DER PKCS #3 parameters, made by openssl.
    static func diffieHellmanParameters(_ world: TLSWorld) throws -> Data {
        try OpenSSLCLI.require(["genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:ffdhe2048", "-out", "dh.pem"], in: world.ca.url)
        try OpenSSLCLI.require(["dhparam", "-in", "dh.pem", "-outform", "DER", "-out", "dh.der"], in: world.ca.url)
        return try world.ca.directory.read("dh.der")
    }

    @Test("bad inputs: Apple's status, nothing changed, no crash; after the handshake began, configuration is errSecBadReq")
    func badInputs() throws {
        let context = try #require(SSLCreateContext(nil, .clientSide, .streamType))
        let before = Self.enabledCiphers(context)
        #expect(SSLSetEnabledCiphers(context, [0xFFFF, 0x0000], 2) == errSecParam, "no supported suite among them")
        #expect(SSLSetEnabledCiphers(context, [0xC02F], 0) == errSecParam)
        #expect(Self.enabledCiphers(context) == before)
        #expect(SSLSetEnabledCiphers(context, [0xFFFF, 0xC02F], 2) == errSecSuccess, "unsupported numbers are left out, as Apple's")
        #expect(Self.enabledCiphers(context) == [0xC02F])
        var suites = [SSLCipherSuite](repeating: 7, count: 1)
        var count = 0
        #expect(SSLGetSupportedCiphers(context, &suites, &count) == errSSLBufferOverflow)
        #expect(suites == [7] && count == 0)

        for old in [SSLProtocol.sslProtocol2, .sslProtocol3, .tlsProtocol1, .tlsProtocol11] {
            #expect(SSLSetProtocolVersionEnabled(context, old, true) == errSSLIllegalParam)
            #expect(SSLSetProtocolVersionEnabled(context, old, false) == errSecSuccess)
            #expect(SSLSetProtocolVersion(context, old) == errSSLIllegalParam)
        }
        var flag: DarwinBoolean = true
        #expect(SSLGetProtocolVersionEnabled(context, .dtlsProtocol1, &flag) == errSecParam)
        #expect(SSLSetProtocolVersionEnabled(context, .dtlsProtocol12, true) == errSecParam)
        #expect(SSLSetProtocolVersion(context, .dtlsProtocol1) == errSecParam)
        #expect(SSLGetProtocolVersionEnabled(context, .tlsProtocol12, &flag) == errSecSuccess && flag.boolValue, "unchanged")

        for config in [kSSLSessionConfig_legacy, kSSLSessionConfig_RC4_fallback, kSSLSessionConfig_anonymous, "no such" as CFString] {
            #expect(SSLSetSessionConfig(context, config) == errSecParam)
        }
        #expect(Self.enabledCiphers(context) == [0xC02F], "a refused configuration changes nothing")

        #expect(SSLSetTrustedRoots(context, ["not a certificate"] as CFArray, true) == errSecParam)
        var roots: CFArray?
        #expect(SSLCopyTrustedRoots(context, &roots) == errSecSuccess && roots?.count == SystemAnchors.all.count)
        let world = try TLSWorld()
        let root = SecCertificate(world.root)
        #expect(SSLSetCertificateAuthorities(context, root, true) == errSecParam, "a client's")
        let server = try #require(SSLCreateContext(nil, .serverSide, .streamType))
        #expect(SSLSetCertificateAuthorities(server, "text" as NSString, true) == errSecParam)
        #expect(SSLSetCertificateAuthorities(server, [root, "text"] as CFArray, true) == errSecParam)
        var authorities: CFArray?
        #expect(SSLCopyCertificateAuthorities(server, &authorities) == errSecSuccess && authorities == nil)
        #expect(SSLAddDistinguishedName(server, [0x30, 0x03, 0x01], 3) == errSecParam)
        #expect(SSLAddDistinguishedName(server, nil, 0) == errSecParam)
        var names: CFArray?
        #expect(SSLCopyDistinguishedNames(server, &names) == errSecSuccess && names == nil)
        #expect(SSLSetDiffieHellmanParams(server, [0x30, 0x00], 2) == errSecParam)
        var dh: UnsafeMutableRawPointer?
        var dhLength = 0
        #expect(SSLGetDiffieHellmanParams(server, &dh, &dhLength) == errSecSuccess && dh == nil && dhLength == 0)
        #expect(SSLSetOCSPResponse(server, NSData()) == errSecParam)
        #expect(SSLSetEncryptionCertificate(server, [root] as CFArray) == errSecParam, "an identity comes first")

        var length = 16
        var buffer = [CChar](repeating: 0, count: 16)
        #expect(SSLCopyRequestedPeerName(server, &buffer, &length) == errSecParam, "no client hello yet")
        #expect(SSLCopyRequestedPeerNameLength(context, &length) == errSecParam)
        var certificates: CFArray?
        #expect(SSLCopyPeerCertificates(context, &certificates) == errSecBadReq && certificates == nil)
        var state = SSLClientCertificateState.certRejected
        #expect(SSLGetClientCertificateState(context, &state) == errSecSuccess && state == .certNone)

        // Datagram calls on a stream context: errSecParam, as Apple's.
        var size = 99
        #expect(SSLSetDatagramHelloCookie(context, [1, 2], 2) == errSecParam)
        #expect(SSLSetMaxDatagramRecordSize(context, 1200) == errSecParam)
        #expect(SSLGetMaxDatagramRecordSize(context, &size) == errSecParam && size == 99)
        #expect(SSLGetDatagramWriteSize(context, &size) == errSecParam && size == 99)
        #expect(SSLReHandshake(server) == errSSLBadConfiguration, "before any handshake: the first, which has no I/O set")

        // Once the handshake began (a break on server authentication), configuration is refused.
        let peer = try world.server()
        let socket = try Helpers.Socket(connectingTo: peer.port)
        let started = try Helpers.client(socket)
        #expect(SSLSetSessionOption(started, .breakOnServerAuth, true) == errSecSuccess)
        #expect(SSLHandshake(started) == errSSLPeerAuthCompleted)
        #expect(SSLSetEnabledCiphers(started, [0xC02F], 1) == errSecBadReq)
        #expect(SSLSetTrustedRoots(started, [root] as CFArray, true) == errSecBadReq)
        #expect(SSLSetProtocolVersionEnabled(started, .tlsProtocol12, false) == errSecBadReq)
        #expect(SSLSetProtocolVersion(started, .tlsProtocol12) == errSecBadReq)
        #expect(SSLSetSessionConfig(started, kSSLSessionConfig_default) == errSecBadReq)
        #expect(SSLSetEnableCertVerify(started, false) == errSecBadReq)
        #expect(SSLReHandshake(started) == errSecBadReq, "during a handshake")
        #expect(SSLClose(started) == errSecSuccess)
    }

    // MARK: Against s_server

    @Test("SSLSetEnabledCiphers restricts the handshake: a TLS 1.2 suite alone gives TLS 1.2 and that suite, a TLS 1.3 suite alone that one; none in common fails")
    func enabledCiphersRestrict() throws {
        let world = try TLSWorld()
        let server = try world.server()
        for (suite, version) in [(SSLCipherSuite(0xC02C), SSLProtocol.tlsProtocol12), (0x1303, .tlsProtocol13), (0xC02B, .tlsProtocol12)] {
            let socket = try Helpers.Socket(connectingTo: server.port)
            let context = try Helpers.client(socket)
            #expect(SSLSetEnabledCiphers(context, [suite], 1) == errSecSuccess)
            #expect(Helpers.handshakeTrusting([SecCertificate(world.root)], context).statuses.last == errSecSuccess)
            var negotiated: SSLCipherSuite = 0
            #expect(SSLGetNegotiatedCipher(context, &negotiated) == errSecSuccess && negotiated == suite, "\(negotiated)")
            var protocolVersion = SSLProtocol.sslProtocolUnknown
            #expect(SSLGetNegotiatedProtocolVersion(context, &protocolVersion) == errSecSuccess && protocolVersion == version)
            // s_server's page names the suite it chose.
            let page = Helpers.exchange(context, "GET / HTTP/1.0\r\n\r\n").reply
            let name = try #require(try Helpers.openSSLName(ofSuite: suite))
            #expect(page.contains(name), "\(name) not in \(page.prefix(300))")
        }
        // The server allows only ECDHE-ECDSA-AES128-GCM-SHA256 in TLS 1.2; we only AES-256: no suite in common.
        let narrow = try world.server(["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"])
        let socket = try Helpers.Socket(connectingTo: narrow.port)
        let context = try Helpers.client(socket)
        #expect(SSLSetEnabledCiphers(context, [0xC02C, 0x1302], 2) == errSecSuccess)
        let status = Helpers.handshakeTrusting([SecCertificate(world.root)], context).statuses.last
        #expect([errSSLPeerHandshakeFail, errSSLNegotiation, errSSLProtocol].contains(status), "\(String(describing: status))")
    }

    @Test("SSLSetTrustedRoots admits a server the system anchors refuse (no break); replaced by another root it is refused; SSLCopyPeerCertificates gives the chain")
    func trustedRootsAndPeerCertificates() throws {
        let world = try TLSWorld()
        let server = try world.server(["-cert_chain", "root.pem"])
        let root = SecCertificate(world.root)

        var socket = try Helpers.Socket(connectingTo: server.port)
        var context = try Helpers.client(socket)
        #expect([errSSLUnknownRootCert, errSSLNoRootCert, errSSLXCertChainInvalid].contains(Self.handshake(context)))

        socket = try Helpers.Socket(connectingTo: server.port)
        context = try Helpers.client(socket)
        #expect(SSLSetTrustedRoots(context, [root] as CFArray, false) == errSecSuccess)
        #expect(Self.handshake(context) == errSecSuccess)
        var certificates: CFArray?
        #expect(SSLCopyPeerCertificates(context, &certificates) == errSecSuccess)
        let chain = try #require(certificates as? [SecCertificate])
        #expect(chain.map(\.certificate.subjectSummary) == ["tls.example", "Root"], "\(chain.map(\.certificate.subjectSummary))")
        #expect(Helpers.exchange(context, "GET / HTTP/1.0\r\n\r\n").reply.hasPrefix("HTTP/1.0 200 ok"))

        socket = try Helpers.Socket(connectingTo: server.port)
        context = try Helpers.client(socket)
        #expect(SSLSetTrustedRoots(context, [root] as CFArray, true) == errSecSuccess)
        #expect(SSLSetTrustedRoots(context, [SecCertificate(world.otherRoot)] as CFArray, true) == errSecSuccess)
        #expect([errSSLUnknownRootCert, errSSLNoRootCert, errSSLXCertChainInvalid].contains(Self.handshake(context)))
    }

    @Test("relaxations against a self-signed s_server: refused by default; SSLSetAllowsAnyRoot admits it (not under a wrong name); SSLSetEnableCertVerify(false) admits it; SSLSetAllowsExpiredCerts admits an expired leaf")
    func relaxations() throws {
        let world = try TLSWorld()
        try world.ca.issue(
            "self", subject: "/CN=tls.example", issuer: nil,
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tls.example"))
        try world.ca.issue(
            "expired", subject: "/CN=tls.example", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tls.example"), notAfter: "20210101000000Z")
        let selfSigned = try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "self.pem", "-key", "self.key"])
        func attempt(_ port: UInt16, name: String = "tls.example", _ setup: (SSLContext) -> Void) throws -> OSStatus {
            let socket = try Helpers.Socket(connectingTo: port)
            let context = try Helpers.client(socket, name: name)
            setup(context)
            let status = Self.handshake(context)
            if status == errSecSuccess {
                #expect(Helpers.exchange(context, "GET / HTTP/1.0\r\n\r\n").reply.hasPrefix("HTTP/1.0 200 ok"))
            }
            return status
        }
        #expect(try attempt(selfSigned.port) { _ in } != errSecSuccess)
        let anyRoot = try attempt(selfSigned.port) { context in
            #expect(SSLSetAllowsAnyRoot(context, true) == errSecSuccess)
        }
        #expect(anyRoot == errSecSuccess)
        #expect(try attempt(selfSigned.port, name: "other.example") { _ = SSLSetAllowsAnyRoot($0, true) } == errSSLHostNameMismatch)
        #expect(try attempt(selfSigned.port, name: "other.example") { _ = SSLSetEnableCertVerify($0, false) } == errSecSuccess)

        let expired = try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "expired.pem", "-key", "expired.key"])
        let trustRoot: (SSLContext) -> Void = { context in
            #expect(SSLSetTrustedRoots(context, [SecCertificate(world.root)] as CFArray, true) == errSecSuccess)
        }
        #expect(try attempt(expired.port, trustRoot) == errSSLCertExpired)
        #expect(try attempt(expired.port) { trustRoot($0); _ = SSLSetAllowsExpiredRoots($0, true) } == errSSLCertExpired, "the leaf is no root")
        #expect(try attempt(expired.port) { trustRoot($0); _ = SSLSetAllowsExpiredCerts($0, true) } == errSecSuccess)
    }

    @Test("a client against s_server -Verify 1 -CAfile root.pem: SSLCopyDistinguishedNames gives the root's subject; the certificate state goes none → sent (requested without an identity)")
    func distinguishedNamesAndClientCertificateState() throws {
        let world = try TLSWorld()
        let server = try world.server(["-Verify", "1", "-CAfile", "root.pem", "-tls1_2"])
        let rootSubject = world.root.subject.derEncoded
        for withIdentity in [true, false] {
            let socket = try Helpers.Socket(connectingTo: server.port)
            let context = try Helpers.client(socket)
            if withIdentity {
                let identity = SecIdentity(certificate: SecCertificate(world.client.certificate), privateKey: SecKey(world.client.privateKey))
                #expect(SSLSetCertificate(context, [identity] as CFArray) == errSecSuccess)
            }
            var state = SSLClientCertificateState.certRejected
            #expect(SSLGetClientCertificateState(context, &state) == errSecSuccess && state == .certNone)
            #expect(SSLSetTrustedRoots(context, [SecCertificate(world.root)] as CFArray, true) == errSecSuccess)
            let status = Self.handshake(context)
            if withIdentity { #expect(status == errSecSuccess) }
            var names: CFArray?
            #expect(SSLCopyDistinguishedNames(context, &names) == errSecSuccess)
            let list = try #require(names as? [NSData]).map { Data(referencing: $0) }
            #expect(list == [rootSubject], "\(list.map { $0.base64EncodedString() })")
            #expect(SSLGetClientCertificateState(context, &state) == errSecSuccess)
            #expect(state == (withIdentity ? .certSent : .certRequested))
        }
        // A server that asks for nothing: no names, state none.
        let plain = try world.server(["-tls1_2"])
        let socket = try Helpers.Socket(connectingTo: plain.port)
        let context = try Helpers.client(socket)
        #expect(SSLSetTrustedRoots(context, [SecCertificate(world.root)] as CFArray, true) == errSecSuccess)
        #expect(Self.handshake(context) == errSecSuccess)
        var names: CFArray?
        var state = SSLClientCertificateState.certRejected
        #expect(SSLCopyDistinguishedNames(context, &names) == errSecSuccess && names == nil)
        #expect(SSLGetClientCertificateState(context, &state) == errSecSuccess && state == .certNone)
    }

    @Test("our server staples the OCSP response that openssl s_client -status prints, lists its CA names in the CertificateRequest, reads the SNI; TLS 1.3 and 1.2")
    func serverStaplesAndNamesAuthorities() throws {
        let world = try TLSWorld()
        // A real OCSP response for the server certificate, by openssl ocsp from the CA's database.
        try OpenSSLCLI.require(["ocsp", "-issuer", "root.pem", "-cert", "server.pem", "-no_nonce", "-reqout", "server.req"], in: world.ca.url)
        try OpenSSLCLI.require(
            [
                "ocsp", "-index", "index.txt", "-CA", "root.pem", "-rsigner", "root.pem", "-rkey", "root.key", "-reqin",
                "server.req", "-respout", "server.resp", "-ndays", "1",
            ], in: world.ca.url)
        let response = try world.ca.directory.read("server.resp")
        let otherSubject = world.otherRoot.subject.derEncoded
        for flag in ["-tls1_3", "-tls1_2"] {
            let listener = try Listener()
            let client = try OpenSSLClient(
                port: listener.port, in: world.ca.url, input: "ping\n",
                arguments: [flag, "-status", "-servername", "tls.example", "-CAfile", "root.pem"])
            let accepted = listener.accept()
            #expect(accepted >= 0)
            let connection = Helpers.Socket(descriptor: accepted)
            let context = try Self.server(connection, world)
            #expect(SSLSetOCSPResponse(context, response as NSData) == errSecSuccess)
            #expect(SSLSetClientSideAuthenticate(context, .tryAuthenticate) == errSecSuccess)
            #expect(SSLSetCertificateAuthorities(context, SecCertificate(world.root), true) == errSecSuccess)
            #expect(otherSubject.withUnsafeBytes { SSLAddDistinguishedName(context, $0.baseAddress, $0.count) } == errSecSuccess)
            var authorities: CFArray?
            #expect(SSLCopyCertificateAuthorities(context, &authorities) == errSecSuccess)
            #expect((authorities as? [SecCertificate])?.map(\.certificate) == [world.root])
            var names: CFArray?
            #expect(SSLCopyDistinguishedNames(context, &names) == errSecSuccess && names?.count == 2)

            #expect(Self.handshake(context) == errSecSuccess)
            var length = 0
            #expect(SSLCopyRequestedPeerNameLength(context, &length) == errSecSuccess && length == "tls.example".utf8.count)
            var sni = [CChar](repeating: 0, count: 32)
            length = sni.count
            #expect(SSLCopyRequestedPeerName(context, &sni, &length) == errSecSuccess && String(decoding: sni.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == "tls.example")
            var state = SSLClientCertificateState.certNone
            #expect(SSLGetClientCertificateState(context, &state) == errSecSuccess && state == .certRequested, "asked, none sent")
            var buffer = [UInt8](repeating: 0, count: 64)
            var count = 0
            #expect(buffer.withUnsafeMutableBytes { SSLRead(context, $0.baseAddress!, $0.count, &count) } == errSecSuccess)
            var written = 0
            #expect(SSLWrite(context, "pong\n", 5, &written) == errSecSuccess)
            #expect(SSLClose(context) == errSecSuccess)
            shutdown(accepted, Int32(SHUT_RDWR))
            let printed = client.finishJoined()
            withExtendedLifetime(connection) {}
            #expect(printed.contains("OCSP Response Status: successful"), "\(flag): \(printed.prefix(1500))")
            #expect(printed.contains("Cert Status: good"), "\(flag)")
            #expect(printed.contains("Acceptable client certificate CA names"), "\(flag)")
            #expect(printed.contains("CN = Root") && printed.contains("CN = Other Root"), "\(flag): \(printed.prefix(2500))")
            #expect(printed.contains("pong"))
        }
        // Without a response set, a client asking for the status gets none, and the handshake still completes.
        let listener = try Listener()
        let client = try OpenSSLClient(port: listener.port, in: world.ca.url, input: "ping\n", arguments: ["-status", "-CAfile", "root.pem"])
        let accepted = listener.accept()
        let connection = Helpers.Socket(descriptor: accepted)
        let context = try Self.server(connection, world)
        #expect(Self.handshake(context) == errSecSuccess)
        #expect(SSLClose(context) == errSecSuccess)
        shutdown(accepted, Int32(SHUT_RDWR))
        let printed = client.finishJoined()
        withExtendedLifetime(connection) {}
        #expect(printed.contains("OCSP response: no response sent"), "\(printed.prefix(800))")
    }

    @Test("SSLSetDiffieHellmanParams on a server: s_client limited to a DHE suite connects with them and fails without")
    func diffieHellmanServer() throws {
        let world = try TLSWorld()
        try OpenSSLCLI.require(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.key"], in: world.ca.url)
        try world.ca.issue(
            "rsa", subject: "/CN=tls.example", issuer: "root", key: "rsa",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tls.example"))
        try OpenSSLCLI.require(["pkcs12", "-export", "-in", "rsa.pem", "-inkey", "rsa.key", "-passout", "pass:pw", "-out", "rsa.p12"], in: world.ca.url)
        let contents = try #require(try PKCS12.parse(try world.ca.directory.read("rsa.p12"), passphrase: "pw"))
        let identity = SecIdentity(certificate: SecCertificate(contents.certificate), privateKey: SecKey(contents.privateKey))
        let dh = try Self.diffieHellmanParameters(world)
        for withParameters in [true, false] {
            let listener = try Listener()
            let client = try OpenSSLClient(
                port: listener.port, in: world.ca.url, input: "ping\n",
                arguments: ["-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256", "-CAfile", "root.pem"])
            let accepted = listener.accept()
            let connection = Helpers.Socket(descriptor: accepted)
            let context = try #require(SSLCreateContext(nil, .serverSide, .streamType))
            #expect(SSLSetIOFuncs(context, Helpers.socketRead, Helpers.socketWrite) == errSecSuccess)
            #expect(SSLSetConnection(context, connection.connection) == errSecSuccess)
            #expect(SSLSetCertificate(context, [identity] as CFArray) == errSecSuccess)
            if withParameters {
                #expect(dh.withUnsafeBytes { SSLSetDiffieHellmanParams(context, $0.baseAddress, $0.count) } == errSecSuccess)
            }
            let status = Self.handshake(context)
            if withParameters {
                #expect(status == errSecSuccess)
                var suite: SSLCipherSuite = 0
                #expect(SSLGetNegotiatedCipher(context, &suite) == errSecSuccess && suite == 0x009E, "\(suite)")
                #expect(SSLClose(context) == errSecSuccess)
            } else {
                #expect(status != errSecSuccess)
            }
            shutdown(accepted, Int32(SHUT_RDWR))
            let printed = client.finishJoined()
            withExtendedLifetime(connection) {}
            if withParameters { #expect(printed.contains("DHE-RSA-AES128-GCM-SHA256"), "\(printed.prefix(800))") }
        }
    }

    @Test("SSLReHandshake: TLS 1.3 updates the keys and the page still arrives; TLS 1.2 renegotiates with a server that allows it; one that refuses answers errSSLPeerNoRenegotiation")
    func reHandshake() throws {
        let world = try TLSWorld()
        let root = SecCertificate(world.root)
        for arguments in [["-tls1_3"], ["-tls1_2", "-client_renegotiation"]] {
            let server = try world.server(arguments)
            let socket = try Helpers.Socket(connectingTo: server.port)
            let context = try Helpers.client(socket)
            #expect(SSLSetTrustedRoots(context, [root] as CFArray, true) == errSecSuccess)
            #expect(Self.handshake(context) == errSecSuccess)
            #expect(SSLReHandshake(context) == errSecSuccess, "\(arguments)")
            var state = SSLSessionState.idle
            #expect(SSLGetSessionState(context, &state) == errSecSuccess && state == .connected)
            let page = Helpers.exchange(context, "GET / HTTP/1.0\r\n\r\n").reply
            #expect(page.hasPrefix("HTTP/1.0 200 ok"), "\(arguments): \(page.prefix(200))")
            #expect(SSLReHandshake(context) == errSSLClosedGraceful || SSLReHandshake(context) == errSSLClosedAbort, "after the end")
        }
        let refusing = try world.server(["-tls1_2", "-no_renegotiation"])
        let socket = try Helpers.Socket(connectingTo: refusing.port)
        let context = try Helpers.client(socket)
        #expect(SSLSetTrustedRoots(context, [root] as CFArray, true) == errSecSuccess)
        #expect(Self.handshake(context) == errSecSuccess)
        let status = SSLReHandshake(context)
        #expect(status == errSSLPeerNoRenegotiation, "s_server -no_renegotiation refuses: \(status)")
    }

    @Test("SSLSetError(errSecCertificateExpired) at a break ends the session at the next SSLHandshake; other statuses change nothing")
    func outOfBandError() throws {
        let world = try TLSWorld()
        let server = try world.server()
        for (error, ends) in [(errSecCertificateExpired, true), (errSecParam, false)] {
            let socket = try Helpers.Socket(connectingTo: server.port)
            let context = try Helpers.client(socket)
            #expect(SSLSetSessionOption(context, .breakOnServerAuth, true) == errSecSuccess)
            #expect(SSLHandshake(context) == errSSLPeerAuthCompleted)
            #expect(SSLSetError(context, error) == errSecSuccess)
            #expect(SSLHandshake(context) == errSecSuccess)
            var state = SSLSessionState.idle
            #expect(SSLGetSessionState(context, &state) == errSecSuccess && state == (ends ? .closed : .connected))
            var written = 0
            let wrote = SSLWrite(context, "GET / HTTP/1.0\r\n\r\n", 18, &written)
            #expect(ends ? wrote == errSSLClosedGraceful : wrote == errSecSuccess)
        }
    }
}
