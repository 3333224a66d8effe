import Foundation
import NetworkFetch

/// SCEP's HTTP binding (RFC 8894 §4.1): `GET url?operation=…&message=…`, or `POST url?operation=PKIOperation`
/// with the pkiMessage as the body. Each exchange goes through the configuration's ``NetworkFetching`` (the
/// socket fetcher by default), bounded by the timeout and ended by the task's cancellation; no thread waits.
struct SCEPTransport: Sendable {
    let url: String
    let timeout: Duration
    let network: any NetworkFetching

    /// The largest answer read (a CertRep with a chain is a few KiB; GetCACert a few certificates).
    static let maximumAnswer = 1 << 20

    /// `GET url?operation=<operation>[&message=<message>]`.
    func get(_ operation: String, message: String? = nil) async throws(FetchError) -> Data {
        var query = "operation=\(Self.percentEncoded(operation))"
        if let message { query += "&message=\(Self.percentEncoded(message))" }
        return try await exchange(query: query, body: nil)
    }

    /// `POST url?operation=PKIOperation` with `body` (`application/x-pki-message`).
    func post(_ operation: String, body: Data) async throws(FetchError) -> Data {
        try await exchange(query: "operation=\(Self.percentEncoded(operation))", body: body)
    }

    private func exchange(query: String, body: Data?) async throws(FetchError) -> Data {
        let target = url + (url.contains("?") ? "&" : "?") + query
        let request = FetchRequest(
            url: target, body: body.map { [UInt8]($0) }, contentType: body == nil ? nil : "application/x-pki-message",
            timeout: timeout, maximumLength: Self.maximumAnswer)
        return Data(try await network.fetch(request))
    }

    /// RFC 3986 percent-encoding of a query value (base64's `+`, `/` and `=` included).
    static func percentEncoded(_ value: String) -> String {
        let allowed = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        // Every String is valid Unicode, which addingPercentEncoding always encodes.
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
