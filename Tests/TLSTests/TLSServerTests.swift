import Certificates
import Foundation
import TLS
import TestVectors
import Testing
import Trust

/// The Swift API's server side against `openssl s_client` on loopback.
@Suite("TLS server against openssl s_client on loopback", .serialized, .hostOnly)
struct TLSServerTests {
    static func serverIdentity(_ world: TLSWorld) throws -> TLSIdentity {
        try OpenSSLCLI.require(
            ["pkcs12", "-export", "-in", "server.pem", "-inkey", "server.key", "-passout", "pass:pw", "-out", "server.p12"], in: world.ca.url)
        let contents = try #require(try PKCS12.parse(try world.ca.directory.read("server.p12"), passphrase: "pw"))
        return TLSIdentity(certificate: contents.certificate, privateKey: contents.privateKey)
    }

    @Test("s_client verifies our chain for the name in TLS 1.3 and 1.2, exchanges a line; ALPN is chosen from the client's offer")
    func serve() async throws {
        let world = try TLSWorld()
        let identity = try Self.serverIdentity(world)
        for (flag, version) in [("-tls1_3", TLSVersion.tls13), ("-tls1_2", .tls12)] {
            let listener = try Listener()
            let client = try OpenSSLClient(port: listener.port, in: world.ca.url, input: "ping\n", extra: [flag, "-alpn", "h2,http/1.1"])
            let connection = try await TLSConnection.accept(
                socket: listener.accept(), configuration: TLSServerConfiguration(identity: identity, applicationProtocols: ["http/1.1"]))
            #expect(connection.negotiatedVersion == version && connection.applicationProtocol == "http/1.1")
            #expect(connection.trust == nil && connection.peerCertificates.isEmpty, "no client certificate was asked for")
            #expect(try await connection.read() == Array("ping\n".utf8))
            try await connection.write(Array("pong\n".utf8))
            await connection.close()
            let (printed, report) = client.finish()
            #expect(printed.contains("pong") && report.contains("Verification: OK"), "\(printed) / \(report)")
        }
    }

    @Test("client certificates: required and trusted is admitted and evaluated; from another root refused; missing refused")
    func clientCertificates() async throws {
        let world = try TLSWorld()
        let identity = try Self.serverIdentity(world)
        let required = TLSServerConfiguration(identity: identity, clientAuthentication: .require, clientAnchors: [world.root])

        var listener = try Listener()
        var client = try OpenSSLClient(port: listener.port, in: world.ca.url, input: "ping\n", extra: ["-cert", "client.pem", "-key", "client.key"])
        let connection = try await TLSConnection.accept(socket: listener.accept(), configuration: required)
        #expect(connection.trust?.isTrusted == true && connection.peerCertificates.first?.subjectSummary == "client.example")
        #expect(try await connection.read() == Array("ping\n".utf8))
        await connection.close()
        _ = client.finish()

        let otherRoot = TLSServerConfiguration(identity: identity, clientAuthentication: .require, clientAnchors: [world.otherRoot])
        listener = try Listener()
        client = try OpenSSLClient(port: listener.port, in: world.ca.url, input: "ping\n", extra: ["-cert", "client.pem", "-key", "client.key"])
        do {
            _ = try await TLSConnection.accept(socket: listener.accept(), configuration: otherRoot)
            Issue.record("a client certificate from another root was admitted")
        } catch let error as TLSError {
            #expect(error.code == .untrusted && error.trust?.isTrusted == false, "\(error)")
        }
        _ = client.finish()

        listener = try Listener()
        client = try OpenSSLClient(port: listener.port, in: world.ca.url, input: "ping\n")
        await #expect(throws: TLSError(.handshakeFailed, "")) {
            _ = try await TLSConnection.accept(socket: listener.accept(), configuration: required)
        }
        _ = client.finish()
    }
}
