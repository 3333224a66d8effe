import CertificateManager
import Certificates
import Foundation
import TLS
import TestVectors
import Testing

/// The certificate manager as a TLS connection's trust and identity source, against `openssl s_server` on loopback.
@Suite("Certificate manager as a TLS trust and identity source", .serialized, .hostOnly)
struct TLSConfigurationTests {
    /// A root, a server leaf for www.example.com, a client leaf, and an unrelated root.
    static func world() throws -> ManagerWorld {
        let world = try ManagerWorld()
        try world.root()
        try world.root("other", subject: "/O=Manager Tests/CN=Other Root")
        try world.leaf("server", commonName: "www.example.com", subjectAltName: "DNS:www.example.com")
        try world.ca.issue(
            "client", subject: "/CN=client.example", issuer: "root",
            extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:client.example", extendedKeyUsage: "clientAuth"))
        return world
    }

    static func fetch(_ server: OpenSSLServer, _ configuration: TLSConfiguration) async throws -> (TLSConnection, String) {
        let connection = try await TLSConnection.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        try await connection.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
        let page = String(decoding: try await connection.readToEnd().bytes, as: UTF8.self)
        await connection.close()
        return (connection, page)
    }

    @Test("the private trust store admits its server, refuses another root's and a wrong name; the manager's identity satisfies -Verify")
    func trustAndIdentity() async throws {
        let world = try Self.world()
        let server = try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "server.pem", "-key", "server.key"])
        let manager = CertificateManager(keychain: try world.keychain())
        try manager.setCertificates([try world.certificate("root")])
        let (connection, page) = try await Self.fetch(server, try manager.tlsConfiguration(hostname: "www.example.com", port: Int(server.port)))
        #expect(connection.trust?.isTrusted == true && page.hasPrefix("HTTP/1.0 200 ok"))
        #expect(connection.trust?.chain.last == (try world.certificate("root")))

