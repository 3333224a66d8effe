internal import COpenSSL
internal import COpenSSLShims
internal import CPSL
import Certificates
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Hostname matching as RFC 6125 and Apple's SecDNSMatch do it:
/// - a DNS hostname is matched against the SAN dNSNames, an IP address against the SAN iPAddresses (as bytes);
///   the subject's common names are used only when the caller asks for the fallback (the certificate manager's
///   documented option, never the SSL policy's) and the certificate has no subjectAltName extension at all;
/// - case-insensitive in ASCII only (no Unicode case mapping: U+212A KELVIN SIGN is not `k`); internationalized
///   names are compared as their A-labels; a presented name that is not ASCII LDH (an underscore, a trailing dot,
///   an empty label, non-ASCII text) matches nothing; one trailing dot of the reference hostname is ignored; the
///   same number of labels;
/// - `*` only as the whole left-most label, matching exactly one label, and never directly before a public
///   suffix (Debian's libpsl, ICANN and private sections, without the `*` rule) nor before a single label;
/// - no partial-label wildcards (`f*.example.com`), no wildcard elsewhere.
/// Every name matched here is also checked against the path's name constraints: the SANs with the path
/// (``NameConstraints``), and a common name that stood in for them by the evaluator, in the form it matched as.
enum Hostname {
    /// A reference identifier: what the client asked for.
    enum Reference: Equatable {
        case dns([Substring])
        case ipAddress([UInt8])
    }

    /// Parses the hostname a client asks for: an IPv4 or IPv6 address (brackets allowed), else an ASCII DNS name
    /// of non-empty labels without wildcards (one trailing dot ignored). Nil when it is neither.
    static func reference(_ hostname: String) -> Reference? {
        if let address = ipAddress(hostname) { return .ipAddress(address) }
        var text = Substring(hostname)
        if text.utf8.last == UInt8(ascii: ".") { text = text.dropLast() }
        guard let labels = labels(text), !labels.contains(where: { $0.utf8.contains(UInt8(ascii: "*")) }) else { return nil }
        return .dns(labels)
    }

    static func isWellFormed(_ hostname: String) -> Bool { reference(hostname) != nil }

    /// How a certificate's names matched a hostname.
    enum Match: Equatable {
        /// A subjectAltName matched (the path's name constraints checked it with the other SANs).
        case alternativeName
        /// Common names stood in for a missing subjectAltName extension: those that matched, in the form the name
        /// constraints compare (a DNS name, or an IP address's bytes).
        case commonNames([NameConstraints.Name])
    }

    /// How the certificate's names match `hostname`; nil when they do not (or `hostname` is not well formed).
    /// - Parameter commonNameFallback: whether the subject's common names stand in when the certificate has no
    ///   subjectAltName extension (off for the SSL policy).
    static func match(_ certificate: Certificate, hostname: String, commonNameFallback: Bool = false) -> Match? {
        guard let reference = reference(hostname) else { return nil }
        let hasAlternativeNames = certificate.withUnsafeX509 { copenssl_trust_has_subject_alt_name($0) != 0 }
        let names = certificate.subjectAlternativeNames
        let commonNames: [NameConstraints.Name]
        switch reference {
        case .dns(let host):
            if hasAlternativeNames {
                return names.contains { $0.kind == .dns && matches(pattern: $0.value, labels: host) } ? .alternativeName : nil
            }
            guard commonNameFallback else { return nil }
            commonNames = certificate.commonNames.filter { matches(pattern: $0, labels: host) }.map(NameConstraints.Name.dns)
        case .ipAddress(let address):
            if hasAlternativeNames {
                return names.contains { $0.kind == .ipAddress && Array($0.encoded) == address } ? .alternativeName : nil
            }
            guard commonNameFallback else { return nil }
            commonNames = certificate.commonNames.contains { ipAddress($0) == address } ? [.ipAddress(address)] : []
        }
        return commonNames.isEmpty ? nil : .commonNames(commonNames)
    }

    /// Whether a presented DNS identifier (a SAN dNSName or a common name) matches a DNS hostname.
    static func matches(pattern: String, hostname: String) -> Bool {
        guard case .dns(let host)? = reference(hostname) else { return false }
        return matches(pattern: pattern, labels: host)
    }

    private static func matches(pattern: String, labels host: [Substring]) -> Bool {
        // A presented name must be ASCII LDH itself: no trailing dot, underscore or Unicode case folding.
        guard let presented = NameConstraints.dnsLabels(pattern, wildcard: true), presented.count == host.count
        else { return false }
        if presented[0] == "*" {
            let suffix = presented.dropFirst()
            // At least two labels after the wildcard, none of them a wildcard, and not a public suffix.
            guard suffix.count >= 2, !suffix.contains(where: { $0.utf8.contains(UInt8(ascii: "*")) }),
                !isPublicSuffix(suffix.joined(separator: "."))
            else { return false }
            return suffix.elementsEqual(host.dropFirst())
        }
        guard !presented.contains(where: { $0.utf8.contains(UInt8(ascii: "*")) }) else { return false }
        return presented == host
    }

    /// ASCII-lower-cased labels of a reference hostname; nil for non-ASCII text, an empty label, or characters no
    /// DNS name or wildcard pattern has (an underscore is let through: it can match no presented name anyway).
    private static func labels(_ name: Substring) -> [Substring]? {
        // ASCII lower-casing only: Unicode case mapping would turn U+212A into `k`.
        ASCIILabels.lowercased(name.utf8, underscore: true).map(ASCIILabels.labels(of:))
    }

    /// The 4 or 16 bytes of an IPv4 dotted quad or an IPv6 address (optionally in brackets), nil otherwise.
    static func ipAddress(_ text: String) -> [UInt8]? {
        // Byte tests throughout: String's own `hasPrefix` and `contains` compare Characters (Unicode
        // normalization), and this runs on the hostname of every SSL evaluation.
        var text = Substring(text)
        if text.utf8.first == UInt8(ascii: "["), text.utf8.last == UInt8(ascii: "]") { text = text.dropFirst().dropLast() }
        let family: Int32
        if text.utf8.contains(UInt8(ascii: ":")) {
            family = AF_INET6
        } else if text.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == UInt8(ascii: ".") }) {
            // A dotted quad has digits and dots only: a DNS name is told apart without inet_pton.
            family = AF_INET
        } else {
            return nil
        }
        // inet_pton: 1 when the text is a valid address of the family (dotted quad only for AF_INET).
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(family, String(text), &bytes) == 1 else { return nil }
        return family == AF_INET ? Array(bytes.prefix(4)) : bytes
    }

    /// Whether `domain` (lower-case ASCII) is a public suffix in Debian's built-in list.
    static func isPublicSuffix(_ domain: String) -> Bool {
        // psl_builtin: the list compiled into libpsl, a static context that is never freed; NULL only when the
        // library was built without one (then every name counts as a public suffix: fail safe, no wildcard).
        guard let list = psl_builtin() else { return true }
        return psl_is_public_suffix2(list, domain, Int32(PSL_TYPE_ANY | PSL_TYPE_NO_STAR_RULE)) != 0
    }
}
