import Foundation
import Security
import TestVectors
import Testing

/// Certificates made once per test process by the `openssl` CLI (`openssl ca` sets exact validity dates), kept as
/// PEM text so `openssl verify` can be asked the same questions as SecTrust.
struct TrustFixtures: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The PEM of each certificate by name.
    let pem: [String: String]

    /// Generated on first use and shared by every test (nil when generation failed: the tests then fail).
    static let shared: Result<TrustFixtures, Failure> = {
        do { return .success(try TrustFixtures()) } catch { return .failure(Failure(description: "\(error)")) }
    }()

    static func get() throws -> TrustFixtures { try shared.get() }

    /// `YYYYMMDDHHMMSSZ` for `openssl ca -startdate/-enddate`.
    static func generalizedTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }

    static let ca = """
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        """

    static func tlsLeaf(_ names: String) -> String {
        """
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid
        extendedKeyUsage = serverAuth
        subjectAltName = \(names)
        """
    }

    init() throws {
        let ca = try OpenSSLCA("sectrust")
        var pem: [String: String] = [:]
        func issue(
            _ name: String, _ commonName: String, by issuer: String?, _ extensions: String,
            from notBefore: String = "20200101000000Z", to notAfter: String = "20400101000000Z"
        ) throws {
            try ca.issue(
                name, subject: "/CN=\(commonName)", issuer: issuer, extensions: extensions, notBefore: notBefore,
                notAfter: notAfter)
            pem[name] = try ca.pem(name)
        }
        let now = Date()
        try issue("root", "SecTrust Test Root", by: nil, Self.ca)
        try issue("inter", "SecTrust Test Intermediate", by: "root", Self.ca + "\nauthorityKeyIdentifier = keyid")
        try issue("leaf", "www.example.com", by: "inter", Self.tlsLeaf("DNS:www.example.com"))
        try issue("leaf2", "www.example.org", by: "inter", Self.tlsLeaf("DNS:www.example.org"))
        try issue(
            "expired", "expired.example.com", by: "inter", Self.tlsLeaf("DNS:expired.example.com"),
            to: "20210101000000Z")
        try issue(
            "expired2", "expired2.example.com", by: "inter", Self.tlsLeaf("DNS:expired2.example.com"),
            to: "20210101000000Z")
        // Expired six months ago, valid for the two years before: the guide's "set a date in the past" case.
        try issue(
            "recent", "recent.example.com", by: "inter", Self.tlsLeaf("DNS:recent.example.com"),
            from: Self.generalizedTime(now.addingTimeInterval(-2 * 365 * 86400)),
            to: Self.generalizedTime(now.addingTimeInterval(-182 * 86400)))
        try issue("oldRoot", "SecTrust Expired Root", by: nil, Self.ca, from: "20150101000000Z", to: "20210101000000Z")
        try issue("underOldRoot", "old.example.com", by: "oldRoot", Self.tlsLeaf("DNS:old.example.com"))
        try issue("otherRoot", "SecTrust Other Root", by: nil, Self.ca)
        // A leaf whose to-be-signed bytes are changed after signing (one letter of its SAN): a bad signature.
        try issue("badsig", "badsig.example.com", by: "inter", Self.tlsLeaf("DNS:badsig.example.com"))
        var der = try Self.der(pem["badsig"]!)  // !: issued just above
        let san = Data("badsig.example.com".utf8)
        let range = try #require(der.range(of: san, options: .backwards))
        der[range.upperBound - 1] = UInt8(ascii: "n")
        pem["badsig"] = Self.pem(der)
        self.pem = pem
    }

    static func der(_ pem: String) throws -> Data {
        let body = pem.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: body) else { throw Failure(description: "not PEM") }
        return der
    }

    static func pem(_ der: Data) -> String {
        let base64 = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n"
    }

    func certificate(_ name: String) throws -> SecCertificate {
        let text = try #require(pem[name], "no fixture \(name)")
        return try #require(SecCertificateCreateWithData(nil, try Self.der(text) as CFData))
    }

    /// `openssl verify` of `leaf` with only `anchors` trusted and `untrusted` as intermediates, at the current
    /// time (or `time`, seconds since 1970), optionally for a TLS server hostname: true when it says OK.
    func opensslVerifies(
        _ leaf: String, anchors: [String], untrusted: [String] = [], hostname: String? = nil, time: Int? = nil
    ) throws -> Bool {
        let directory = try TemporaryDirectory("sectrust-verify")
        func write(_ file: String, _ names: [String]) throws {
            try directory.write(file, names.map { pem[$0] ?? "" }.joined())
        }
        try write("anchors.pem", anchors)
        try write("leaf.pem", [leaf])
        var arguments = ["verify", "-CAfile", "anchors.pem"]
        if !untrusted.isEmpty {
            try write("untrusted.pem", untrusted)
            arguments += ["-untrusted", "untrusted.pem"]
        }
        if let hostname { arguments += ["-purpose", "sslserver", "-verify_hostname", hostname] }
        if let time { arguments += ["-attime", "\(time)"] }
        return try OpenSSLCLI.run(arguments + ["leaf.pem"], in: directory.url).status == 0
    }
}

/// A trust for `names` (leaf first) with `policies`, and only `anchors` trusted (the system's when nil).
func makeTrust(
    _ fixtures: TrustFixtures, _ names: [String], policies: CFTypeRef? = nil, anchors: [String]? = ["root"]
) throws -> SecTrust {
    let certificates = try names.map { try fixtures.certificate($0) }
    var trust: SecTrust?
    #expect(SecTrustCreateWithCertificates(certificates as CFArray, policies, &trust) == errSecSuccess)
    let created = try #require(trust)
    if let anchors {
        let roots = try anchors.map { try fixtures.certificate($0) }
        #expect(SecTrustSetAnchorCertificates(created, roots as CFArray) == errSecSuccess)
    }
    return created
}

/// Evaluates with both calls; returns the result type and the error's code (0 when trusted).
func evaluate(_ trust: SecTrust) -> (SecTrustResultType, Int, String) {
    var error: CFError?
    let trusted = SecTrustEvaluateWithError(trust, &error)
    var result = SecTrustResultType.invalid
    #expect(SecTrustGetTrustResult(trust, &result) == errSecSuccess)
    #expect(trusted == (result == .unspecified || result == .proceed))
    #expect(trusted == (error == nil))
    return (result, error?.code ?? 0, error?.localizedDescription ?? "")
}
