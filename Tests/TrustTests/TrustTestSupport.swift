import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// A small PKI made at test time by `openssl ca` (the shared ``OpenSSLCA``), giving back `Certificate`s and CRLs.
final class TestPKI {
    let ca: OpenSSLCA
    var directory: TemporaryDirectory { ca.directory }
    var url: URL { ca.url }

    init() throws { ca = try OpenSSLCA("trust-pki") }

    static func caExtensions(pathLength: Int? = nil, selfSigned: Bool = false, extra: String = "") -> String {
        OpenSSLCA.caExtensions(pathLength: pathLength, selfSigned: selfSigned, extra: extra)
    }

    static func leafExtensions(
        subjectAltName: String? = "DNS:www.example.com", extendedKeyUsage: String? = "serverAuth",
        selfSigned: Bool = false, extra: String = ""
    ) -> String {
        OpenSSLCA.leafExtensions(
            subjectAltName: subjectAltName, extendedKeyUsage: extendedKeyUsage, selfSigned: selfSigned, extra: extra)
    }

    /// Issues `name.pem` (see ``OpenSSLCA/issue(_:subject:issuer:issuerKey:key:extensions:notBefore:notAfter:)``).
    @discardableResult
    func issue(
        _ name: String, subject: String, issuer: String?, issuerKey: String? = nil, key: String? = nil,
        extensions: String,
        notBefore: String = "20200101000000Z", notAfter: String = "20400101000000Z"
    ) throws -> Certificate {
        try ca.issue(
            name, subject: subject, issuer: issuer, issuerKey: issuerKey, key: key, extensions: extensions,
            notBefore: notBefore, notAfter: notAfter)
        return try certificate(name)
    }

    /// Revokes `name.pem` in the shared database, as `issuer`.
    func revoke(_ name: String, issuer: String) throws { try ca.revoke(name, issuer: issuer) }

    /// A CRL signed by `issuer` listing the database's revoked certificates, valid ten years from now, written to
    /// `issuer.crl` (and `issuer.crl.der`).
    func crl(_ issuer: String) throws -> CertificateRevocationList {
        try ca.generateCRL(issuer)
        return try CertificateRevocationList(derEncoded: directory.read("\(issuer).crl.der"))
    }

    func certificate(_ name: String) throws -> Certificate { try Certificate(pemEncoded: ca.pem(name)) }

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
