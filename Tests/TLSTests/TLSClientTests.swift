import Certificates
import Foundation
import HardwareKeys
import Dispatch
import Synchronization
import NetworkFetch
import TLS
import TestVectors
import Testing
import Trust
import SecurityBase

/// A root, a server leaf for tls.example (serverAuth) and a client leaf (clientAuth), by `openssl ca`.
final class TLSWorld: @unchecked Sendable {
    // @unchecked: set in init, read after.
    let ca: OpenSSLCA
    let root: Certificate
    let otherRoot: Certificate
    let client: TLSIdentity

    init() throws {
        ca = try OpenSSLCA("tls")
        try ca.issue("root", subject: "/O=TLS Tests/CN=Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
        try ca.issue("other", subject: "/O=TLS Tests/CN=Other Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
        try ca.issue(
            "server", subject: "/CN=tls.example", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tls.example"))
        try ca.issue(
            "client", subject: "/CN=client.example", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:client.example", extendedKeyUsage: "clientAuth"))
        let directory = ca.directory
        func certificate(_ name: String) throws -> Certificate {
            try Certificate(pemEncoded: String(decoding: try directory.read("\(name).pem"), as: UTF8.self))
        }
        root = try certificate("root")
        otherRoot = try certificate("other")
        try OpenSSLCLI.require(
            ["pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-passout", "pass:pw", "-out", "client.p12"],
            in: ca.url)
        let contents = try #require(try PKCS12.parse(try ca.directory.read("client.p12"), passphrase: "pw"))
        client = TLSIdentity(certificate: contents.certificate, privateKey: contents.privateKey)
    }

    func server(_ extra: [String] = []) throws -> OpenSSLServer {
        try OpenSSLServer(in: ca.url, arguments: ["-cert", "server.pem", "-key", "server.key"] + extra)
    }

    /// Connects, asks for the status page, and returns it with the connection.
    /// - Parameter host: an address literal (connected and handshaken on the calling thread while nothing waits
    ///   long) or a name (resolved, connected and handshaken on a Dispatch thread).
    func fetch(_ server: OpenSSLServer, _ configuration: TLSConfiguration, host: String = "127.0.0.1") async throws -> (TLSConnection, String) {
        let connection = try await TLSConnection.connect(host: host, port: server.port, configuration: configuration)
        try await connection.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
        let page = String(decoding: try await connection.readToEnd().bytes, as: UTF8.self)
        await connection.close()
        return (connection, page)
    }
}

@Suite("TLS client against openssl s_server on loopback, trust by the project's evaluator", .serialized, .hostOnly)
struct TLSClientTests {
    @Test("TLS 1.3 and 1.2: the handshake completes, the chain is evaluated for the name, the page arrives whole")
    func versions() async throws {
        let world = try TLSWorld()
        for (flag, expected) in [("-tls1_3", TLSVersion.tls13), ("-tls1_2", .tls12)] {
            let server = try world.server([flag])
            let (connection, page) = try await world.fetch(server, TLSConfiguration(anchors: [world.root], serverName: "tls.example"))
            #expect(connection.negotiatedVersion == expected)
            #expect(connection.trust?.isTrusted == true && connection.trust?.chain.last == world.root)
            #expect(connection.peerCertificates.first?.subjectSummary == "tls.example")
            #expect(page.hasPrefix("HTTP/1.0 200 ok"), "\(page.prefix(80))")
            #expect(page.contains(expected == .tls13 ? "TLSv1.3" : "TLSv1.2"))
            // By name: the resolver's path, the whole opening on a Dispatch thread.
            let (byName, named) = try await world.fetch(server, TLSConfiguration(anchors: [world.root], serverName: "tls.example"), host: "localhost")
            #expect(byName.negotiatedVersion == expected && byName.trust?.isTrusted == true && named.hasPrefix("HTTP/1.0 200 ok"))
        }
    }

    @Test("a wrong name, another root, and no anchor at all: .untrusted with the evaluation's reason, nothing exchanged")
    func untrusted() async throws {
        let world = try TLSWorld()
        let server = try world.server()
        let cases: [(TLSConfiguration, TrustFailureReason)] = [
            (TLSConfiguration(anchors: [world.root], serverName: "other.example"), .hostnameMismatch),
            (TLSConfiguration(anchors: [world.otherRoot], serverName: "tls.example"), .missingIssuer),
            (TLSConfiguration(anchors: [], serverName: "tls.example"), .missingIssuer),
        ]
        for (configuration, reason) in cases {
            do {
                _ = try await world.fetch(server, configuration)
                Issue.record("connected with \(configuration.anchors.count) anchors to \(configuration.serverName ?? "")")
            } catch let error as TLSError {
                #expect(error.code == .untrusted, "\(error)")
                #expect(error.trust?.statuses.contains { $0.reasons.contains(reason) } == true, "\(String(describing: error.trust))")
                // The message names the certificate and the reason, as verify-cert does.
                #expect(error.reason.contains("tls.example: ") && error.reason.contains("\(reason)"), "\(error.reason)")
            }
        }
    }

    /// A user's distrust counts for TLS as for `verify-cert`, a judgement kept from before it included.
    @Test("the user's trust settings: a denied root refuses the server, kept judgement or not; a root they trust is an anchor beside the system's only")
    func trustSettings() async throws {
        let world = try TLSWorld()
        let server = try world.server()
        let directory = try TemporaryDirectory("tls-trust-settings")
        let domains = TrustSettingsDomains(directory: directory.url.path)
        let configuration = TLSConfiguration(anchors: [world.root], serverName: "tls.example", trustSettings: domains)
        // Trusted first, so that a judgement is kept for this chain, name and anchors.
        #expect(try await world.fetch(server, configuration).0.trust?.isTrusted == true)
        try domains.user.set(TrustSettings([try .init(policy: .ssl, result: .deny)]), for: world.root)
        do {
            _ = try await world.fetch(server, configuration)
            Issue.record("connected to a server whose root the user distrusts")
        } catch let error as TLSError {
            #expect(error.code == .untrusted, "\(error)")
            #expect(error.trust?.outcome == .denied && error.trust?.statuses.last?.reasons.contains(.denied) == true, "\(error)")
        }
        // The configuration's own choice: without settings, the application's anchors alone decide.
        var without = configuration
        without.trustSettings = nil
        #expect(try await world.fetch(server, without).0.trust?.isTrusted == true)
        _ = try domains.user.remove(for: world.root)
        #expect(try await world.fetch(server, configuration).0.trust?.isTrusted == true)

        // A root the user trusts is an anchor beside the system's, not beside an application's own anchors.
        try domains.user.set(TrustSettings(), for: world.root)
        let system = TLSConfiguration(serverName: "tls.example", trustSettings: domains)
        let trusted = try await world.fetch(server, system).0
        #expect(trusted.trust?.isTrusted == true && trusted.trust?.outcome == .proceed)
        do {
            _ = try await world.fetch(server, TLSConfiguration(anchors: [world.otherRoot], serverName: "tls.example", trustSettings: domains))
            Issue.record("the user's anchor counted beside the application's own")
        } catch let error as TLSError {
            #expect(error.code == .untrusted, "\(error)")
        }
        // The domains in effect where the configuration is made are the default.
        TrustSettingsDomains.withDomains(domains) {
            #expect(TLSConfiguration(serverName: "tls.example").trustSettings?.user.path == domains.user.path)
        }
    }

    /// A client that checks no name accepts every server its anchors vouch for: that takes a named opt-out.
    @Test("no server name is refused before connecting unless checksChainOnly names the opt-out; then the chain alone is judged")
    func serverNameRequired() async throws {
        let world = try TLSWorld()
        let server = try world.server()
        do {
            _ = try await world.fetch(server, TLSConfiguration(anchors: [world.root], serverName: nil))
            Issue.record("connected without a name to check")
        } catch let error as TLSError {
            #expect(error.code == .invalidConfiguration && error.reason.contains("checksChainOnly"), "\(error)")
        }
        var chainOnly = TLSConfiguration(anchors: [world.root], serverName: nil)
        chainOnly.checksChainOnly = true
        let (connection, page) = try await world.fetch(server, chainOnly)
        #expect(connection.trust?.isTrusted == true && page.hasPrefix("HTTP/1.0 200 ok"))
        chainOnly.anchors = [world.otherRoot]
        await #expect(throws: TLSError(.untrusted, "")) { _ = try await world.fetch(server, chainOnly) }
        // With a name, the opt-out does not lift its check.
        var named = TLSConfiguration(anchors: [world.root], serverName: "other.example")
        named.checksChainOnly = true
        await #expect(throws: TLSError(.untrusted, "")) { _ = try await world.fetch(server, named) }
    }

    @Test("readToEnd: a page closed with close_notify is complete; a stream cut without it returns what arrived and says it was cut")
    func readToEndReportsTheEnd() async throws {
        let world = try TLSWorld()
        let configuration = TLSConfiguration(anchors: [world.root], serverName: "tls.example")
        let server = try world.server()
        let page = try await TLSConnection.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        try await page.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
        let whole = try await page.readToEnd()
        #expect(whole.isComplete && String(decoding: whole.bytes, as: UTF8.self).contains("HTTP/1.0 200"), "\(whole.end)")
        // A limit ends the read there, the rest left for the next read (s_server serves one connection at a time).
        await page.close()
        let limited = try await TLSConnection.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        try await limited.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
        let head = try await limited.readToEnd(limit: 10)
        #expect(String(decoding: head.bytes, as: UTF8.self) == "HTTP/1.0 2")
        guard case .limit = head.end else {
            Issue.record("a read stopped at its limit ended \(head.end)")
            return
        }
        let tail = try await limited.readToEnd()
        #expect(tail.isComplete && String(decoding: head.bytes + tail.bytes, as: UTF8.self).hasPrefix("HTTP/1.0 200"))

        let echo = try OpenSSLEchoServer(in: world.ca.url, arguments: ["-cert", "server.pem", "-key", "server.key"])
        let connection = try await TLSConnection.connect(host: "127.0.0.1", port: echo.port, configuration: configuration)
        // A read with nothing to read waits without a thread, and its task's cancellation ends it.
        let pending = Task { try await connection.read() }
        try await Task.sleep(for: .milliseconds(200))
        pending.cancel()
        await #expect(throws: CancellationError.self) { _ = try await pending.value }
        try echo.send("the first half of an answer\n")
        // The bytes are in the client's socket before the server dies.
        let first = try await connection.read()
        try echo.send("and more\n")
        usleep(300_000)
        echo.kill()
        let rest = try await connection.readToEnd()
        #expect(String(decoding: first + rest.bytes, as: UTF8.self) == "the first half of an answer\nand more\n")
        guard case .cut(let error) = rest.end else {
            Issue.record("a stream killed without close_notify ended \(rest.end)")
            return
        }
        #expect(!rest.isComplete && error.code == .protocolError, "\(error)")
    }

    @Test("mutual authentication: s_server -Verify accepts the keychain-style identity; without one the handshake fails")
    func clientIdentity() async throws {
        let world = try TLSWorld()
        let server = try world.server(["-Verify", "1", "-CAfile", "root.pem"])
        var configuration = TLSConfiguration(anchors: [world.root], serverName: "tls.example", identity: world.client)
        let (_, page) = try await world.fetch(server, configuration)
        #expect(page.contains("client.example"), "s_server's page names the client certificate: \(page.prefix(200))")
        configuration.identity = nil
        do {
            let (_, page) = try await world.fetch(server, configuration)
            // TLS 1.3 reports the server's refusal at the first read at the latest.
            Issue.record("served without a client certificate: \(page.prefix(100))")
        } catch let error as TLSError {
            // The server's alert by name: TLS 1.3's certificate_required.
            #expect(error.code == .handshakeFailed && error.reason.contains("certificate_required (116)"), "\(error)")
        }
    }

    @Test("mutual authentication with a private key held elsewhere (the keychain service's kind): its holder signs the handshake, TLS 1.3 and 1.2")
    func heldClientKey() async throws {
        let world = try TLSWorld()
        let holder = CountingKeyHolder(world.client.privateKey)
        let held = try AsymmetricKey(publicKey: try world.client.privateKey.publicKey(), heldBy: holder)
        for version in ["-tls1_3", "-tls1_2"] {
            let server = try world.server(["-Verify", "1", "-CAfile", "root.pem", version])
            let configuration = TLSConfiguration(
                anchors: [world.root], serverName: "tls.example", identity: TLSIdentity(certificate: world.client.certificate, privateKey: held))
            let before = holder.calls
            let (_, page) = try await world.fetch(server, configuration)
            #expect(page.contains("client.example"), "\(version): \(page.prefix(200))")
            #expect(holder.calls == before + 1, "\(version): the holder signed the CertificateVerify")
        }
    }

    @Test("mutual authentication with a key in a TPM (swtpm): the request is signed there, then the handshake's CertificateVerify, TLS 1.3 and 1.2")
    func tpmClientKey() async throws {
        let world = try TLSWorld()
        let swtpm = try SoftwareTPM()
        let key = try TPMKey.generate(in: TrustedPlatformModule(configuration: swtpm.configuration))
        let request = try CertificateSigningRequest(subject: [.init("CN", "tpm.client.example")], privateKey: try key.privateKey())
        try world.ca.issue(
            "tpm-client", request: request.pemEncoded, issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tpm.client.example", extendedKeyUsage: "clientAuth"))
        let certificate = try Certificate(pemEncoded: try world.ca.pem("tpm-client"))
        #expect(try certificate.publicKey().externalRepresentation() == key.publicKey.externalRepresentation())
        for version in ["-tls1_3", "-tls1_2"] {
            let server = try world.server(["-Verify", "1", "-CAfile", "root.pem", version])
            let configuration = TLSConfiguration(
                anchors: [world.root], serverName: "tls.example", identity: TLSIdentity(certificate: certificate, privateKey: try key.privateKey()))
            let (_, page) = try await world.fetch(server, configuration)
            #expect(page.contains("tpm.client.example"), "\(version): \(page.prefix(200))")
        }
    }

    @Test("ALPN: the server's choice comes back; versions the server refuses are a handshake failure")
    func alpnAndVersions() async throws {
        let world = try TLSWorld()
        let server = try world.server(["-alpn", "h2,http/1.1"])
        let (connection, _) = try await world.fetch(
            server, TLSConfiguration(anchors: [world.root], serverName: "tls.example", applicationProtocols: ["http/1.1"]))
        #expect(connection.applicationProtocol == "http/1.1")
        let tls13Only = try world.server(["-tls1_3"])
        await #expect(throws: TLSError(.handshakeFailed, "")) {
            _ = try await world.fetch(
                tls13Only, TLSConfiguration(anchors: [world.root], serverName: "tls.example", maximumVersion: .tls12))
        }
        await #expect(throws: TLSError(.invalidConfiguration, "")) {
            _ = try await world.fetch(
                tls13Only, TLSConfiguration(anchors: [world.root], serverName: "tls.example", minimumVersion: .tls13, maximumVersion: .tls12))
        }
    }

    @Test("an expired server certificate and one its CA's CRL revokes (fetched from the distribution point) are refused with the reason")
    func expiredAndRevokedByCRL() async throws {
        let world = try TLSWorld()
        try world.ca.issue(
            "expired", subject: "/CN=tls.example", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tls.example"), notAfter: "20210101000000Z")
        let expired = try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "expired.pem", "-key", "expired.key"])
        do {
            _ = try await world.fetch(expired, TLSConfiguration(anchors: [world.root], serverName: "tls.example"))
            Issue.record("an expired server certificate was admitted")
        } catch let error as TLSError {
            #expect(error.code == .untrusted && error.trust?.statuses.first?.reasons.contains(.expired) == true, "\(error)")
            #expect(error.reason.hasSuffix("not trusted: tls.example: expired"), "\(error.reason)")
        }

        let distribution = try world.ca.responder()
        try world.ca.issue(
            "listed", subject: "/CN=tls.example", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tls.example", extra: "crlDistributionPoints = URI:\(distribution.url("/root.crl"))"))
        try world.ca.revoke("listed", issuer: "root")
        try world.ca.generateCRL("root")
        let listed = try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "listed.pem", "-key", "listed.key"])
        do {
            _ = try await world.fetch(
                listed, TLSConfiguration(anchors: [world.root], serverName: "tls.example", revocation: RevocationPolicy(methods: .crl)))
            Issue.record("a server certificate its CA's CRL revokes was admitted")
        } catch let error as TLSError {
            #expect(error.code == .untrusted && error.trust?.statuses.first?.reasons.contains(.revoked) == true, "\(error)")
        }
        // Without revocation checking the same server is admitted: the refusal above is the CRL's.
        let (connection, _) = try await world.fetch(listed, TLSConfiguration(anchors: [world.root], serverName: "tls.example"))
        #expect(connection.trust?.isTrusted == true)
    }

    /// A server (our own server role) that completes the handshake, then writes a record header announcing more
    /// than it sends, raw on the socket, and closes.
    @Test("a peer that closes mid-record: .protocolError, never a short answer")
    func closedMidRecord() async throws {
        let world = try TLSWorld()
        let identity = try TLSServerTests.serverIdentity(world)
        let listener = try Listener()
        let port = listener.port
        let client = Task {
            try await TLSConnection.connect(
                host: "127.0.0.1", port: port, configuration: TLSConfiguration(anchors: [world.root], serverName: "tls.example"))
        }
        let accepted = listener.accept()
        let server = try await TLSConnection.accept(socket: accepted, configuration: TLSServerConfiguration(identity: identity))
        let connection = try await client.value
        // An application-data record header (type 23, TLS 1.2 legacy version) for 100 bytes, then 10 of them.
        let partial: [UInt8] = [23, 3, 3, 0, 100] + [UInt8](repeating: 0xAB, count: 10)
        #expect(partial.withUnsafeBytes { send(accepted, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == partial.count)
        shutdown(accepted, Int32(SHUT_RDWR))
        await #expect(throws: TLSError(.protocolError, "")) { _ = try await connection.read() }
        withExtendedLifetime(server) {}
    }

    /// s_server's page says whether the session was new or reused: the independent truth of a resumption.
    @Test("session resumption: the next connection resumes (s_server: Reused), TLS 1.3 and 1.2; the resumed chain is judged under the connecting configuration")
    func resumption() async throws {
        let world = try TLSWorld()
        for (flag, version) in [("-tls1_3", "TLSv1.3"), ("-tls1_2", "TLSv1.2")] {
            let server = try world.server([flag])
            let cache = TLSSessionCache()
            var configuration = TLSConfiguration(anchors: [world.root], serverName: "tls.example", sessionCache: cache)
            let (first, firstPage) = try await world.fetch(server, configuration)
            #expect(!first.sessionReused && firstPage.contains("New, \(version)"), "\(firstPage.prefix(300))")
            #expect(cache.count > 0, "the server's session was kept")
            let (second, secondPage) = try await world.fetch(server, configuration)
            #expect(second.sessionReused && secondPage.contains("Reused, \(version)"), "\(secondPage.prefix(300))")
            #expect(second.trust?.isTrusted == true && second.peerCertificates.first?.subjectSummary == "tls.example")
            // Without the cache: a full handshake again.
            let (third, thirdPage) = try await world.fetch(server, TLSConfiguration(anchors: [world.root], serverName: "tls.example"))
            #expect(!third.sessionReused && thirdPage.contains("New, \(version)"))
            // A revocation policy judges a resumed session's chain too (libssl asks for the status on resumption
            // as well): an offline hard-fail policy refuses the resumed server, which staples nothing.
            var revoking = configuration
            revoking.revocation = RevocationPolicy(methods: .ocsp, requirePositiveResponse: true, networkAccessAllowed: false)
            if cache.count > 0 {
                await #expect(throws: TLSError.self, "a resumed session escaped the revocation policy (\(version))") {
                    _ = try await world.fetch(server, revoking)
                }
            }
            // Other anchors: a kept session does not carry the old decision over.
            configuration.anchors = [world.otherRoot]
            let resumable = cache.count > 0
            do {
                _ = try await world.fetch(server, configuration)
                Issue.record("connected under anchors that do not hold the server's root (\(version))")
            } catch let error as TLSError {
                #expect(error.code == .untrusted)
                if resumable { #expect(error.reason.contains("resumed"), "\(error)") }
            }
        }
    }

    /// OCSP stapling (RFC 6066): the client asks for the status, s_server -status_file staples a response made by
    /// `openssl ocsp` from the CA's database, and the revocation check uses it before any network fetch (here there
    /// is none: the policy is offline and requires a positive answer).
    @Test("OCSP stapling: a stapled good answer admits the server offline, a stapled revoked one refuses it, none fails a hard-fail policy")
    func stapling() async throws {
        let world = try TLSWorld()
        try world.ca.issue(
            "revoked-server", subject: "/CN=tls.example", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:tls.example"))
        try world.ca.revoke("revoked-server", issuer: "root")
        for name in ["server", "revoked-server"] {
            try OpenSSLCLI.require(
                [
                    "ocsp", "-index", "index.txt", "-CA", "root.pem", "-rsigner", "root.pem", "-rkey", "root.key", "-issuer",
                    "root.pem", "-cert", "\(name).pem", "-respout", "\(name).ocsp", "-ndays", "1",
                ], in: world.ca.url)
        }
        let offline = RevocationPolicy(methods: .ocsp, requirePositiveResponse: true, networkAccessAllowed: false)
        let configuration = TLSConfiguration(anchors: [world.root], serverName: "tls.example", revocation: offline)
        for version in ["-tls1_3", "-tls1_2"] {
            let good = try world.server([version, "-status_file", "server.ocsp"])
            let (connection, page) = try await world.fetch(good, configuration)
            #expect(connection.trust?.isTrusted == true && page.hasPrefix("HTTP/1.0 200 ok"), "\(version)")

            let revoked = try OpenSSLServer(
                in: world.ca.url,
                arguments: ["-cert", "revoked-server.pem", "-key", "revoked-server.key", version, "-status_file", "revoked-server.ocsp"])
            do {
                _ = try await world.fetch(revoked, configuration)
                Issue.record("connected to a server whose stapled answer says revoked (\(version))")
            } catch let error as TLSError {
                #expect(error.code == .untrusted)
                #expect(error.trust?.statuses.first?.reasons.contains(.revoked) == true, "\(String(describing: error.trust))")
            }
        }
        // No staple, no network, a positive answer required: refused as unavailable.
        let plain = try world.server()
        do {
            _ = try await world.fetch(plain, configuration)
            Issue.record("connected without any revocation answer under a hard-fail policy")
        } catch let error as TLSError {
            #expect(error.code == .untrusted)
            #expect(error.trust?.statuses.first?.reasons.contains(.revocationUnavailable) == true)
        }
        // Without a revocation policy nothing is asked for, and the plain server is fine.
        let (connection, _) = try await world.fetch(plain, TLSConfiguration(anchors: [world.root], serverName: "tls.example"))
        #expect(connection.trust?.isTrusted == true)
    }

    /// The timeout bounds resolution, connection and handshake together: a resolver that never answers, or one that
    /// answers late, must not stretch the opening past it.
    @Test("one deadline for resolution, connection and handshake: a resolver that never answers; one that answers late, before a silent server")
    func oneDeadline() async throws {
        // Never answers: .timeout naming the resolution; its thread is abandoned (and let go at the end).
        let release = DispatchSemaphore(value: 0)
        defer { release.signal(); release.signal() }
        let hangingResolver: SocketFetcher.Resolver = { _, _ in
            release.wait()
            return .failure(FetchError(.unresolved))
        }
        var hanging = TLSConfiguration(serverName: "hang.example", timeout: .milliseconds(500))
        hanging.resolver = hangingResolver
        do {
            _ = try await TLSConnection.connect(host: "hang.example", port: 443, configuration: hanging)
            Issue.record("connected through a resolver that never answers")
        } catch let error as TLSError {
            #expect(error.code == .timeout && error.reason.contains("did not resolve"), "\(error)")
        }
        do {
            _ = try await TLSConnection.presentedCertificates(
                host: "hang.example", port: 443, serverName: nil, timeout: .milliseconds(500), resolver: hangingResolver)
            Issue.record("verify-cert's path connected through a resolver that never answers")
        } catch let error as TLSError {
            #expect(error.code == .timeout && error.reason.contains("did not resolve"), "\(error)")
        }

        // Answers after 1.5 s of a 2 s timeout, with a server that accepts and never says a word: the client gives up
        // at the one deadline, about 2 s after the resolver was asked (with a timeout per phase, 3.5 s). Both instants
        // are taken on threads of their own (the resolver's, the server's seeing the client close), not on the
        // cooperative pool, which a busy suite can hold.
        final class Instants: Sendable {
            let asked = Mutex<ContinuousClock.Instant?>(nil)
            let closed = Mutex<ContinuousClock.Instant?>(nil)
        }
        let instants = Instants()
        // A server that accepts one connection, reads whatever comes and never answers, noting when the client closes.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(listener, $0, length) == 0, listen(listener, 1) == 0, getsockname(listener, $0, &length) == 0 else {
                    throw POSIXError(.EADDRINUSE)
                }
            }
        }
        defer { close(listener) }
        let port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(connection, &buffer, buffer.count) > 0 {}
            instants.closed.withLock { $0 = .now }
            close(connection)
        }
        var late = TLSConfiguration(serverName: "late.example", timeout: .seconds(2))
        late.resolver = { _, port in
            instants.asked.withLock { $0 = .now }
            Thread.sleep(forTimeInterval: 1.5)
            return .success([SocketAddress(numeric: "127.0.0.1", port: port)!])  // !: a literal
        }
        await #expect(throws: TLSError(.timeout, "")) {
            _ = try await TLSConnection.connect(host: "late.example", port: port, configuration: late)
        }
        let deadline = Date().addingTimeInterval(10)
        while instants.closed.withLock({ $0 }) == nil, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let asked = try #require(instants.asked.withLock { $0 })
        let closed = try #require(instants.closed.withLock { $0 }, "the client never closed its connection")
        #expect(closed - asked >= .milliseconds(1_900) && closed - asked < .milliseconds(2_900), "\(closed - asked)")
    }

    @Test("a peer that is not TLS, a closed port and a silent peer: typed errors within the timeout")
    func badPeers() async throws {
        let garbage = try LoopbackHTTPServer(.answer { _ in .init(body: Data("not tls".utf8)) })
        await #expect(throws: TLSError(.handshakeFailed, "")) {
            _ = try await TLSConnection.connect(host: "127.0.0.1", port: garbage.port, configuration: TLSConfiguration(serverName: "x"))
        }
        let closedPort = try LoopbackHTTPServer(.silent).port
        await #expect(throws: TLSError(.unreachable, "")) {
            _ = try await TLSConnection.connect(host: "127.0.0.1", port: closedPort, configuration: TLSConfiguration(serverName: "x"))
        }
        let silent = try LoopbackHTTPServer(.silent)
        let clock = ContinuousClock()
        // An address literal and a name (resolved first) time out alike.
        for host in ["127.0.0.1", "localhost"] {
            await #expect(throws: TLSError(.unreachable, "")) {
                _ = try await TLSConnection.connect(host: host, port: closedPort, configuration: TLSConfiguration(serverName: "x"))
            }
            let elapsed = await clock.measure {
                await #expect(throws: TLSError(.timeout, "")) {
                    _ = try await TLSConnection.connect(
                        host: host, port: silent.port, configuration: TLSConfiguration(serverName: "x", timeout: .milliseconds(500)))
                }
            }
            // Not before the timeout; the upper bound only proves the timeout ended it (the peer stays silent), with
            // room for this task to wait on a cooperative pool the full suite's synchronous tests hold (33 s seen).
            #expect(elapsed >= .milliseconds(500) && elapsed < .seconds(90), "\(host): \(elapsed)")
        }
        // Cancelled while it waits for the silent peer, the handshake ends at once, not at its timeout.
        let port = silent.port
        let (outcome, afterCancel) = try await cancelling(after: .milliseconds(300)) {
            try await TLSConnection.connect(host: "127.0.0.1", port: port, configuration: TLSConfiguration(serverName: "x", timeout: .seconds(60)))
        }
        // The 60 s timeout would have ended it as TLSError.timeout, not CancellationError.
        #expect(throws: CancellationError.self) { _ = try outcome.get() }
        #expect(afterCancel < .seconds(50))
        // Held to here: released earlier, the silent server would close its connections, an EOF, not a timeout.
        withExtendedLifetime(silent) {}
    }
}

