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
        try sign(name, issuer: issuer, issuerKey: issuer == nil ? key : issuerKey, extensions: extensions, notBefore: notBefore, notAfter: notAfter)
    }

    /// Issues `name.pem` for a PEM certificate request made elsewhere (its key held in a TPM, a token), signed by
    /// `issuer` (with `issuer.key`).
    public func issue(_ name: String, request: String, issuer: String, extensions: String) throws {
        try directory.write("\(name).csr", request)
        try sign(name, issuer: issuer, issuerKey: nil, extensions: extensions, notBefore: "20200101000000Z", notAfter: "20400101000000Z")
    }

    /// `openssl ca` on `name.csr`: by `issuer` (its key `issuerKey.key`, by default `issuer.key`), or self-signed
    /// with `issuerKey.key` when `issuer` is nil.
    private func sign(_ name: String, issuer: String?, issuerKey: String?, extensions: String, notBefore: String, notAfter: String) throws {
        try directory.write("\(name).ext", "[ ext ]\n\(extensions)\n")
        var arguments = [
            "ca", "-batch", "-config", "ca.cnf", "-in", "\(name).csr", "-out", "\(name).pem", "-startdate", notBefore,
            "-enddate", notAfter, "-extfile", "\(name).ext", "-extensions", "ext", "-notext", "-preserveDN",
            "-rand_serial",
        ]
        if let issuer {
            arguments += ["-cert", "\(issuer).pem", "-keyfile", "\(issuerKey ?? issuer).key"]
        } else {
            arguments += ["-selfsign", "-keyfile", "\(issuerKey ?? name).key"]
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

    /// `issuer-without-next.crl` (PEM): `issuer.crl` (made by ``generateCRL(_:days:)``) with its nextUpdate field
    /// removed and signed again by `issuer` — RFC 5280 5.1.2.5 requires the field; `openssl ca` always writes it.
    public func crlWithoutNextUpdate(_ issuer: String) throws {
        let crl = try DER.children(of: try directory.read("\(issuer).crl.der"))
        var tbs = try DER.children(of: crl[0])
        // version, signature, issuer, thisUpdate, then nextUpdate when the next element is a Time.
        let next = tbs[0].first == 0x02 ? 4 : 3
        guard tbs.count > next, tbs[next].first == 0x17 || tbs[next].first == 0x18 else {
            throw OpenSSLCLI.Failure("\(issuer).crl has no nextUpdate to remove")
        }
        tbs.remove(at: next)
        let newTBS = DER.encode(0x30, tbs.reduce([], +))
        try Data(newTBS).write(to: url.appendingPathComponent("\(issuer)-tbs.der"))
        try OpenSSLCLI.require(
            ["dgst", "-sha256", "-sign", "\(issuer).key", "-out", "\(issuer)-tbs.sig", "\(issuer)-tbs.der"], in: url)
        let signature = Array(try directory.read("\(issuer)-tbs.sig"))
        let der = DER.encode(0x30, newTBS + crl[1] + DER.encode(0x03, [0] + signature))
        try Data(der).write(to: url.appendingPathComponent("\(issuer)-without-next.crl.der"))
        try OpenSSLCLI.require(
            ["crl", "-inform", "DER", "-in", "\(issuer)-without-next.crl.der", "-out", "\(issuer)-without-next.crl"], in: url)
    }

    /// Just enough DER to take a SEQUENCE apart and put it together again.
    enum DER {
        /// The encoded children (tag, length and contents each) of the one element `bytes` holds.
        static func children(of bytes: some Collection<UInt8>) throws -> [[UInt8]] {
            let bytes = Array(bytes)
            let (start, end) = try span(bytes, at: 0)
            guard end == bytes.count else { throw OpenSSLCLI.Failure("trailing bytes after a DER element") }
            var children: [[UInt8]] = []
            var offset = start
            while offset < end {
                let (_, childEnd) = try span(bytes, at: offset)
                children.append(Array(bytes[offset..<childEnd]))
                offset = childEnd
            }
            return children
        }

        /// Where the contents of the element at `offset` start, and where the element ends.
        private static func span(_ bytes: [UInt8], at offset: Int) throws -> (contents: Int, end: Int) {
            guard offset + 2 <= bytes.count else { throw OpenSSLCLI.Failure("a cut DER element") }
            var length = Int(bytes[offset + 1])
            var contents = offset + 2
            if length & 0x80 != 0 {
                let count = length & 0x7F
                guard count <= 4, contents + count <= bytes.count else { throw OpenSSLCLI.Failure("a bad DER length") }
                length = bytes[contents..<contents + count].reduce(0) { $0 << 8 | Int($1) }
                contents += count
            }
            guard contents + length <= bytes.count else { throw OpenSSLCLI.Failure("a cut DER element") }
            return (contents, contents + length)
        }

        static func encode(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
            var length: [UInt8] = []
            var count = contents.count
            if count < 0x80 {
                length = [UInt8(count)]
            } else {
                while count > 0 {
                    length.insert(UInt8(count & 0xFF), at: 0)
                    count >>= 8
                }
                length.insert(0x80 | UInt8(length.count), at: 0)
            }
            return [tag] + length + contents
        }
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
