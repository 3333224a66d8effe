/// Why an evaluation could not be run at all (a bad setup, not an untrusted certificate: those are results).
/// Equal by code; new codes never break callers.
public struct TrustError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate let name: String
        /// A budget limit is zero or negative.
        public static let invalidBudget = Code(name: "invalidBudget")
        /// A policy's hostname is empty or not text a hostname can be (a NUL byte, an empty label).
        public static let invalidHostname = Code(name: "invalidHostname")
        /// The verification date is not a whole number of seconds a `time_t` can hold.
        public static let invalidDate = Code(name: "invalidDate")
        /// The evaluator was given no policy.
        public static let noPolicy = Code(name: "noPolicy")
        /// The bytes are not one certificate revocation list.
        public static let malformedCRL = Code(name: "malformedCRL")
        /// OpenSSL could not set up a validation (an allocation failed); its error queue is attached.
        public static let validationSetup = Code(name: "validationSetup")
        /// Trust settings that break a rule (a fatal allowed error, trustRoot on a certificate that is not
        /// self-signed, an unknown policy or result).
        public static let invalidTrustSettings = Code(name: "invalidTrustSettings")
        /// A trust-settings file that cannot be read as one.
        public static let corruptTrustSettings = Code(name: "corruptTrustSettings")
        /// A trust-settings file that cannot be read, written or locked (its errno is in the reason).
        public static let trustSettingsIO = Code(name: "trustSettingsIO")
        /// A trust-settings file (or its lock or directory) this process may not read or write (EACCES): an
        /// administrator's domain changed without root, say.
        public static let trustSettingsPermissionDenied = Code(name: "trustSettingsPermissionDenied")
        public var description: String { name }
    }

    public let code: Code
    public let reason: String
    /// The OpenSSL error queue drained when the error was raised (oldest first), possibly empty.
    public let openSSLErrors: [String]

    public init(_ code: Code, _ reason: String, openSSLErrors: [String] = []) {
        self.code = code
        self.reason = reason
        self.openSSLErrors = openSSLErrors
    }

    public static func == (lhs: TrustError, rhs: TrustError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String {
        openSSLErrors.isEmpty
            ? "TrustError.\(code): \(reason)"
            : "TrustError.\(code): \(reason) (\(openSSLErrors.joined(separator: "; ")))"
    }
}
