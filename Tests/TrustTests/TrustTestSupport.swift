import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// A small PKI made at test time by `openssl ca`, which sets exact validity dates (`-startdate`/`-enddate`).
final class TestPKI {
    let directory: TemporaryDirectory
    var url: URL { directory.url }

    init() throws {
        directory = try TemporaryDirectory("trust-pki")
        try directory.write(
            "ca.cnf",
            """
            [ ca ]
            default_ca = test_ca
            [ test_ca ]
            database = index.txt
            serial = serial.txt
            new_certs_dir = .
            default_md = sha256
            policy = any_name
            unique_subject = no
            email_in_dn = no
            [ any_name ]
            commonName = optional

            """)
        try directory.write("index.txt", "")
        try directory.write("serial.txt", "1000\n")
    }

    /// A CA's extensions: critical basic constraints (with a path length when given), critical keyCertSign and
    /// cRLSign, key identifiers, and any extra lines (name constraints, EKU).
    static func caExtensions(pathLength: Int? = nil, selfSigned: Bool = false, extra: String = "") -> String {
        """
        basicConstraints = critical, CA:TRUE\(pathLength.map { ", pathlen:\($0)" } ?? "")
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        \(selfSigned ? "" : "authorityKeyIdentifier = keyid")
        \(extra)
        """
    }

    /// A TLS leaf's extensions: not a CA, digitalSignature, the EKU given, and the SAN given (none when nil).
    static func leafExtensions(
        subjectAltName: String? = "DNS:www.example.com", extendedKeyUsage: String? = "serverAuth",
        selfSigned: Bool = false
    ) -> String {
        """
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature
        subjectKeyIdentifier = hash
        \(selfSigned ? "" : "authorityKeyIdentifier = keyid")
        \(extendedKeyUsage.map { "extendedKeyUsage = \($0)" } ?? "")
        \(subjectAltName.map { "subjectAltName = \($0)" } ?? "")
        """
    }

    /// Issues `name.pem` for `subject` (an `openssl req -subj` name) with the key `key.key` (made when missing,
    /// EC P-256), signed by `issuer` (`issuer.pem`, with the key `issuerKey.key`, by default `issuer.key`) or
    /// self-signed when nil.
    @discardableResult
    func issue(
        _ name: String, subject: String, issuer: String?, issuerKey: String? = nil, key: String? = nil,
        extensions: String,
        notBefore: String = "20200101000000Z", notAfter: String = "20400101000000Z"
    ) throws -> Certificate {
        let key = key ?? name
        if !FileManager.default.fileExists(atPath: url.appendingPathComponent("\(key).key").path) {
            try OpenSSLCLI.require(
                ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(key).key"], in: url)
        }
        try OpenSSLCLI.require(["req", "-new", "-key", "\(key).key", "-subj", subject, "-out", "\(name).csr"], in: url)
        try directory.write("\(name).ext", "[ ext ]\n\(extensions)\n")
        var arguments = [
            "ca", "-batch", "-config", "ca.cnf", "-in", "\(name).csr", "-out", "\(name).pem", "-startdate", notBefore,
            "-enddate", notAfter, "-extfile", "\(name).ext", "-extensions", "ext", "-notext", "-preserveDN",
            "-rand_serial",
        ]
        if let issuer {
            arguments += ["-cert", "\(issuer).pem", "-keyfile", "\(issuerKey ?? issuer).key"]
        } else {
            arguments += ["-selfsign", "-keyfile", "\(key).key"]
        }
        try OpenSSLCLI.require(arguments, in: url)
        return try certificate(name)
    }

    /// Revokes `name.pem` in the shared database, as `issuer` (`openssl ca -revoke`).
    func revoke(_ name: String, issuer: String) throws {
        try OpenSSLCLI.require(
            [
                "ca", "-config", "ca.cnf", "-revoke", "\(name).pem", "-cert", "\(issuer).pem", "-keyfile",
                "\(issuer).key",
            ],
            in: url)
    }

    /// A CRL signed by `issuer` listing the database's revoked certificates, valid ten years from now
    /// (`openssl ca -gencrl`), written to `issuer.crl`.
    func crl(_ issuer: String) throws -> CertificateRevocationList {
        try OpenSSLCLI.require(
            [
                "ca", "-config", "ca.cnf", "-gencrl", "-cert", "\(issuer).pem", "-keyfile", "\(issuer).key", "-crldays",
                "3650", "-out", "\(issuer).crl",
            ], in: url)
        let crls = try CertificateRevocationList.crls(
            pemEncoded: String(decoding: directory.read("\(issuer).crl"), as: UTF8.self))
        guard crls.count == 1 else { throw OpenSSLCLI.Failure("\(crls.count) CRLs in \(issuer).crl") }
        return crls[0]
    }

    func certificate(_ name: String) throws -> Certificate {
        try Certificate(pemEncoded: String(decoding: directory.read("\(name).pem"), as: UTF8.self))
    }

    /// `openssl verify` of `leaf` with only `anchors` trusted (partial chains allowed, as our anchors are) and
    /// `intermediates` untrusted, at `time` (seconds since 1970): true when it says OK.
    func opensslVerifies(
        _ leaf: String, anchors: [String], intermediates: [String] = [], time: Int, purpose: String? = nil,
        crls: [String] = []
    ) throws -> Bool {
        try directory.write(
            "anchors-\(leaf).pem",
            try anchors.map { try String(decoding: directory.read("\($0).pem"), as: UTF8.self) }.joined())
        var arguments = ["verify", "-partial_chain", "-CAfile", "anchors-\(leaf).pem", "-attime", "\(time)"]
        if !intermediates.isEmpty {
            try directory.write(
                "untrusted-\(leaf).pem",
                try intermediates.map { try String(decoding: directory.read("\($0).pem"), as: UTF8.self) }.joined())
            arguments += ["-untrusted", "untrusted-\(leaf).pem"]
        }
        if let purpose { arguments += ["-purpose", purpose] }
        if !crls.isEmpty {
            try directory.write(
                "crls-\(leaf).pem",
                try crls.map { try String(decoding: directory.read("\($0).crl"), as: UTF8.self) }.joined())
            arguments += ["-crl_check_all", "-CRLfile", "crls-\(leaf).pem"]
        }
        let output = try OpenSSLCLI.run(arguments + ["\(leaf).pem"], in: url)
        return output.status == 0
    }
}

/// 2030-01-01T00:00:00Z, inside the default validity of the test PKI (2020–2040).
let midValidityTime = 1_893_456_000
let midValidity = Date(timeIntervalSince1970: TimeInterval(midValidityTime))
