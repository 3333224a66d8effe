public import Foundation

/// Apple's `LAPolicy`: what an evaluation asks for.
public enum LAPolicy: Int, Sendable, Hashable {
    /// Biometry only: never available here.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// The device owner: here the default keychain's password.
    case deviceOwnerAuthentication = 2
    case deviceOwnerAuthenticationWithWatch = 3
    case deviceOwnerAuthenticationWithBiometricsOrWatch = 4
    case deviceOwnerAuthenticationWithWristDetection = 5
}

/// Apple's `LACredentialType`.
public enum LACredentialType: Int, Sendable, Hashable {
    /// A password the application got from the user: here the password of the item's keychain.
    case applicationPassword = 0
    case smartCardPIN = -3
}

/// Apple's `LABiometryType`: always `.none` here.
public enum LABiometryType: Int, Sendable, Hashable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4
}

/// The error domain of ``LAError``.
public let LAErrorDomain = "com.apple.LocalAuthentication"

/// Apple's `LAError`: why an evaluation failed, with Apple's codes.
public struct LAError: Error, Sendable, Hashable, CustomNSError, CustomStringConvertible {
    public enum Code: Int, Sendable, Hashable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case companionNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14
        case notInteractive = -1004
    }

    public let code: Code

    public init(_ code: Code) { self.code = code }

    public static var errorDomain: String { LAErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description] }

    public var description: String {
        switch code {
        case .authenticationFailed: "the password is not the keychain's"
        case .passcodeNotSet: "the default keychain has no password to prove the user with"
        case .biometryNotAvailable, .biometryNotEnrolled, .biometryLockout, .biometryNotPaired, .biometryDisconnected:
            "this platform has no biometry"
        case .companionNotAvailable: "this platform has no companion device"
        case .invalidContext: "the context was invalidated"
        case .notInteractive: "no one can be asked here: set the keychain's password with setCredential(_:type: .applicationPassword)"
        case .userCancel, .userFallback, .systemCancel, .appCancel, .invalidDimensions: "the evaluation was cancelled"
        }
    }

    public static let authenticationFailed = Code.authenticationFailed
    public static let userCancel = Code.userCancel
    public static let passcodeNotSet = Code.passcodeNotSet
    public static let biometryNotAvailable = Code.biometryNotAvailable
    public static let invalidContext = Code.invalidContext
    public static let notInteractive = Code.notInteractive
}
