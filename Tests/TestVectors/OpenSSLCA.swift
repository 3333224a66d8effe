public import Foundation

/// A certificate authority run by `openssl ca` in a temporary directory: one database (`index.txt`) for every
/// issuer of the directory, exact validity dates (`-startdate`/`-enddate`), revocation and CRLs. Files only
/// (`NAME.key`, `NAME.pem`, `ISSUER.crl`, `ISSUER.crl.der`): the test targets read them with their own types.
public final class OpenSSLCA {
    public let directory: TemporaryDirectory
    public var url: URL { directory.url }

    public init(_ prefix: String = "openssl-ca") throws {
        directory = try TemporaryDirectory(prefix)
        try directory.write(
            "ca.cnf",
            """
            [ ca ]
            default_ca = test_ca
            [ test_ca ]
            database = index.txt
            serial = serial.txt
            crlnumber = crlnumber.txt
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
        // CRLs carry a CRLNumber (RFC 5280 5.2.3): the evaluator trusts no CRL without one.
        try directory.write("crlnumber.txt", "1000\n")
    }

    /// A CA's extensions: critical basic constraints (with a path length when given), critical keyCertSign and
    /// cRLSign, key identifiers, and any extra lines (name constraints, EKU, AIA).
    public static func caExtensions(pathLength: Int? = nil, selfSigned: Bool = false, extra: String = "") -> String {
        """
        basicConstraints = critical, CA:TRUE\(pathLength.map { ", pathlen:\($0)" } ?? "")
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        \(selfSigned ? "" : "authorityKeyIdentifier = keyid")
        \(extra)
        """
    }

    /// A TLS leaf's extensions: not a CA, digitalSignature, the EKU given, the SAN given (none when nil), and any
    /// extra lines (AIA, CRL distribution points).
    public static func leafExtensions(
        subjectAltName: String? = "DNS:www.example.com", extendedKeyUsage: String? = "serverAuth",
        selfSigned: Bool = false, extra: String = ""
    ) -> String {
        """
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature
        subjectKeyIdentifier = hash
        \(selfSigned ? "" : "authorityKeyIdentifier = keyid")
        \(extendedKeyUsage.map { "extendedKeyUsage = \($0)" } ?? "")
        \(subjectAltName.map { "subjectAltName = \($0)" } ?? "")
        \(extra)
        """
    }

    /// Issues `name.pem` for `subject` (an `openssl req -subj` name) with the key `key.key` (made when missing,
    /// EC P-256), signed by `issuer` (`issuer.pem` with the key `issuerKey.key`, by default `issuer.key`) or
    /// self-signed when nil, recorded in the database.
    public func issue(
        _ name: String, subject: String, issuer: String?, issuerKey: String? = nil, key: String? = nil,
        extensions: String, notBefore: String = "20200101000000Z", notAfter: String = "20400101000000Z"
    ) throws {
        let key = key ?? name
        if !FileManager.default.fileExists(atPath: directory.path("\(key).key")) {
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
    }

    /// Revokes `name.pem` in the database, as `issuer` (`openssl ca -revoke`).
    public func revoke(_ name: String, issuer: String) throws {
        try OpenSSLCLI.require(
            ["ca", "-config", "ca.cnf", "-revoke", "\(name).pem", "-cert", "\(issuer).pem", "-keyfile", "\(issuer).key"],
            in: url)
    }

    /// `issuer.crl` (PEM) and `issuer.crl.der`: a CRL signed by `issuer` listing the database's revoked
    /// certificates, valid `days` from now (`openssl ca -gencrl`).
    public func generateCRL(_ issuer: String, days: Int = 3650) throws {
        try OpenSSLCLI.require(
            [
                "ca", "-config", "ca.cnf", "-gencrl", "-cert", "\(issuer).pem", "-keyfile", "\(issuer).key", "-crldays",
                "\(days)", "-out", "\(issuer).crl",
            ], in: url)
        try OpenSSLCLI.require(["crl", "-in", "\(issuer).crl", "-outform", "DER", "-out", "\(issuer).crl.der"], in: url)
    }

    /// `name.der`, the DER of `name.pem`; returns its bytes.
    @discardableResult
    public func der(_ name: String) throws -> Data {
        try OpenSSLCLI.require(["x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"], in: url)
        return try directory.read("\(name).der")
    }

    /// The text of `name.pem`.
    public func pem(_ name: String) throws -> String { String(decoding: try directory.read("\(name).pem"), as: UTF8.self) }
}

extension OpenSSLCA {
    /// A real revocation peer for this CA on loopback: `POST /ocsp` is answered by `openssl ocsp` from the
    /// database, signed by `issuer` (responses valid one day); `GET /ISSUER.crl` serves `ISSUER.crl.der` (made by
    /// ``generateCRL(_:days:)``). `openssl ocsp -port` cannot bind to loopback alone, hence the wrapper.
    /// - Parameter onRequest: called with every request first (tests count them).
    public func responder(
        issuer: String = "root", onRequest: (@Sendable (LoopbackHTTPServer.Request) -> Void)? = nil
    ) throws -> LoopbackHTTPServer {
        let directory = url
        return try LoopbackHTTPServer(
            .answer { request in
                onRequest?(request)
                return Self.respond(request, issuer: issuer, in: directory)
            })
    }

    static func respond(
        _ request: LoopbackHTTPServer.Request, issuer: String, in directory: URL
    ) -> LoopbackHTTPServer.Response {
        switch (request.method, request.path) {
        case ("POST", "/ocsp"):
            let name = UUID().uuidString
            guard (try? request.body.write(to: directory.appendingPathComponent("\(name).req"))) != nil,
                let run = try? OpenSSLCLI.run(
                    [
                        "ocsp", "-index", "index.txt", "-CA", "\(issuer).pem", "-rsigner", "\(issuer).pem", "-rkey",
                        "\(issuer).key", "-reqin", "\(name).req", "-respout", "\(name).resp", "-ndays", "1",
                    ], in: directory),
                run.status == 0,
                let response = try? Data(contentsOf: directory.appendingPathComponent("\(name).resp"))
            else { return LoopbackHTTPServer.Response(status: 500, body: Data()) }
            return LoopbackHTTPServer.Response(contentType: "application/ocsp-response", body: response)
        case ("GET", "/\(issuer).crl"):
            guard let crl = try? Data(contentsOf: directory.appendingPathComponent("\(issuer).crl.der")) else {
                return .notFound
            }
            return LoopbackHTTPServer.Response(contentType: "application/pkix-crl", body: crl)
        default:
            return .notFound
        }
    }
}
