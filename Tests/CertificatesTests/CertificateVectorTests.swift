import Certificates
import Foundation
import TestVectors
import Testing

/// Every file under `$SECURITYSERVICES_VECTORS/x509/` (all of them, recursively: PKITS, custom, ocsp, requests,
/// the top-level certificates) is offered to `openssl x509` (PEM when the file holds "-----BEGIN", else DER).
/// Each one OpenSSL parses must parse here with the same serial number, SHA-1 and SHA-256 fingerprints,
/// notBefore/notAfter, common names and (for subjects with a CN and no description) subject summary; each DER
/// file OpenSSL rejects must be rejected here too.
@Suite("Certificate: cryptography-vectors x509 against the openssl CLI", .hostOnly)
struct CertificateVectorTests {
    struct Expected {
        var serial: String?
        var sha1: Data?
        var notBefore: Date?
        var notAfter: Date?
        var subjectLines: [String] = []
    }

    static func parse(_ text: String) -> Expected {
        var expected = Expected()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss'Z'"
        var inSubject = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if inSubject, line.hasPrefix("    ") {
                expected.subjectLines.append(String(line.dropFirst(4)))
                continue
            }
            inSubject = false
            if line == "subject=" {
                inSubject = true
            } else if line.hasPrefix("serial=") {
                expected.serial = String(line.dropFirst(7))
            } else if line.hasPrefix("sha1 Fingerprint=") || line.hasPrefix("SHA1 Fingerprint=") {
                expected.sha1 = OpenSSLCLI.hexBytes(line.split(separator: "=")[1])
            } else if line.hasPrefix("notBefore=") {
                // "Bad time value": OpenSSL parsed a time it cannot read, which reads here fail-safe.
                expected.notBefore =
                    line == "notBefore=Bad time value"
                    ? .distantFuture : formatter.date(from: String(line.dropFirst(10)))
            } else if line.hasPrefix("notAfter=") {
                expected.notAfter =
                    line == "notAfter=Bad time value" ? .distantPast : formatter.date(from: String(line.dropFirst(9)))
            }
        }
        return expected
    }

    /// OpenSSL's printing of a serial: the magnitude's bytes in upper-case hex, "-" before a negative one.
    static func opensslSerial(_ content: Data) -> String {
        var bytes = [UInt8](content)
        var negative = false
        if let first = bytes.first, first & 0x80 != 0 {
            negative = true
            // Two's complement negation.
            bytes = bytes.map { ~$0 }
            var index = bytes.count - 1
            while index >= 0 {
                let (sum, overflow) = bytes[index].addingReportingOverflow(1)
                bytes[index] = sum
                if !overflow { break }
                index -= 1
            }
        }
        while bytes.count > 1, bytes[0] == 0 { bytes.removeFirst() }
        return (negative ? "-" : "") + bytes.map { String(format: "%02X", $0) }.joined()
    }

    @Test(
        "every x509 vector file OpenSSL parses parses here with the same fields",
        .enabled(if: CertificateFixtures.vectors != nil))
    func vectors() throws {
        let root = try #require(CertificateFixtures.vectors).appendingPathComponent("x509")
        let enumerator = try #require(
            FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]))
        var files: [URL] = []
        for case let url as URL in enumerator
        where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            files.append(url)
        }
        files.sort { $0.path < $1.path }
        var mismatches: [String] = []
        var parsed = 0
        var openSSLRejected = 0
        var namesCompared = 0
        var summariesCompared = 0
        for file in files {
            let bytes = try Data(contentsOf: file)
            let isPEM = bytes.range(of: Data("-----BEGIN".utf8)) != nil
            let name = file.path.replacingOccurrences(of: root.path + "/", with: "")
            let output = try OpenSSLCLI.run([
                "x509", "-inform", isPEM ? "PEM" : "DER", "-in", file.path, "-noout", "-subject", "-serial",
                "-fingerprint",
                "-sha1", "-dateopt", "iso_8601", "-startdate", "-enddate", "-nameopt",
                "sep_multiline,sname,utf8,-esc_msb",
            ])
            guard output.status == 0 else {
                openSSLRejected += 1
                if !isPEM, (try? Certificate(derEncoded: bytes)) != nil {
                    mismatches.append("\(name): OpenSSL rejects it, we accept it")
                }
                continue
            }
            let certificate: Certificate
            do {
                if isPEM {
                    guard
                        let first = try Certificate.certificates(pemEncoded: String(decoding: bytes, as: UTF8.self))
                            .first
                    else {
                        mismatches.append("\(name): no CERTIFICATE block found")
                        continue
                    }
                    certificate = first
                } else {
                    certificate = try Certificate(derEncoded: bytes)
                    if certificate.derEncoded != bytes { mismatches.append("\(name): DER differs") }
                }
            } catch {
                mismatches.append("\(name): \(error)")
                continue
            }
            parsed += 1
            let expected = Self.parse(output.text)
            if expected.serial != Self.opensslSerial(certificate.serialNumber) {
                mismatches.append(
                    "\(name): serial \(expected.serial ?? "nil") vs \(Self.opensslSerial(certificate.serialNumber))")
            }
            if expected.sha1 != certificate.sha1Fingerprint { mismatches.append("\(name): SHA-1 fingerprint") }
            if expected.notBefore != certificate.notValidBefore {
                mismatches.append(
                    "\(name): notBefore \(String(describing: expected.notBefore)) vs \(certificate.notValidBefore)")
            }
            if expected.notAfter != certificate.notValidAfter {
                mismatches.append(
                    "\(name): notAfter \(String(describing: expected.notAfter)) vs \(certificate.notValidAfter)")
            }
            // Common names, when every subject line is one unescaped attribute.
            let lines = expected.subjectLines
            if !lines.contains(where: { $0.contains(" + ") || $0.contains("\\") }) {
                let pairs = lines.map { line -> (String, String) in
                    let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
                }
                let names = pairs.filter { $0.0 == "CN" }.map(\.1)
                namesCompared += 1
                if names != certificate.commonNames {
                    mismatches.append("\(name): CNs \(names) vs \(certificate.commonNames)")
                }
                if !names.isEmpty, !pairs.contains(where: { $0.0 == "description" }) {
                    summariesCompared += 1
                    let summary = names.reversed().joined(separator: ", ")
                    if summary != certificate.subjectSummary {
                        mismatches.append("\(name): summary \(summary) vs \(certificate.subjectSummary ?? "nil")")
                    }
                }
            }
            let sha256 = try OpenSSLCLI.run([
                "x509", "-inform", isPEM ? "PEM" : "DER", "-in", file.path, "-noout", "-fingerprint", "-sha256",
            ])
            if OpenSSLCLI.hexBytes(sha256.text.split(separator: "=").last ?? "") != certificate.sha256Fingerprint {
                mismatches.append("\(name): SHA-256 fingerprint")
            }
        }
        print(
            "x509 vectors: \(files.count) files, \(parsed) parsed by OpenSSL and here, \(openSSLRejected) rejected by"
                + " OpenSSL, common names compared on \(namesCompared), summaries on \(summariesCompared)"
        )
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches: \(mismatches.prefix(30).joined(separator: "\n"))")
        #expect(parsed >= 500)
        #expect(summariesCompared >= 400)
    }

    @Test(
        "mutated vector certificates never trap: every truncation is rejected, flipped bytes parse or are rejected",
        .enabled(if: CertificateFixtures.vectors != nil))
    func mutations() throws {
        let root = try #require(CertificateFixtures.vectors).appendingPathComponent("x509/PKITS_data/certs")
        let names = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasSuffix(".crt") }
            .sorted()
        var mutated = 0
        for name in names.prefix(60) {
            let der = try Data(contentsOf: root.appendingPathComponent(name))
            guard (try? Certificate(derEncoded: der)) != nil else { continue }
            for cut in stride(from: 0, to: der.count, by: 13) {
                #expect((try? Certificate(derEncoded: der.prefix(cut))) == nil, "\(name) cut at \(cut)")
            }
            for index in stride(from: 0, to: der.count, by: 11) {
                var bytes = der
                bytes[bytes.startIndex + index] ^= 0x5A
                if let certificate = try? Certificate(derEncoded: bytes) {
                    #expect(certificate.derEncoded == bytes)
                    _ = (certificate.subjectSummary, certificate.emailAddresses, certificate.subjectAlternativeNames)
                }
                mutated += 1
            }
        }
        #expect(mutated > 5000)
        // Every PEM file (certificates, chains, requests, CRLs, keys): read or refused, never a trap.
        let all = try #require(CertificateFixtures.vectors).appendingPathComponent("x509")
        let enumerator = try #require(FileManager.default.enumerator(atPath: all.path))
        for case let path as String in enumerator where path.hasSuffix(".pem") {
            let text = String(decoding: try Data(contentsOf: all.appendingPathComponent(path)), as: UTF8.self)
            _ = try? Certificate.certificates(pemEncoded: text)
        }
    }
}
