public import SecurityBase

/// An error of a key held in hardware. Equal by code; the Apple-compatible surface maps codes to `OSStatus`.
/// Reasons name the device and what it said, never key material.
public struct HardwareKeyError: CodedError {
    public typealias Code = ErrorCode<HardwareKeyError>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation

    public init(_ code: Code, _ reason: String, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
    }
}

extension ErrorCode where Domain == HardwareKeyError {
    /// No such device here, or it does not answer (Apple's platforms without a Secure Enclave: errSecUnimplemented).
    public static let unavailable = Self(name: "unavailable")
    /// The device refused or failed an operation (its response code is in the reason).
    public static let deviceFailure = Self(name: "deviceFailure")
    /// A stored key blob that is not one this device made.
    public static let invalidKeyData = Self(name: "invalidKeyData")
    /// The token refused the PIN (Apple: errSecAuthFailed).
    public static let authenticationFailed = Self(name: "authenticationFailed")
    /// The token needs a PIN and none was given: nobody can be asked here (Apple: errSecInteractionNotAllowed).
    public static let interactionNotAllowed = Self(name: "interactionNotAllowed")
}
