internal import COpenSSL
internal import COpenSSLShims
import Foundation
import Certificates
import NetworkFetch
import Synchronization

/// Fetching missing intermediates from a certificate's AIA caIssuers URL over HTTP (RFC 5280 4.2.2.1), as Apple's
/// `SecTrust` does when network fetch is allowed: when a path stops at a certificate whose issuer was not given,
/// what its caIssuers URL names (a DER certificate, or a certs-only CMS/PKCS#7 message of several) is downloaded
/// and the search runs again.
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

/// The downloads, cached for the process by URL (the certificates at a URL do not change within a run).
final class IssuerCache: Sendable {
    static let shared = IssuerCache()
    /// The most certificates one answer may give (a certs-only message with more is cut there).
    static let maximumPerAnswer = 16
    private let entries = Mutex<[String: [Certificate]]>([:])

    /// The certificates `certificate`'s caIssuers URL names, downloaded (or cached): one DER certificate, or
    /// those of a certs-only CMS/PKCS#7 message (RFC 5280 4.2.2.1 allows both); empty without a URL or on
    /// failure.
    func issuers(of certificate: Certificate, timeout: Duration, network: EvaluationNetwork) async throws(CancellationError) -> [Certificate] {
        guard
            let url = certificate.withUnsafeX509({
                RevocationChecker.url(of: $0, kind: COPENSSL_REVOCATION_URL_CA_ISSUERS)
            })
        else { return [] }
        if let cached = entries.withLock({ $0[url] }) { return cached }
        guard let bytes = try await network.fetch(FetchRequest(url: url, timeout: timeout, maximumLength: 1 << 20)) else {
            return []
        }
        var fetched = [OpaquePointer?](repeating: nil, count: Self.maximumPerAnswer)
        let count = fetched.withUnsafeMutableBufferPointer { out in
            bytes.withUnsafeBufferPointer {
                Int(copenssl_revocation_issuers_parse($0.baseAddress, $0.count, out.baseAddress, Int32(out.count)))
            }
        }
        var issuers: [Certificate] = []
        for x509 in fetched.prefix(count).compactMap({ $0 }) {
            defer { X509_free(x509) }
            var der: UnsafeMutablePointer<UInt8>?
            let length = i2d_X509(x509, &der)
            guard length > 0, let der else { continue }
            defer { CRYPTO_free(der, #file, #line) }
            if let issuer = try? Certificate(derEncoded: UnsafeBufferPointer(start: der, count: Int(length))) {
                issuers.append(issuer)
            }
        }
        guard !issuers.isEmpty else { return [] }
        entries.withLock { entries in
            if entries.count >= 256 { entries.removeAll() }  // bounded: a hostile peer cannot grow it forever
            entries[url] = issuers
        }
        return issuers
    }
}
