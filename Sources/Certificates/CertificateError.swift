public import SecurityBase
/// Why a certificate could not be read. Equal by code; new codes never break callers.
public struct CertificateError: CodedError {
    public typealias Code = ErrorCode<CertificateError>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation
    /// The OpenSSL error queue drained when the error was raised (oldest first), possibly empty.
    public let openSSLErrors: [String]

    public init(_ code: Code, _ reason: String, openSSLErrors: [String] = [], file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
        self.openSSLErrors = openSSLErrors
    }

    public var description: String {
        openSSLErrors.isEmpty
            ? "CertificateError.\(code): \(reason)"
            : "CertificateError.\(code): \(reason) (\(openSSLErrors.joined(separator: "; ")))"
    }
}

extension ErrorCode where Domain == CertificateError {
    /// The bytes are not one DER certificate: empty, truncated, malformed, or not a certificate at all.
    public static let malformedDER = Self(name: "malformedDER")
    /// One whole certificate was read but bytes follow it (`init(derEncoded:)` takes exactly one).
    public static let trailingData = Self(name: "trailingData")
    /// The text holds no CERTIFICATE block, more than one, a block with headers, or bad base64.
    public static let malformedPEM = Self(name: "malformedPEM")
    /// A name given to build a request is not encodable: an unknown attribute type, an empty or over-long
    /// value, an IP address that does not parse, a subject alternative name that is not IA5 text.
    public static let invalidName = Self(name: "invalidName")
    /// A request could not be signed: the key is public only, or OpenSSL refused the key and digest.
    public static let signingFailed = Self(name: "signingFailed")
}
