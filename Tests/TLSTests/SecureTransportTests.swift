import Certificates
import Foundation
import Security
import TLS
import TestVectors
import Testing
import Trust
import HardwareKeys
import SecurityBase

/// Secure Transport used exactly as an Apple-platform client or server uses it: a socket, `SSLReadFunc` and
/// `SSLWriteFunc` over it, the connection reference pointing at the descriptor; the peers are `openssl s_server`
/// and `openssl s_client` on loopback.
@Suite("Secure Transport against openssl s_server and s_client on loopback", .serialized, .hostOnly)
struct SecureTransportTests {
    // MARK: The I/O functions, as Apple's sample code writes them

    static let socketRead: SSLReadFunc = { connection, data, length in
        let fd = connection.load(as: Int32.self)
        let wanted = length.pointee
        var done = 0
        while done < wanted {
            let count = Glibc.read(fd, data + done, wanted - done)
            if count > 0 {
                done += count
                continue
            }
            length.pointee = done
            if count == 0 { return errSSLClosedGraceful }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? errSSLWouldBlock : errSSLClosedAbort
        }
        length.pointee = done
        return errSecSuccess
    }

    static let socketWrite: SSLWriteFunc = { connection, data, length in
        let fd = connection.load(as: Int32.self)
        let wanted = length.pointee
        var done = 0
        while done < wanted {
            let count = send(fd, data + done, wanted - done, Int32(MSG_NOSIGNAL))
            if count > 0 {
                done += count
                continue
            }
            length.pointee = done
            if count < 0 && errno == EINTR { continue }
            return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? errSSLWouldBlock : errSSLClosedAbort
        }
        length.pointee = done
        return errSecSuccess
    }

    /// A connected TCP socket to 127.0.0.1:`port` (blocking, 10 s timeouts), owned here.
    final class Socket {
        let descriptor: UnsafeMutablePointer<Int32>

        init(descriptor fd: Int32) {
            descriptor = .allocate(capacity: 1)
            descriptor.initialize(to: fd)
            var limit = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }

        convenience init(connectingTo port: UInt16) throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard status == 0 else {
                close(fd)
                throw POSIXError(.ECONNREFUSED)
            }
            self.init(descriptor: fd)
        }

        var connection: SSLConnectionRef { UnsafeRawPointer(descriptor) }

