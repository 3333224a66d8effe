import Foundation
import TestVectors
import Testing

extension OpenSSLCLI {
    /// Apple's kSecAttrPublicKeyHash computed with the CLI only: the SPKI from `openssl pkey -pubin -outform DER`,
    /// the BIT STRING located by `openssl asn1parse`, its contents after the unused-bits octet hashed by
    /// `openssl dgst -sha1`. Also returns the SPKI DER.
    static func publicKeyHash(certificate path: String, in directory: URL) throws -> (hash: Data, spki: Data) {
        let pem = try require(["x509", "-in", path, "-noout", "-pubkey"], in: directory).stdout
        try pem.write(to: directory.appendingPathComponent("pub.pem"))
        try require(["pkey", "-pubin", "-in", "pub.pem", "-outform", "DER", "-out", "spki.der"], in: directory)
        let spki = try Data(contentsOf: directory.appendingPathComponent("spki.der"))
        let listing = try require(["asn1parse", "-inform", "DER", "-in", "spki.der"], in: directory).text
        // "   23:d=1  hl=2 l=  66 prim: BIT STRING"
        guard
            let line = listing.split(separator: "\n").first(where: { $0.contains("d=1") && $0.contains("BIT STRING") }),
            let offset = Int(line.split(separator: ":")[0].trimmingCharacters(in: .whitespaces)),
            let hl = line.firstRange(of: "hl=").flatMap({ Int(line[$0.upperBound...].prefix { $0.isNumber }) }),
            let lRange = line.firstRange(of: " l="),
            let l = Int(line[lRange.upperBound...].drop { $0 == " " }.prefix { $0.isNumber })
        else { throw Failure("no BIT STRING in asn1parse output") }
        let start = spki.startIndex + offset + hl + 1
        try Data(spki[start..<(spki.startIndex + offset + hl + l)]).write(
            to: directory.appendingPathComponent("key.bin"))
        let hash = try require(["dgst", "-sha1", "-binary", "key.bin"], in: directory).stdout
        return (hash, spki)
    }
}

/// Certificates made at test time by the openssl CLI: a CA and leaves that exercise the summary fallbacks.
struct GeneratedFixtures {
    let directory: TemporaryDirectory

    /// Creates the CA (`ca.pem`, EC P-256), and leaves signed by it (RSA 2048):
    /// - `leaf.pem`: no CN; two OUs, an O and an emailAddress; SANs of all four kinds; serial 0x00FF01.
    /// - `multicn.pem`: two CNs and a description.
    /// - `emailonly.pem`: an empty subject and a SAN rfc822Name (and a DNS name after it).
    /// - `dnsonly.pem`: an empty subject and a SAN dNSName.
    init() throws {
        directory = try TemporaryDirectory("certificate-fixtures")
        let dir = directory.url
        try OpenSSLCLI.require(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
                "-out", "ca.pem", "-days", "30", "-subj", "/O=Example CA Org/CN=Example Root CA",
                "-addext", "basicConstraints=critical,CA:TRUE,pathlen:1",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                "-addext", "subjectKeyIdentifier=hash",
            ], in: dir)
        try directory.write(
            "leaf.cnf",
            """
            subjectAltName=DNS:www.example.com,DNS:example.com,IP:192.0.2.1,IP:2001:db8::1,\
            email:san@example.com,URI:https://example.com/x
            keyUsage=critical,digitalSignature,keyEncipherment
            extendedKeyUsage=serverAuth,clientAuth
            basicConstraints=CA:FALSE
            subjectKeyIdentifier=hash

            """)
        try directory.write("email.cnf", "subjectAltName=email:only@example.com,DNS:after.example.com\n")
        try directory.write("dns.cnf", "subjectAltName=DNS:only.example.com\n")
        try directory.write("multicn.cnf", "basicConstraints=CA:FALSE\n")
        let leaves: [(String, String, String, String)] = [
            (
                "leaf", "/C=US/O=Example Org/OU=Unit One/OU=Unit Two/emailAddress=subject@example.com", "leaf.cnf",
                "0x00FF01"
            ),
            ("multicn", "/CN=first name/CN=second name/description=the description", "multicn.cnf", "2"),
            ("emailonly", "/", "email.cnf", "3"),
            ("dnsonly", "/", "dns.cnf", "4"),
        ]
        for (name, subject, extensions, serial) in leaves {
            try OpenSSLCLI.require(
                [
                    "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr", "-subj",
                    subject,
                ],
                in: dir)
            try OpenSSLCLI.require(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", serial,
                    "-days", "10", "-out", "\(name).pem", "-extfile", extensions,
                ], in: dir)
            try OpenSSLCLI.require(["x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"], in: dir)
        }
        try OpenSSLCLI.require(["x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca.der"], in: dir)
    }

    func pem(_ name: String) throws -> String { String(decoding: try directory.read("\(name).pem"), as: UTF8.self) }
    func der(_ name: String) throws -> Data { try directory.read("\(name).der") }
}
