internal import COpenSSL
internal import COpenSSLShims
public import Foundation

/// An X.509 certificate revocation list (RFC 5280 section 5), owning the OpenSSL `X509_CRL` parsed from it.
public final class CertificateRevocationList: @unchecked Sendable {
    // @unchecked: `crl` is never changed after init and freed only in deinit; OpenSSL only reads it (its
    // cached fields are computed at parse time).
    private let crl: OpaquePointer

    /// The CRL's DER, exactly as given.
    public let derEncoded: Data

    /// Reads exactly one DER CRL.
    /// - Parameter derEncoded: the CRL's DER and nothing else.
    /// - Throws: ``TrustError`` `.malformedCRL` when the bytes are not exactly one CRL.
    public init(derEncoded: some DataProtocol) throws {
        let der = Data(derEncoded)
        ERR_clear_error()
        let parsed: (OpaquePointer?, Int) = der.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return (nil, 0) }
            var cursor: UnsafePointer<UInt8>? = UnsafePointer(base)
            // d2i_X509_CRL: "*ppin is incremented to the byte following the parsed data"; NULL on error.
            let crl = d2i_X509_CRL(nil, &cursor, raw.count)
            return (crl, cursor.map { $0 - UnsafePointer(base) } ?? 0)
        }
        guard let crl = parsed.0 else {
            ERR_clear_error()
            throw TrustError(.malformedCRL, "the bytes are not a DER CRL")
        }
        guard parsed.1 == der.count else {
            X509_CRL_free(crl)
            throw TrustError(.malformedCRL, "\(der.count - parsed.1) bytes follow the CRL")
        }
        self.crl = crl
        self.derEncoded = der
    }

    /// Adopts `crl`, which this object frees (a CRL fetched by OpenSSL's HTTP client).
    init(takingOwnership crl: OpaquePointer) {
        self.crl = crl
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_X509_CRL(crl, &der)
        if count > 0, let der {
            derEncoded = Data(bytes: der, count: Int(count))
            CRYPTO_free(der, #file, #line)
        } else {
            derEncoded = Data()
        }
    }

    /// Reads every `X509 CRL` block of a PEM text, in order; other blocks are skipped.
    /// - Throws: ``TrustError`` `.malformedCRL` for bad base64 or a block that is not one CRL.
    public static func crls(pemEncoded text: String) throws -> [CertificateRevocationList] {
        var result: [CertificateRevocationList] = []
        var body: String?
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "-----BEGIN X509 CRL-----" {
                body = ""
            } else if trimmed == "-----END X509 CRL-----", let base64 = body {
                guard let der = Data(base64Encoded: base64) else {
                    throw TrustError(.malformedCRL, "an X509 CRL block is not base64")
                }
                result.append(try CertificateRevocationList(derEncoded: der))
                body = nil
            } else if body != nil {
                body? += trimmed
            }
        }
        return result
    }

    deinit { X509_CRL_free(crl) }

    /// Whether the CRL carries the CRLNumber extension (RFC 5280 5.2.3).
    var hasCRLNumber: Bool {
        // X509_CRL_get_ext_by_NID: the index of the first such extension, -1 when there is none.
        withUnsafeCRL { X509_CRL_get_ext_by_NID($0, NID_crl_number, -1) >= 0 }
    }

    /// Whether the CRL says until when it is current (nextUpdate; RFC 5280 5.1.2.5 requires it).
    var hasNextUpdate: Bool {
        // X509_CRL_get0_nextUpdate: an internal pointer, NULL when the field is absent.
        withUnsafeCRL { X509_CRL_get0_nextUpdate($0) != nil }
    }

    /// What this CRL costs in memory, estimated from above: its DER twice (ours, and the strings OpenSSL's parsed
    /// form copies out of it) and 256 bytes per revoked entry and per entry extension (OpenSSL's objects for each, as
    /// the resident size of parsed CRLs with and without entry extensions shows; `CRLCacheTests` holds a cache of
    /// large CRLs to its bound by that measure).
    var estimatedMemoryCost: Int {
        var extensions = 0
        let entries = withUnsafeCRL { Int(copenssl_revocation_crl_entries($0, &extensions)) }
        return 2 * derEncoded.count + 256 * (entries + extensions)
    }

    /// Lends the `X509_CRL` to `body`; the pointer must not outlive it.
    func withUnsafeCRL<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(crl) }
    }
}
