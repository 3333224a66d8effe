import CertificateManager
import Certificates
import Foundation
import Keychain
import Synchronization
import TestVectors
import Testing

/// A PKI by `openssl ca` and a keychain file of its own, both in temporary directories.
final class ManagerWorld {
    let ca: OpenSSLCA
    let keychainDirectory: TemporaryDirectory
    var keychainPath: String { keychainDirectory.path("keychain.db") }

    init() throws {
        ca = try OpenSSLCA("manager-pki")
        keychainDirectory = try TemporaryDirectory("manager-keychain")
    }

    /// A store on the world's keychain file, for a caller in `groups`.
    func keychain(_ groups: [String] = ["com.example.app"]) throws -> KeychainStore {
        try KeychainStore(path: keychainPath, accessGroups: groups)
    }

    /// A self-signed CA `name`.
    @discardableResult
    func root(_ name: String = "root", subject: String = "/O=Manager Tests/CN=Root") throws -> Certificate {
        try ca.issue(name, subject: subject, issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
        return try certificate(name)
    }

    /// A TLS server leaf `name` issued by `issuer`.
    @discardableResult
    func leaf(
        _ name: String, commonName: String = "leaf.example", subjectAltName: String? = "DNS:www.example.com",
        issuer: String = "root", extra: String = "", notAfter: String = "20400101000000Z"
    ) throws -> Certificate {
        try ca.issue(
            name, subject: "/CN=\(commonName)", issuer: issuer,
            extensions: OpenSSLCA.leafExtensions(subjectAltName: subjectAltName, extra: extra), notAfter: notAfter)
        return try certificate(name)
    }

    /// The trimmed standard output of an `openssl` command run in the PKI directory.
    func openssl(_ arguments: [String]) throws -> String {
        try OpenSSLCLI.require(arguments, in: ca.url).text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func certificate(_ name: String) throws -> Certificate { try Certificate(pemEncoded: ca.pem(name)) }

    /// `name.p12`: the leaf, its key and `chain` (PEM names), under `password`; returns the bytes.
    func pkcs12(_ name: String, chain: [String], password: String) throws -> Data {
        var arguments = [
            "pkcs12", "-export", "-inkey", "\(name).key", "-in", "\(name).pem", "-passout", "pass:\(password)", "-out",
            "\(name).p12",
        ]
        for certificate in chain { arguments += ["-certfile", "\(certificate).pem"] }
        try OpenSSLCLI.require(arguments, in: ca.url)
        return try ca.directory.read("\(name).p12")
    }

    /// `openssl verify` of `name.pem` against `anchor` (a file in the PKI directory or an absolute path), with the
    /// extra arguments given: whether it says OK.
    func opensslVerifies(_ name: String, anchor: String, _ extra: [String] = []) throws -> Bool {
        let output = try OpenSSLCLI.run(
            ["verify", "-CAfile", anchor, "-purpose", "sslserver"] + extra + ["\(name).pem"], in: ca.url)
        return output.status == 0
    }
}

/// A clock the test moves.
final class TestClock: Sendable {
    private let now: Mutex<Date>
    init(_ date: Date) { now = Mutex(date) }
    func set(_ date: Date) { now.withLock { $0 = date } }
    var read: @Sendable () -> Date { { self.now.withLock { $0 } } }
}

/// A date from `yyyymmddhhmmssZ`.
func utc(_ text: String) -> Date {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMddHHmmss'Z'"
    // The tests pass literal, well-formed dates.
    return formatter.date(from: text)!
}

/// What an identity enrolled at a test's scepserver must do wherever its key is held.
extension SCEPServer {
    /// `key` signs a message (PKCS#1 v1.5, SHA-256) that `openssl dgst` verifies with `leaf`'s public key.
    func expectSignatureVerifies(_ key: AsymmetricKey, leaf: Certificate, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let message = Data("signed by the enrolled identity".utf8)
        try message.write(to: depot.url.appendingPathComponent("msg"))
        try key.signature(for: message, algorithm: .rsaPKCS1v15(.sha256, hashing: true)).write(to: depot.url.appendingPathComponent("sig"))
        try depot.write("leaf.pem", leaf.pemEncoded)
        try OpenSSLCLI.require(["x509", "-in", depot.path("leaf.pem"), "-pubkey", "-noout", "-out", depot.path("pub.pem")])
        let verified = try OpenSSLCLI.run(["dgst", "-sha256", "-verify", depot.path("pub.pem"), "-signature", depot.path("sig"), depot.path("msg")])
        #expect(verified.text.contains("Verified OK"), "\(verified.stderr)", sourceLocation: sourceLocation)
    }

    /// `manager`'s TLS configuration presents its client identity, `commonName`'s, to an `openssl s_server -Verify`
    /// that trusts this server's CA for clients.
    func expectClientAuthentication(
        _ manager: CertificateManager, commonName: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let world = try TLSConfigurationTests.world()
        let verifying = try OpenSSLServer(
            in: world.ca.url, arguments: ["-cert", "server.pem", "-key", "server.key", "-Verify", "1", "-CAfile", caPath])
        try manager.setCertificates([try world.certificate("root")])
        let (_, page) = try await TLSConfigurationTests.fetch(verifying, try manager.tlsConfiguration(hostname: "www.example.com"))
        #expect(page.contains(commonName), "s_server's page names the client certificate: \(page.prefix(300))", sourceLocation: sourceLocation)
    }
}
