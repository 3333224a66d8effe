internal import COpenSSL
import Foundation
import Certificates
import Synchronization

/// Fetching missing intermediates from a certificate's AIA caIssuers URL over HTTP (RFC 5280 4.2.2.1), as Apple's
/// `SecTrust` does when network fetch is allowed: when a path stops at a certificate whose issuer was not given,
/// the issuer named by its caIssuers URL (a DER certificate) is downloaded and the search runs again.
public struct IssuerFetching: Sendable, Hashable {
    /// How long one download may take.
    public var timeout: Duration
    /// How many certificates one evaluation may download (a chain of fetched intermediates is bounded).
    public var maximumFetches: Int

    public init(timeout: Duration = .seconds(5), maximumFetches: Int = 4) {
        self.timeout = timeout
        self.maximumFetches = maximumFetches
    }
}

/// The downloads, cached for the process by URL (a certificate at a URL does not change within a run).
final class IssuerCache: Sendable {
    static let shared = IssuerCache()
    private let entries = Mutex<[String: Certificate]>([:])

    /// The issuer `certificate`'s caIssuers URL names, downloaded (or cached); nil without one or on failure.
    func issuer(of certificate: Certificate, timeout: Duration) -> Certificate? {
        guard
            let url = certificate.withUnsafeX509({
                RevocationChecker.url(of: $0, kind: COPENSSL_REVOCATION_URL_CA_ISSUERS)
            })
        else { return nil }
        if let cached = entries.withLock({ $0[url] }) { return cached }
        guard let fetched = copenssl_revocation_certificate_fetch(url, RevocationChecker.seconds(timeout)) else {
            return nil
        }
        defer { X509_free(fetched) }
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_X509(fetched, &der)
        guard count > 0, let der else { return nil }
        defer { CRYPTO_free(der, #file, #line) }
        guard let issuer = try? Certificate(derEncoded: UnsafeBufferPointer(start: der, count: Int(count))) else {
            return nil
        }
        entries.withLock { entries in
            if entries.count >= 256 { entries.removeAll() }  // bounded: a hostile peer cannot grow it forever
            entries[url] = issuer
        }
        return issuer
    }
}
