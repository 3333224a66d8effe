internal import COpenSSL
internal import COpenSSLShims
public import Certificates

/// SIP domain certificate matching (RFC 5922 §7.1–7.2): whether a certificate speaks for a SIP service domain.
/// - The identities are the SAN uniformResourceIdentifiers with the `sip` scheme and no user part, when there are
///   any; else the SAN dNSNames; else, only when the certificate has no subjectAltName extension at all, the
///   subject's common names.
/// - A domain matches an identity only exactly: case-insensitive (ASCII), a trailing dot ignored; no wildcard
///   (an identity with `*` never matches), no suffix match.
public enum ServiceDomain {
    /// The SIP domains the certificate speaks for, in the RFC 5922 order of preference (the first non-empty
    /// source wins), as presented.
    /// - Parameter certificate: the server's certificate.
    /// - Returns: the presented domains; empty when the certificate names none.
    public static func identities(of certificate: Certificate) -> [String] {
        let names = certificate.subjectAlternativeNames
        let sipDomains = names.filter { $0.kind == .uri }.compactMap { sipDomain(ofURI: $0.value) }
        if !sipDomains.isEmpty { return sipDomains }
        let dnsNames = names.filter { $0.kind == .dns }.map(\.value)
        if !dnsNames.isEmpty { return dnsNames }
        let hasAlternativeNames = certificate.withUnsafeX509 { copenssl_trust_has_subject_alt_name($0) != 0 }
        return hasAlternativeNames ? [] : certificate.commonNames
    }

    /// Whether the certificate speaks for the SIP service domain `domain`.
    /// - Parameters:
    ///   - certificate: the server's certificate.
    ///   - domain: the SIP domain the client asked for (a DNS name, no wildcard).
    /// - Returns: true when one of ``identities(of:)`` equals `domain` by the RFC 5922 rules.
    public static func matches(_ certificate: Certificate, domain: String) -> Bool {
        guard let reference = normalized(domain) else { return false }
        return identities(of: certificate).contains { normalized($0) == reference }
    }

    /// The host part of a `sip:` URI without a user part (`sip:example.com`, `sip:example.com:5061;transport=tls`),
    /// nil for another scheme or a URI with a user part (`sip:alice@example.com`).
    static func sipDomain(ofURI uri: String) -> String? {
        guard uri.lowercased().hasPrefix("sip:") else { return nil }
        var rest = Substring(uri.dropFirst(4))
        guard !rest.contains("@") else { return nil }
        if let end = rest.firstIndex(where: { $0 == ";" || $0 == "?" }) { rest = rest[..<end] }
        if let colon = rest.firstIndex(of: ":") { rest = rest[..<colon] }
        return rest.isEmpty ? nil : String(rest)
    }

    /// Lower-cased, one trailing dot dropped; nil for an empty name or one with a wildcard.
    private static func normalized(_ name: String) -> String? {
        var text = name.lowercased()
        if text.hasSuffix(".") { text.removeLast() }
        guard !text.isEmpty, !text.contains("*"), !text.hasSuffix(".") else { return nil }
        return text
    }
}
