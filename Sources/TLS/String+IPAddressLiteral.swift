import Foundation

extension String {
    /// Whether the string is an IPv4 or IPv6 literal (no SNI is sent for those, RFC 6066 §3).
    var isIPAddressLiteral: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, self, &v4) == 1 || inet_pton(AF_INET6, self, &v6) == 1
    }
}