/// Client authentication with a key on a PKCS#11 token (SoftHSM2): the token signs the request and the handshake.
@Suite("TLS client authentication with a smart-card key (SoftHSM2)", .serialized, .hostOnly, .hardwareExclusive)
struct TLSSmartCardTests {
    @Test("an EC key and an RSA key made by pkcs11-tool: the request is signed on the token, then s_server -Verify accepts the handshake, TLS 1.3 and 1.2")
    func tokenClientKey() async throws {
        let world = try TLSWorld()
        let token = try SoftHSMToken()
        try token.tool(["--keypairgen", "--key-type", "EC:prime256v1", "--id", "01", "--label", "tls-ec", "--usage-sign"])
        try token.tool(["--keypairgen", "--key-type", "rsa:2048", "--id", "02", "--label", "tls-rsa", "--usage-sign", "--usage-decrypt"])
        let modules = try PKCS11Modules(path: SoftHSMToken.module)
        let label = token.label
        let found = try #require(try modules.tokens().first { $0.label == label })
        let keys = try found.keys(pin: SecretBytes(Array(token.pin.utf8)))
        #expect(keys.map(\.label) == ["tls-ec", "tls-rsa"])
        for key in keys {
            let name = "\(key.label).client.example"
            let request = try CertificateSigningRequest(subject: [.init("CN", name)], privateKey: try key.privateKey())
            try world.ca.issue(
                key.label, request: request.pemEncoded, issuer: "root",
                extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:\(name)", extendedKeyUsage: "clientAuth"))
            let certificate = try Certificate(pemEncoded: try world.ca.pem(key.label))
            for version in ["-tls1_3", "-tls1_2"] {
                let server = try world.server(["-Verify", "1", "-CAfile", "root.pem", version])
                let configuration = TLSConfiguration(
                    anchors: [world.root], serverName: "tls.example", identity: TLSIdentity(certificate: certificate, privateKey: try key.privateKey()))
                let (_, page) = try await world.fetch(server, configuration)
                #expect(page.contains(name), "\(key.label) \(version): \(page.prefix(200))")
            }
        }
    }
}
