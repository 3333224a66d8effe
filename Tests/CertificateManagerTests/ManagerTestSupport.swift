import CertificateManager
import Certificates
import Foundation
import Keychain
import Synchronization
import TestVectors

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
