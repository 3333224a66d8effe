public import Certificates
import Foundation

/// The anchors every trust starts with (those Apple's `SecTrustSetAnchorCertificates` replaces): the
/// distribution's CA bundle, then the administrator's anchors (the phone's configuration-profile roots, trusted
/// for every application, with `.proceed` as Apple's admin trust settings give). Each is read once per process,
/// on first use, and shared by every trust.
///
/// - The bundle: `$SECURITYSERVICES_SYSTEM_ANCHORS`, else `/etc/ssl/certs/ca-certificates.crt` (Debian's
///   ca-certificates), PEM.
/// - The administrator's directory: `$SECURITYSERVICES_ADMIN_ANCHORS`, else `/etc/securityservices/anchors`;
///   every regular file in it, PEM (any number of certificates) or DER (one).
///
/// A missing file or directory gives no anchors; a certificate that does not parse is skipped.
public enum SystemAnchors {
    public static let bundlePath =
        ProcessInfo.processInfo.environment["SECURITYSERVICES_SYSTEM_ANCHORS"] ?? "/etc/ssl/certs/ca-certificates.crt"
    public static let administratorPath =
        ProcessInfo.processInfo.environment["SECURITYSERVICES_ADMIN_ANCHORS"] ?? "/etc/securityservices/anchors"

    /// The administrator's anchors: a chain ending at one is `.proceed`, as one ending at a root trusted by the
    /// phone's configuration profile (an admin trust setting) is on Apple's.
    public static let administrator: [Certificate] = readDirectory(administratorPath)

    /// The bundle's and the administrator's anchors, without duplicates.
    public static let all: [Certificate] = {
        var seen = Set<Certificate>()
        var anchors: [Certificate] = []
        for certificate in read(file: bundlePath) + administrator
        where seen.insert(certificate).inserted {
            anchors.append(certificate)
        }
        return anchors
    }()

    /// The certificates of a PEM or DER file; none when it cannot be read.
    static func read(file path: String) -> [Certificate] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        if let certificate = try? Certificate(derEncoded: data) { return [certificate] }
        return pemCertificates(String(decoding: data, as: UTF8.self))
    }

    /// Every CERTIFICATE block of a PEM text that parses (one bad block does not lose the others).
    static func pemCertificates(_ text: String) -> [Certificate] {
        var result: [Certificate] = []
        var block: [Substring]?
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "-----BEGIN CERTIFICATE-----" {
                block = [line]
            } else if trimmed == "-----END CERTIFICATE-----", let lines = block {
                let pem = (lines + [line]).joined(separator: "\n") + "\n"
                if let certificate = try? Certificate(pemEncoded: pem) { result.append(certificate) }
                block = nil
            } else {
                block?.append(line)
            }
        }
        return result
    }

    /// The certificates of every regular file of a directory, in name order.
    static func readDirectory(_ path: String) -> [Certificate] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return names.sorted().flatMap { read(file: (path as NSString).appendingPathComponent($0)) }
    }
}
