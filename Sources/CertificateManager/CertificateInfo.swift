public import Certificates
public import Foundation

/// What an application shows about a certificate: names, serial, validity, fingerprints, key and usages.
public struct CertificateInfo: Sendable, Hashable {
    /// The full subject (RFC 2253 text).
    public let subject: String
    /// The subject's summary (its common name, else another distinguishing attribute).
    public let subjectSummary: String?
    /// The full issuer.
    public let issuer: String
    /// The issuer's summary.
    public let issuerSummary: String?
    /// The serial number's value in upper-case hex, as `openssl x509 -serial` prints it: no sign-padding zero
    /// byte (a serial whose top bit is set is encoded with one), a minus sign for a negative serial.
    public let serialNumber: String
    public let notValidBefore: Date
    public let notValidAfter: Date
    /// SHA-1 of the DER, upper-case hex pairs separated by colons.
    public let sha1Fingerprint: String
    /// SHA-256 of the DER, upper-case hex pairs separated by colons.
    public let sha256Fingerprint: String
    public let isCertificateAuthority: Bool
    /// "RSA", "EC", or the algorithm's dotted OID for another key type.
    public let keyType: String
    public let keySizeInBits: Int?
    /// The subject alternative names as `KIND:value` ("DNS:www.example.com", "URI:sip:example.com").
    public let subjectAlternativeNames: [String]
    /// The key usages named (RFC 5280 names: "digitalSignature", "keyCertSign", ...); empty without the extension.
    public let keyUsages: [String]

    /// The value of a DER INTEGER's content bytes (two's complement, big-endian) in hex, without leading zero
    /// bytes, `-` before a negative one's magnitude.
    static func serialText(_ content: Data) -> String {
        var bytes = [UInt8](content)
        let negative = (bytes.first ?? 0) & 0x80 != 0
        if negative {
            // The magnitude: invert and add one.
            bytes = bytes.map { ~$0 }
            for index in bytes.indices.reversed() {
                bytes[index] &+= 1
                if bytes[index] != 0 { break }
            }
        }
        while bytes.count > 1, bytes[0] == 0 { bytes.removeFirst() }
        return (negative ? "-" : "") + bytes.map { String(format: "%02X", $0) }.joined()
    }

    /// - Parameter certificate: the certificate to describe.
    public init(_ certificate: Certificate) {
        subject = certificate.subject.description
        subjectSummary = certificate.subjectSummary
        issuer = certificate.issuer.description
        issuerSummary = certificate.issuerSummary
        serialNumber = Self.serialText(certificate.serialNumber)
        notValidBefore = certificate.notValidBefore
        notValidAfter = certificate.notValidAfter
        sha1Fingerprint = certificate.sha1Fingerprint.map { String(format: "%02X", $0) }.joined(separator: ":")
        sha256Fingerprint = certificate.sha256Fingerprint.map { String(format: "%02X", $0) }.joined(separator: ":")
        isCertificateAuthority = certificate.isCertificateAuthority
        switch certificate.publicKeyAlgorithm {
        case "1.2.840.113549.1.1.1": keyType = "RSA"
        case "1.2.840.10045.2.1": keyType = "EC"
        default: keyType = certificate.publicKeyAlgorithm
        }
        keySizeInBits = certificate.publicKeySizeInBits
        subjectAlternativeNames = certificate.subjectAlternativeNames.map(\.description)
        let names: [(Certificate.KeyUsage, String)] = [
            (.digitalSignature, "digitalSignature"), (.nonRepudiation, "nonRepudiation"),
            (.keyEncipherment, "keyEncipherment"), (.dataEncipherment, "dataEncipherment"),
            (.keyAgreement, "keyAgreement"), (.keyCertSign, "keyCertSign"), (.crlSign, "cRLSign"),
            (.encipherOnly, "encipherOnly"), (.decipherOnly, "decipherOnly"),
        ]
        let usage = certificate.keyUsage ?? []
        keyUsages = names.filter { usage.contains($0.0) }.map(\.1)
    }
}
