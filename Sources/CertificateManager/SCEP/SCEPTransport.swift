internal import COpenSSL
import Foundation

/// SCEP's HTTP binding (RFC 8894 §4.1): `GET url?operation=…&message=…`, or `POST url?operation=PKIOperation`
/// with the pkiMessage as the body. One exchange per request over OpenSSL's HTTP client (the C side opens the
/// connection itself so that a refused one fails at once), each bounded by the timeout, run on a thread of its
/// own so that the caller's executor is not blocked while it waits.
struct SCEPTransport: Sendable {
    let url: String
    let timeout: Duration

    /// The largest answer read (a CertRep with a chain is a few KiB; GetCACert a few certificates).
    static let maximumAnswer = 1 << 20

    /// A failed exchange, before it is said in the manager's terms.
    struct Failure: Error {
        enum Kind { case badURL, unreachable, timeout, status, malformed }
        let kind: Kind
        /// The errno (unreachable) or the HTTP status (status).
        let detail: Int32
    }

    /// `GET url?operation=<operation>[&message=<message>]`.
    func get(_ operation: String, message: String? = nil) async throws -> Data {
        var query = "operation=\(Self.percentEncoded(operation))"
        if let message { query += "&message=\(Self.percentEncoded(message))" }
        return try await exchange(query: query, body: nil)
    }

    /// `POST url?operation=PKIOperation` with `body` (`application/x-pki-message`).
    func post(_ operation: String, body: Data) async throws -> Data {
        try await exchange(query: "operation=\(Self.percentEncoded(operation))", body: body)
    }

    private func exchange(query: String, body: Data?) async throws -> Data {
        let target = url + (url.contains("?") ? "&" : "?") + query
        let seconds = Int32(clamping: max(1, timeout.components.seconds + (timeout.components.attoseconds > 0 ? 1 : 0)))
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.exchange(target, body: body, seconds: seconds) })
            }
        }
    }

    private static func exchange(_ target: String, body: Data?, seconds: Int32) throws -> Data {
        var answer: UnsafeMutablePointer<UInt8>?
        var length = 0
        var detail: Int32 = 0
        let bytes = body.map { [UInt8]($0) }
        let status: Int32 =
            if let bytes {
                bytes.withUnsafeBufferPointer {
                    copenssl_http_exchange(
                        target, "application/x-pki-message", $0.baseAddress, $0.count, seconds, maximumAnswer,
                        &answer, &length, &detail)
                }
            } else {
                copenssl_http_exchange(target, nil, nil, 0, seconds, maximumAnswer, &answer, &length, &detail)
            }
        // copenssl_http_exchange: on success *response is OPENSSL_malloc'd (freed here), otherwise nothing is.
        defer { if let answer { copenssl_x509_free_buffer(answer) } }
        switch Int(status) {
        case COPENSSL_HTTP_OK:
            guard let answer else { return Data() }
            return Data(bytes: answer, count: length)
        case COPENSSL_HTTP_BAD_URL: throw Failure(kind: .badURL, detail: 0)
        case COPENSSL_HTTP_UNREACHABLE: throw Failure(kind: .unreachable, detail: detail)
        case COPENSSL_HTTP_TIMEOUT: throw Failure(kind: .timeout, detail: detail)
        case COPENSSL_HTTP_STATUS: throw Failure(kind: .status, detail: detail)
        default: throw Failure(kind: .malformed, detail: 0)
        }
    }

    /// RFC 3986 percent-encoding of a query value (base64's `+`, `/` and `=` included).
    static func percentEncoded(_ value: String) -> String {
        let allowed = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        // Every String is valid Unicode, which addingPercentEncoding always encodes.
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
