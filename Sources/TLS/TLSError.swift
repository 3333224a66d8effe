public import CryptoContract
public import Trust

/// Why a TLS connection failed or ended.
public struct TLSError: CodedError {
    public typealias Code = ErrorCode<TLSError>

    public let code: Code
    public let reason: String
    /// For ``Code/untrusted``: the evaluation of the server's chain.
    public let trust: TrustResult?

    public init(_ code: Code, _ reason: String, trust: TrustResult? = nil) {
        self.code = code
        self.reason = reason
        self.trust = trust
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