        deinit {
            close(descriptor.pointee)
            descriptor.deallocate()
        }
    }

    /// A client context on a new connection to `port`, with the I/O functions set.
    static func client(_ socket: Socket, name: String? = "tls.example") throws -> SSLContext {
        let context = try #require(SSLCreateContext(nil, .clientSide, .streamType))
        #expect(SSLSetIOFuncs(context, socketRead, socketWrite) == errSecSuccess)
        #expect(SSLSetConnection(context, socket.connection) == errSecSuccess)
        if let name { #expect(SSLSetPeerDomainName(context, name, name.utf8.count) == errSecSuccess) }
        return context
    }

    /// The handshake as the seeds wrote it: break on server authentication, evaluate the peer trust with the
    /// application's own anchors, go on only when it is trusted. The result of each SSLHandshake call, in order.
    static func handshakeTrusting(_ anchors: [SecCertificate], _ context: SSLContext) -> (statuses: [OSStatus], trusted: Bool?) {
        #expect(SSLSetSessionOption(context, .breakOnServerAuth, true) == errSecSuccess)
        var statuses: [OSStatus] = []
        var trusted: Bool?
        while true {
            let status = SSLHandshake(context)
            statuses.append(status)
            guard status == errSSLPeerAuthCompleted else { return (statuses, trusted) }
            var trust: SecTrust?
            #expect(SSLCopyPeerTrust(context, &trust) == errSecSuccess)
            guard let trust else { return (statuses, nil) }
            #expect(SecTrustSetAnchorCertificates(trust, anchors as CFArray) == errSecSuccess)
            var result = SecTrustResultType.invalid
            #expect(SecTrustEvaluate(trust, &result) == errSecSuccess)
            trusted = result == .unspecified || result == .proceed
            if trusted != true {
                _ = SSLClose(context)
                return (statuses, false)
            }
        }
    }

    /// Writes `text` and reads until the peer closes: what came back.
    static func exchange(_ context: SSLContext, _ text: String) -> (status: OSStatus, reply: String) {
        let bytes = Array(text.utf8)
        var written = 0
        let wrote = bytes.withUnsafeBytes { SSLWrite(context, $0.baseAddress, $0.count, &written) }
        guard wrote == errSecSuccess, written == bytes.count else { return (wrote, "") }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var count = 0
            let status = buffer.withUnsafeMutableBytes { SSLRead(context, $0.baseAddress!, $0.count, &count) }
            reply += buffer.prefix(count)
            if status != errSecSuccess { return (status, String(decoding: reply, as: UTF8.self)) }
        }
    }

    /// The OpenSSL name of the IANA cipher suite `number`, from `openssl ciphers -V` (the independent table).
    static func openSSLName(ofSuite number: UInt16) throws -> String? {
        let listing = try OpenSSLCLI.require(["ciphers", "-V", "ALL:@SECLEVEL=0"]).text
        let code = String(format: "0x%02X,0x%02X", number >> 8, number & 0xff)
        return listing.split(separator: "\n").first { $0.contains(code) }?.split(separator: " ").dropFirst(2).first.map(String.init)
    }

    // MARK: Client

    @Test("the seed's client: BreakOnServerAuth, SecTrustSetAnchorCertificates, SecTrustEvaluate, then a page over SSLWrite/SSLRead (TLS 1.3 and 1.2)")
    func clientAsTheSeedWroteIt() throws {
        let world = try TLSWorld()
        let root = SecCertificate(world.root)
        for (flag, version) in [("-tls1_3", SSLProtocol.tlsProtocol13), ("-tls1_2", .tlsProtocol12)] {
            let server = try world.server([flag])
            let socket = try Socket(connectingTo: server.port)
            let context = try Self.client(socket)
            let (statuses, trusted) = Self.handshakeTrusting([root], context)
            #expect(statuses == [errSSLPeerAuthCompleted, errSecSuccess], "\(statuses)")
            #expect(trusted == true)
            var state = SSLSessionState.idle
            #expect(SSLGetSessionState(context, &state) == errSecSuccess && state == .connected)
            var negotiated = SSLProtocol.sslProtocolUnknown
            #expect(SSLGetNegotiatedProtocolVersion(context, &negotiated) == errSecSuccess && negotiated == version)
            var suite: SSLCipherSuite = 0
            #expect(SSLGetNegotiatedCipher(context, &suite) == errSecSuccess)
            let (status, page) = Self.exchange(context, "GET / HTTP/1.0\r\n\r\n")
            #expect(status == errSSLClosedGraceful || status == errSSLClosedNoNotify, "\(status)")
            #expect(page.hasPrefix("HTTP/1.0 200 ok"), "\(page.prefix(80))")
            // s_server's page names the cipher it chose: the one SSLGetNegotiatedCipher numbers.
            let name = try #require(try Self.openSSLName(ofSuite: suite), "suite 0x\(String(suite, radix: 16))")
            #expect(page.contains(name), "\(name) not in \(page.prefix(400))")
            #expect(SSLClose(context) == errSecSuccess)
        }
    }

    @Test("a non-blocking socket: SSLHandshake, SSLWrite and SSLRead answer errSSLWouldBlock until poll(2) says go, and the page arrives whole")
    func nonBlocking() throws {
        let world = try TLSWorld()
        let server = try world.server()
        let socket = try Socket(connectingTo: server.port)
        let fd = socket.descriptor.pointee
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let context = try Self.client(socket)
        #expect(SSLSetSessionOption(context, .breakOnServerAuth, true) == errSecSuccess)
        func wait() {
            var ready = pollfd(fd: fd, events: Int16(POLLIN | POLLOUT), revents: 0)
            _ = poll(&ready, 1, 1000)
        }
        var wouldBlock = 0
        var status = SSLHandshake(context)
        while status == errSSLWouldBlock || status == errSSLPeerAuthCompleted {
            if status == errSSLWouldBlock { wouldBlock += 1; wait() }
            if status == errSSLPeerAuthCompleted {
                var trust: SecTrust?
                _ = SSLCopyPeerTrust(context, &trust)
                #expect(SecTrustSetAnchorCertificates(try #require(trust), [SecCertificate(world.root)] as CFArray) == errSecSuccess)
                #expect(SecTrustEvaluateWithError(try #require(trust), nil))
            }
            status = SSLHandshake(context)
        }
        #expect(status == errSecSuccess)
        _ = wouldBlock  // how often depends on timing; the read below blocks for certain
        // Nothing was asked yet, so the server sends nothing: a read must say errSSLWouldBlock, with no bytes.
        var nothing = [UInt8](repeating: 0, count: 16)
        var none = -1
        #expect(nothing.withUnsafeMutableBytes { SSLRead(context, $0.baseAddress!, $0.count, &none) } == errSSLWouldBlock)
        #expect(none == 0)
        let request = Array("GET / HTTP/1.0\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            var count = 0
            let result = request[sent...].withUnsafeBytes { SSLWrite(context, $0.baseAddress, $0.count, &count) }
            sent += count
            if result == errSSLWouldBlock { wait() } else { #expect(result == errSecSuccess) }
        }
        var page: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            var count = 0
            let result = buffer.withUnsafeMutableBytes { SSLRead(context, $0.baseAddress!, $0.count, &count) }
            page += buffer.prefix(count)
            if result == errSSLWouldBlock { wait(); continue }
            if result != errSecSuccess {
                #expect(result == errSSLClosedGraceful || result == errSSLClosedNoNotify, "\(result)")
                break
            }
        }
        #expect(String(decoding: page, as: UTF8.self).hasPrefix("HTTP/1.0 200 ok"))
        #expect(String(decoding: page, as: UTF8.self).contains("</HTML>") || String(decoding: page, as: UTF8.self).contains("</html>"))
    }

    @Test("SSLSetPeerID: a second context with the same peer ID resumes (s_server: Reused), TLS 1.3 and 1.2; another ID does not")
    func resumptionByPeerID() throws {
        let world = try TLSWorld()
        for (flag, version) in [("-tls1_3", "TLSv1.3"), ("-tls1_2", "TLSv1.2")] {
            let server = try world.server([flag])
            let peerID = Array("127.0.0.1:\(server.port)/\(flag)".utf8)
            func page(_ id: [UInt8]) throws -> String {
                let socket = try Socket(connectingTo: server.port)
                let context = try Self.client(socket)
                #expect(id.withUnsafeBytes { SSLSetPeerID(context, $0.baseAddress, $0.count) } == errSecSuccess)
                #expect(Self.handshakeTrusting([SecCertificate(world.root)], context).statuses.last == errSecSuccess)
                let reply = Self.exchange(context, "GET / HTTP/1.0\r\n\r\n").reply
                // Closed as an Apple client closes: libssl does not resume a session whose connection ended without
                // our close_notify (RFC 5246 §7.2.1's rule for connections that end abnormally).
                #expect(SSLClose(context) == errSecSuccess)
                return reply
            }
            #expect(try page(peerID).contains("New, \(version)"))
            #expect(try page(peerID).contains("Reused, \(version)"))
            #expect(try page(Array("another peer".utf8)).contains("New, \(version)"))
        }
    }

    @Test("untrusted servers: default verification (system anchors) refuses the test root; a wrong name fails the application's evaluation")
    func clientRefusesUntrusted() throws {
        let world = try TLSWorld()
        let server = try world.server()
        // No break: the context evaluates with the system's anchors, which do not hold the test root.
        var socket = try Socket(connectingTo: server.port)
        var context = try Self.client(socket)
        let status = SSLHandshake(context)
        #expect([errSSLNoRootCert, errSSLUnknownRootCert, errSSLXCertChainInvalid].contains(status), "\(status)")
        var state = SSLSessionState.idle
        #expect(SSLGetSessionState(context, &state) == errSecSuccess && state == .aborted)
        var written = 0
        #expect(SSLWrite(context, "x", 1, &written) == errSSLClosedAbort && written == 0, "nothing is sent after a failure")
        // A wrong peer name: the application's evaluation says no, and it closes.
        socket = try Socket(connectingTo: server.port)
        context = try Self.client(socket, name: "other.example")
        let (statuses, trusted) = Self.handshakeTrusting([SecCertificate(world.root)], context)
        #expect(statuses == [errSSLPeerAuthCompleted] && trusted == false)
    }

    /// Secure Transport's own verification honours the user's distrust, as SecTrust does.
    @Test("the user's trust settings: a root they deny is refused by the context's own verification; one they trust is accepted")
    func clientHonoursTrustSettings() throws {
        let world = try TLSWorld()
        let server = try world.server()
        let directory = try TemporaryDirectory("secure-transport-trust-settings")
        let domains = TrustSettingsDomains(directory: directory.url.path)
        func handshake(trustedRoots: [Certificate]?) throws -> OSStatus {
            try TrustSettingsDomains.withDomains(domains) {
                let socket = try Socket(connectingTo: server.port)
                let context = try Self.client(socket)
                if let trustedRoots {
                    #expect(SSLSetTrustedRoots(context, trustedRoots.map(SecCertificate.init) as CFArray, false) == errSecSuccess)
                }
                let status = SSLHandshake(context)
                _ = SSLClose(context)
                return status
            }
        }
        #expect(try handshake(trustedRoots: [world.root]) == errSecSuccess)
        try domains.user.set(TrustSettings([try .init(policy: .ssl, result: .deny)]), for: world.root)
        #expect(try handshake(trustedRoots: [world.root]) == errSSLXCertChainInvalid)
        // Trusted by the user instead: an anchor beside the system's, without SSLSetTrustedRoots.
        #expect(try handshake(trustedRoots: nil) != errSecSuccess)
        try domains.user.set(TrustSettings(), for: world.root)
        #expect(try handshake(trustedRoots: nil) == errSecSuccess)
    }

    @Test("mutual authentication: SSLSetCertificate with the identity satisfies s_server -Verify; without it the server refuses")
    func clientIdentity() throws {
        let world = try TLSWorld()
        let server = try world.server(["-Verify", "1", "-CAfile", "root.pem"])
        let identity = SecIdentity(certificate: SecCertificate(world.client.certificate), privateKey: SecKey(world.client.privateKey))
        var socket = try Socket(connectingTo: server.port)
        var context = try Self.client(socket)
        #expect(SSLSetCertificate(context, [identity] as CFArray) == errSecSuccess)
        #expect(Self.handshakeTrusting([SecCertificate(world.root)], context).trusted == true)
        let (_, page) = Self.exchange(context, "GET / HTTP/1.0\r\n\r\n")
        #expect(page.contains("client.example"), "s_server's page names the client certificate: \(page.prefix(300))")
        // Without: refused at the handshake (TLS 1.3: at the first read, as certificate_required).
        socket = try Socket(connectingTo: server.port)
        context = try Self.client(socket)
        let handshake = Self.handshakeTrusting([SecCertificate(world.root)], context).statuses.last
        let refused = handshake != errSecSuccess ? handshake : Self.exchange(context, "GET / HTTP/1.0\r\n\r\n").status
        #expect([errSSLCertificateRequired, errSSLPeerHandshakeFail, errSSLPeerCertUnknown].contains(refused), "\(String(describing: refused))")
        // A certificate array whose first element is not an identity is a parameter error.
        let fresh = try #require(SSLCreateContext(nil, .clientSide, .streamType))
        #expect(SSLSetCertificate(fresh, [SecCertificate(world.root)] as CFArray) == errSecParam)
    }

    @Test("ALPN, version bounds (older versions refused with errSSLIllegalParam), and a peer that is not TLS")
    func alpnVersionsAndGarbage() throws {
        let world = try TLSWorld()
        let server = try world.server(["-alpn", "h2,http/1.1"])
        var socket = try Socket(connectingTo: server.port)
        var context = try Self.client(socket)
        #expect(SSLSetALPNProtocols(context, ["http/1.1"] as CFArray) == errSecSuccess)
        #expect(Self.handshakeTrusting([SecCertificate(world.root)], context).trusted == true)
        var copied: Unmanaged<CFArray>?
        #expect(SSLCopyALPNProtocols(context, &copied) == errSecSuccess)
        let chosen = try #require(copied).takeRetainedValue()
        #expect((chosen as? [String]) == ["http/1.1"] || (chosen.firstObject as? NSString).map { String($0) } == "http/1.1")

        let fresh = try #require(SSLCreateContext(nil, .clientSide, .streamType))
        for old in [SSLProtocol.sslProtocol3, .tlsProtocol1, .tlsProtocol11, .dtlsProtocol1] {
            #expect(SSLSetProtocolVersionMin(fresh, old) == errSSLIllegalParam)
        }
        #expect(SSLCreateContext(nil, .clientSide, .datagramType) == nil)

        let tls12Only = try world.server(["-tls1_2"])
        socket = try Socket(connectingTo: tls12Only.port)
        context = try Self.client(socket)
        #expect(SSLSetProtocolVersionMin(context, .tlsProtocol13) == errSecSuccess)
        let refused = Self.handshakeTrusting([SecCertificate(world.root)], context).statuses.last
        #expect([errSSLNegotiation, errSSLPeerProtocolVersion].contains(refused), "\(String(describing: refused))")

        let garbage = try LoopbackHTTPServer(.answer { _ in .init(body: Data("not tls".utf8)) })
        socket = try Socket(connectingTo: garbage.port)
        context = try Self.client(socket)
        let status = SSLHandshake(context)
        #expect([errSSLProtocol, errSSLClosedAbort].contains(status), "\(status)")
    }

    // MARK: Server

    @Test("the server side: s_client verifies our chain for the name, sends a line, gets ours; with BreakOnClientAuth the client's certificate is evaluated by the application")
    func server() throws {
        let world = try TLSWorld()
        let server = try TLSServerTests.serverIdentity(world)
        let identity = SecIdentity(certificate: SecCertificate(server.certificate), privateKey: SecKey(server.privateKey))

        for clientAuthentication in [false, true] {
            let listener = try Listener()
            let client = try OpenSSLClient(
                port: listener.port, in: world.ca.url, input: "ping\n",
                extra: clientAuthentication ? ["-cert", "client.pem", "-key", "client.key"] : [])
            let accepted = listener.accept()
            #expect(accepted >= 0)
            let connection = Socket(descriptor: accepted)
            let context = try #require(SSLCreateContext(nil, .serverSide, .streamType))
            #expect(SSLSetIOFuncs(context, Self.socketRead, Self.socketWrite) == errSecSuccess)
            #expect(SSLSetConnection(context, connection.connection) == errSecSuccess)
            #expect(SSLSetCertificate(context, [identity] as CFArray) == errSecSuccess)
            if clientAuthentication {
                #expect(SSLSetClientSideAuthenticate(context, .alwaysAuthenticate) == errSecSuccess)
                #expect(SSLSetSessionOption(context, .breakOnClientAuth, true) == errSecSuccess)
            }
            var status = SSLHandshake(context)
            if clientAuthentication {
                #expect(status == errSSLClientAuthCompleted)
                var trust: SecTrust?
                #expect(SSLCopyPeerTrust(context, &trust) == errSecSuccess)
                let peer = try #require(trust)
                #expect(SecTrustSetAnchorCertificates(peer, [SecCertificate(world.root)] as CFArray) == errSecSuccess)
                var result = SecTrustResultType.invalid
                #expect(SecTrustEvaluate(peer, &result) == errSecSuccess && result == .unspecified)
                #expect(SecTrustGetCertificateCount(peer) >= 1)
                status = SSLHandshake(context)
            }
            #expect(status == errSecSuccess)
            var buffer = [UInt8](repeating: 0, count: 64)
            var count = 0
            #expect(buffer.withUnsafeMutableBytes { SSLRead(context, $0.baseAddress!, $0.count, &count) } == errSecSuccess)
            #expect(String(decoding: buffer.prefix(count), as: UTF8.self) == "ping\n")
            var written = 0
            #expect(SSLWrite(context, "pong\n", 5, &written) == errSecSuccess && written == 5)
            #expect(SSLClose(context) == errSecSuccess)
            shutdown(accepted, Int32(SHUT_RDWR))
            let (printed, report) = client.finish()
            withExtendedLifetime(connection) {}
            #expect(printed.contains("pong"), "\(printed) / \(report)")
            #expect(report.contains("Verification: OK"), "\(report)")
        }
    }
}