        // The wrong name, and a store that holds only another root: refused with the manager's reasons.
        await #expect(throws: TLSError(.untrusted, "")) {
            _ = try await Self.fetch(server, try manager.tlsConfiguration(hostname: "other.example"))
        }
        _ = try manager.deleteCertStore()
        try manager.setCertificates([try world.certificate("other")])
        do {
            _ = try await Self.fetch(server, try manager.tlsConfiguration(hostname: "www.example.com", port: Int(server.port)))
            Issue.record("a store without the server's root admitted it")
        } catch let error as TLSError {
            #expect(error.code == .untrusted)
            #expect(error.reason.contains("www.example.com:\(server.port)"), "the manager's reason names the peer: \(error.reason)")
        }

        // Mutual authentication with the manager's client identity.
        _ = try manager.deleteCertStore()
        try manager.setCertificates([try world.certificate("root")])
        let verifying = try OpenSSLServer(
            in: world.ca.url, arguments: ["-cert", "server.pem", "-key", "server.key", "-Verify", "1", "-CAfile", "root.pem"])
        await #expect(throws: TLSError.self) {
            let (_, page) = try await Self.fetch(verifying, try manager.tlsConfiguration(hostname: "www.example.com"))
            if page.isEmpty { throw TLSError(.handshakeFailed, "refused at the first read") }
        }
        try manager.setClientIdentity(pkcs12: try world.pkcs12("client", chain: [], password: "pw"), password: "pw")
        let (_, authenticated) = try await Self.fetch(verifying, try manager.tlsConfiguration(hostname: "www.example.com"))
        #expect(authenticated.contains("client.example"), "s_server's page names the client certificate: \(authenticated.prefix(300))")
        #expect(throws: CertificateManagerError.self) {
            _ = try manager.tlsConfiguration(hostname: "a.example", serviceDomain: "example.com")
        }
    }

    /// The manager exists to validate the server's identity: a configuration without a name to check takes a named
    /// opt-out.
    @Test("no name to check is refused unless named: tlsConfiguration() is invalidValidationRequest; checkingChainOnly validates the chain alone")
    func nameRequired() async throws {
        let world = try Self.world()
        let server = try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "server.pem", "-key", "server.key"])
        let manager = CertificateManager(keychain: try world.keychain())
        try manager.setCertificates([try world.certificate("root")])
        let error = #expect(throws: CertificateManagerError.self) { _ = try manager.tlsConfiguration() }
        #expect(error?.code == .invalidValidationRequest && error?.reason.contains("checkingChainOnly") == true)
        // Named: the chain alone, whatever the server's name (it is www.example.com, and nobody asked).
        let (connection, page) = try await Self.fetch(server, try manager.tlsConfiguration(checkingChainOnly: true))
        #expect(connection.trust?.isTrusted == true && page.hasPrefix("HTTP/1.0 200 ok"))
        // The chain is still judged: a store without the server's root refuses it.
        _ = try manager.deleteCertStore()
        try manager.setCertificates([try world.certificate("other")])
        await #expect(throws: TLSError(.untrusted, "")) {
            _ = try await Self.fetch(server, try manager.tlsConfiguration(checkingChainOnly: true))
        }
    }

    /// OCSP stapling under the manager's revocation policy: the leaf's own responder is a port where nothing
    /// listens, so only the response s_server staples (`-status_file`, made by `openssl ocsp` from the CA's
    /// database) can answer.
    @Test("with a mandatory revocation policy, a stapled good answer admits the server, a stapled revoked one refuses it, none is unavailable")
    func stapling() async throws {
        let world = try Self.world()
        let closedPort = try LoopbackHTTPServer(.silent).port
        let responder = "authorityInfoAccess = OCSP;URI:http://127.0.0.1:\(closedPort)/ocsp"
        for name in ["stapled", "stapled-revoked"] {
            try world.leaf(name, commonName: "www.example.com", subjectAltName: "DNS:www.example.com", extra: responder)
        }
        try world.ca.revoke("stapled-revoked", issuer: "root")
        for name in ["stapled", "stapled-revoked"] {
            _ = try world.openssl([
                "ocsp", "-index", "index.txt", "-CA", "root.pem", "-rsigner", "root.pem", "-rkey", "root.key", "-issuer",
                "root.pem", "-cert", "\(name).pem", "-respout", "\(name).ocsp", "-ndays", "1",
            ])
        }
        let manager = CertificateManager(
            keychain: try world.keychain(), configuration: SecurityPolicyConfiguration(revocationCheckPolicy: .mandatory))
        try manager.setCertificates([try world.certificate("root")])
        func server(_ name: String, _ extra: [String]) throws -> OpenSSLServer {
            try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "\(name).pem", "-key", "\(name).key"] + extra)
        }
        for version in ["-tls1_3", "-tls1_2"] {
            let good = try server("stapled", [version, "-status_file", "stapled.ocsp"])
            let (connection, page) = try await Self.fetch(good, try manager.tlsConfiguration(hostname: "www.example.com"))
            #expect(connection.trust?.isTrusted == true && page.hasPrefix("HTTP/1.0 200 ok"), "\(version)")

            let revoked = try server("stapled-revoked", [version, "-status_file", "stapled-revoked.ocsp"])
            do {
                _ = try await Self.fetch(revoked, try manager.tlsConfiguration(hostname: "www.example.com"))
                Issue.record("connected to a server whose stapled answer says revoked (\(version))")
            } catch let error as TLSError {
                #expect(error.code == .untrusted)
                #expect(error.reason.contains("CertificateManagerError.revoked"), "\(error.reason)")
            }
        }
        let plain = try server("stapled", [])
        do {
            _ = try await Self.fetch(plain, try manager.tlsConfiguration(hostname: "www.example.com"))
            Issue.record("connected without any revocation answer under a mandatory policy")
        } catch let error as TLSError {
            #expect(error.reason.contains("CertificateManagerError.revocationUnavailable"), "\(error.reason)")
        }
    }

    /// "Private trust store only": with the store in use, a server that chains to a system anchor is refused; with
    /// the store off (or empty), the system anchors judge. The system anchors are the manager's (a bundle holding
    /// the test root stands in for the distribution's, which no loopback server can chain to).
    @Test("a server trusted by the system anchors is refused while the private store is in use, admitted when it is off")
    func privateStoreOnly() async throws {
        let world = try Self.world()
        let server = try OpenSSLServer(in: world.ca.url, arguments: ["-cert", "server.pem", "-key", "server.key"])
        let system = [try world.certificate("root")]
        let manager = CertificateManager(keychain: try world.keychain(), systemAnchors: system)
        let (admitted, _) = try await Self.fetch(server, try manager.tlsConfiguration(hostname: "www.example.com"))
        #expect(admitted.trust?.chain.last == system[0], "an empty store leaves the system anchors to judge")

        try manager.setCertificates([try world.certificate("other")])
        do {
            _ = try await Self.fetch(server, try manager.tlsConfiguration(hostname: "www.example.com"))
            Issue.record("a system-trusted server was admitted while the private store is in use")
        } catch let error as TLSError {
            #expect(error.code == .untrusted)
            #expect(error.reason.contains("anchored to the private trust store"), "\(error.reason)")
        }
        manager.configuration.privateTrustStoreEnabled = false
        let (again, _) = try await Self.fetch(server, try manager.tlsConfiguration(hostname: "www.example.com"))
        #expect(again.trust?.isTrusted == true, "with the store off, the system anchors judge again")
    }
}
