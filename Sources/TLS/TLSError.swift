public import SecurityBase
public import Trust

/// Why a TLS connection failed or ended.
public struct TLSError: CodedError {
    public typealias Code = ErrorCode<TLSError>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation
    /// For ``Code/untrusted``: the evaluation of the server's chain.
    public let trust: TrustResult?

    public init(_ code: Code, _ reason: String, trust: TrustResult? = nil, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
        self.trust = trust
    }
}

extension TLSError {
    /// An alert's name as RFC 8446 (and RFC 5246 before it) spells it, with its number: `bad_certificate (42)`.
    public static func alertName(_ description: Int32) -> String {
        let names: [Int32: String] = [
            0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 21: "decryption_failed", 22: "record_overflow",
            40: "handshake_failure", 42: "bad_certificate", 43: "unsupported_certificate", 44: "certificate_revoked",
            45: "certificate_expired", 46: "certificate_unknown", 47: "illegal_parameter", 48: "unknown_ca", 49: "access_denied",
            50: "decode_error", 51: "decrypt_error", 70: "protocol_version", 71: "insufficient_security", 80: "internal_error",
            86: "inappropriate_fallback", 90: "user_canceled", 100: "no_renegotiation", 109: "missing_extension",
            110: "unsupported_extension", 112: "unrecognized_name", 113: "bad_certificate_status_response",
            115: "unknown_psk_identity", 116: "certificate_required", 120: "no_application_protocol",
        ]
        return "\(names[description] ?? "unknown") (\(description))"
    }
}

extension ErrorCode where Domain == TLSError {
    /// A bad configuration (an empty ALPN name, a minimum above the maximum, an identity whose key is not its
    /// certificate's).
    public static let invalidConfiguration = Self(name: "invalidConfiguration")
    /// No connection: the name does not resolve, refused, unreachable.
    public static let unreachable = Self(name: "unreachable")
    /// The timeout passed.
    public static let timeout = Self(name: "timeout")
    /// The server's chain is not trusted for the server name (``TLSError/trust`` says why).
    public static let untrusted = Self(name: "untrusted")
    /// The handshake failed otherwise: no common version or cipher, the server refused our certificate, an
    /// alert (the reason quotes OpenSSL).
    public static let handshakeFailed = Self(name: "handshakeFailed")
    /// The peer sent something that is not TLS, a record that fails its integrity check, or closed mid-record.
    public static let protocolError = Self(name: "protocolError")
    /// The connection is closed (read or write after close).
    public static let closed = Self(name: "closed")
}