/// Secure Transport's client identity with its key in hardware: the TPM (swtpm) and a smart card (SoftHSM2).
@Suite("Secure Transport with client keys in hardware (swtpm, SoftHSM2)", .serialized, .hostOnly, .hardwareExclusive)
struct SecureTransportHardwareKeyTests {
    @Test("SSLSetCertificate with an identity whose key is in the TPM, then one whose key is on a card: s_server -Verify accepts both handshakes")
    func hardwareIdentities() throws {
        let world = try TLSWorld()
        let swtpm = try SoftwareTPM()
        let card = try SoftHSMToken()
        try card.tool(["--keypairgen", "--key-type", "EC:prime256v1", "--id", "01", "--label", "st-card", "--usage-sign"])
        let modules = try PKCS11Modules(path: SoftHSMToken.module)
        let label = card.label
        let token = try #require(try modules.tokens().first { $0.label == label })
        let cardKey = try #require(try token.keys(pin: SecretBytes(Array(card.pin.utf8))).first)
        let keys = [
            ("st-tpm", try TPMKey.generate(in: TrustedPlatformModule(configuration: swtpm.configuration)).privateKey()),
            ("st-card", try cardKey.privateKey()),
        ]
        for (name, key) in keys {
            let request = try CertificateSigningRequest(subject: [.init("CN", "\(name).client.example")], privateKey: key)
            try world.ca.issue(
                name, request: request.pemEncoded, issuer: "root",
                extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:\(name).client.example", extendedKeyUsage: "clientAuth"))
            let certificate = try Certificate(pemEncoded: try world.ca.pem(name))
            let server = try world.server(["-Verify", "1", "-CAfile", "root.pem"])
            let socket = try SecureTransportTests.Socket(connectingTo: server.port)
            let context = try SecureTransportTests.client(socket)
            #expect(SSLSetCertificate(context, [SecIdentity(certificate: SecCertificate(certificate), privateKey: SecKey(key))] as CFArray) == errSecSuccess)
            #expect(SecureTransportTests.handshakeTrusting([SecCertificate(world.root)], context).trusted == true, "\(name)")
            let (_, page) = SecureTransportTests.exchange(context, "GET / HTTP/1.0\r\n\r\n")
            #expect(page.contains("\(name).client.example"), "\(name): \(page.prefix(300))")
            withExtendedLifetime(socket) {}
        }
    }
}
