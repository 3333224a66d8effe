public import SecurityBase
/// Why an evaluation could not be run at all (a bad setup, not an untrusted certificate: those are results).
/// Equal by code; new codes never break callers.
public struct TrustError: CodedError {
    public typealias Code = ErrorCode<TrustError>

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
            ? "TrustError.\(code): \(reason)"
            : "TrustError.\(code): \(reason) (\(openSSLErrors.joined(separator: "; ")))"
    }
}

extension ErrorCode where Domain == TrustError {
    /// A budget limit is zero or negative.
    public static let invalidBudget = Self(name: "invalidBudget")
    /// A policy's hostname is empty or not text a hostname can be (a NUL byte, an empty label).
    public static let invalidHostname = Self(name: "invalidHostname")
    /// The verification date is not a whole number of seconds a `time_t` can hold.
    public static let invalidDate = Self(name: "invalidDate")
    /// The evaluator was given no policy.
    public static let noPolicy = Self(name: "noPolicy")
    /// The bytes are not one certificate revocation list.
    public static let malformedCRL = Self(name: "malformedCRL")
    /// OpenSSL could not set up a validation (an allocation failed); its error queue is attached.
    public static let validationSetup = Self(name: "validationSetup")
    /// Trust settings that break a rule (a fatal allowed error, trustRoot on a certificate that is not
    /// self-signed, an unknown policy or result).
    public static let invalidTrustSettings = Self(name: "invalidTrustSettings")
    /// A trust-settings file that cannot be read as one.
    public static let corruptTrustSettings = Self(name: "corruptTrustSettings")
    /// A trust-settings file that cannot be read, written or locked (its errno is in the reason).
    public static let trustSettingsIO = Self(name: "trustSettingsIO")
    /// A trust-settings file (or its lock or directory) this process may not read or write (EACCES): an
    /// administrator's domain changed without root, say.
    public static let trustSettingsPermissionDenied = Self(name: "trustSettingsPermissionDenied")
}
