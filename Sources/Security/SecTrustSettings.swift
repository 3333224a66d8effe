public import Foundation
import Certificates
import Trust

// Apple's trust settings (<Security/SecTrustSettings.h>, macOS) with the signatures Swift imports there: a
// user's or administrator's decision about a certificate, which every evaluation of the user's then follows.
// The user's domain is a file of the user's, the administrator's a file root writes (`Trust.TrustSettingsDomains`
// says where); the system domain is the CA bundle and cannot be changed. Evaluations consult the user's settings
// over the administrator's: a certificate they trust is an anchor (result `.proceed`), one they deny makes the
// result `.deny`, the errors they allow are forgiven.

/// Whose trust settings (`SecTrustSettingsDomain`).
public enum SecTrustSettingsDomain: UInt32, Sendable {
    case user = 0
    case admin = 1
    case system = 2
}

/// What a usage constraint decides (`SecTrustSettingsResult`).
public enum SecTrustSettingsResult: UInt32, Sendable {
    case invalid = 0
    case trustRoot = 1
    case trustAsRoot = 2
    case deny = 3
    case unspecified = 4
}

/// The key usages a constraint may be limited to (`SecTrustSettingsKeyUsage`). Only `useAny` is supported: a
/// constraint limited to other usages is refused with `errSecParam` rather than stored and not enforced.
public struct SecTrustSettingsKeyUsage: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let useSignature = SecTrustSettingsKeyUsage(rawValue: 0x0000_0001)
    public static let useEnDecryptData = SecTrustSettingsKeyUsage(rawValue: 0x0000_0002)
    public static let useEnDecryptKey = SecTrustSettingsKeyUsage(rawValue: 0x0000_0004)
    public static let useSignCert = SecTrustSettingsKeyUsage(rawValue: 0x0000_0008)
    public static let useSignRevocation = SecTrustSettingsKeyUsage(rawValue: 0x0000_0010)
    public static let useKeyExchange = SecTrustSettingsKeyUsage(rawValue: 0x0000_0020)
    public static let useAny = SecTrustSettingsKeyUsage(rawValue: 0xFFFF_FFFF)
}

// nonisolated(unsafe): immutable NSString constants (Apple's values), never mutated.
nonisolated(unsafe) public let kSecTrustSettingsPolicy: CFString = "kSecTrustSettingsPolicy"
nonisolated(unsafe) public let kSecTrustSettingsApplication: CFString = "kSecTrustSettingsApplication"
nonisolated(unsafe) public let kSecTrustSettingsPolicyString: CFString = "kSecTrustSettingsPolicyString"
nonisolated(unsafe) public let kSecTrustSettingsKeyUsage: CFString = "kSecTrustSettingsKeyUsage"
nonisolated(unsafe) public let kSecTrustSettingsAllowedError: CFString = "kSecTrustSettingsAllowedError"
nonisolated(unsafe) public let kSecTrustSettingsResult: CFString = "kSecTrustSettingsResult"

/// The trust settings of `certRef` in `domain`, as Apple's array of usage-constraint dictionaries (an empty array:
/// trusted as an anchor for everything). The system domain's are an empty array for a CA-bundle certificate.
/// - Returns: `errSecItemNotFound` when the certificate has none there; `errSecInvalidTrustSettings` when the
///   domain's file is damaged; `errSecIO` when it cannot be read.
@discardableResult
public func SecTrustSettingsCopyTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain, _ trustSettings: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    trustSettings.pointee = nil
    if domain == .system {
        guard SystemAnchors.all.contains(certRef.certificate) else { return errSecItemNotFound }
        trustSettings.pointee = NSArray()
        return errSecSuccess
    }
    return trustSettingsCall {
        guard let settings = try store(domain).settings(for: certRef.certificate) else { return errSecItemNotFound }
        trustSettings.pointee = settingsArray(settings)
        return errSecSuccess
    }
}

/// Sets the trust settings of `certRef` in `domain`, replacing any it had.
/// - Parameter trustSettingsDictOrArray: one usage-constraint dictionary, an array of them (the first that applies
///   and decides wins), or nil / an empty array for "trusted as an anchor for everything". Keys:
///   `kSecTrustSettingsPolicy` (a `SecPolicy`: basic X.509 or SSL), `kSecTrustSettingsPolicyString` (the SSL
///   hostname), `kSecTrustSettingsAllowedError` (an `errSec…` status of a recoverable failure),
///   `kSecTrustSettingsResult` (default `.trustRoot` for a self-signed certificate, `.trustAsRoot` otherwise),
///   `kSecTrustSettingsKeyUsage` (`useAny` only).
/// - Returns: `errSecParam` for anything else (an unknown key, a value of the wrong type, `.invalid`, a fatal
///   allowed error, `.trustRoot` on a certificate that is not self-signed), changing nothing;
///   `errSecDataNotModifiable` for the system domain; `errSecWrPerm` when the domain's file cannot be written.
@discardableResult
public func SecTrustSettingsSetTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain, _ trustSettingsDictOrArray: CFTypeRef?
) -> OSStatus {
    guard domain != .system else { return errSecDataNotModifiable }
    guard let settings = parseSettings(trustSettingsDictOrArray, for: certRef.certificate) else { return errSecParam }
    return trustSettingsCall {
        try store(domain).set(settings, for: certRef.certificate)
        return errSecSuccess
    }
}

/// Removes the trust settings of `certRef` from `domain`.
/// - Returns: `errSecItemNotFound` when it had none there; `errSecDataNotModifiable` for the system domain.
@discardableResult
public func SecTrustSettingsRemoveTrustSettings(_ certRef: SecCertificate, _ domain: SecTrustSettingsDomain) -> OSStatus {
    guard domain != .system else { return errSecDataNotModifiable }
    return trustSettingsCall { try store(domain).remove(for: certRef.certificate) ? errSecSuccess : errSecItemNotFound }
}

/// The certificates with trust settings in `domain` (the system domain's: the CA bundle's).
/// - Returns: `errSecNoTrustSettings` when there are none.
@discardableResult
public func SecTrustSettingsCopyCertificates(
    _ domain: SecTrustSettingsDomain, _ certArray: UnsafeMutablePointer<CFArray?>?
) -> OSStatus {
    certArray?.pointee = nil
    return trustSettingsCall {
        let certificates =
            domain == .system
            ? SystemAnchors.all
            : try store(domain).all().keys.sorted { $0.sha1Fingerprint.lexicographicallyPrecedes($1.sha1Fingerprint) }
        guard !certificates.isEmpty else { return errSecNoTrustSettings }
        certArray?.pointee = NSArray(array: certificates.map(SecCertificate.init))
        return errSecSuccess
    }
}

/// When the trust settings of `certRef` in `domain` were last changed.
/// - Returns: `errSecItemNotFound` when it has none there (the system domain's have no date).
@discardableResult
public func SecTrustSettingsCopyModificationDate(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain, _ modificationDate: UnsafeMutablePointer<CFDate?>
) -> OSStatus {
    modificationDate.pointee = nil
    guard domain != .system else { return errSecItemNotFound }
    return trustSettingsCall {
        guard let entry = try store(domain).entries()[certRef.certificate] else { return errSecItemNotFound }
        modificationDate.pointee = entry.modificationDate as NSDate
        return errSecSuccess
    }
}

private func store(_ domain: SecTrustSettingsDomain) -> TrustSettingsStore {
    domain == .user ? TrustSettingsDomains.current.user : TrustSettingsDomains.current.administrator
}

/// Runs a settings call, its errors as Apple's statuses.
private func trustSettingsCall(_ body: () throws -> OSStatus) -> OSStatus {
    do {
        return try body()
    } catch let error as TrustError {
        switch error.code {
        case .invalidTrustSettings: return errSecParam
        case .corruptTrustSettings: return errSecInvalidTrustSettings
        case .trustSettingsPermissionDenied: return errSecWrPerm
        case .trustSettingsIO: return errSecIO
        default: return errSecInternalComponent
        }
    } catch {
        return errSecInternalComponent
    }
}

/// Apple's dictionaries for `settings`. Apple's dictionary holds one allowed error, so a constraint with several
/// becomes one dictionary per error, all but the last `.unspecified`: the same decision, as the allowed errors of
/// every applicable constraint up to the deciding one count.
private func settingsArray(_ settings: TrustSettings) -> NSArray {
    var dictionaries: [NSDictionary] = []
    for constraint in settings.constraints {
        let errors: [TrustFailureReason?] = constraint.allowedErrors.isEmpty ? [nil] : constraint.allowedErrors
        for (index, error) in errors.enumerated() {
            let dictionary = NSMutableDictionary()
            let result = index == errors.count - 1 ? constraint.result : .unspecified
            dictionary[kSecTrustSettingsResult] = NSNumber(value: result.rawValue)
            if let policy = constraint.policy {
                dictionary[kSecTrustSettingsPolicy] =
                    policy == .ssl ? SecPolicyCreateSSL(true, nil) : SecPolicyCreateBasicX509()
            }
            if let policyString = constraint.policyString { dictionary[kSecTrustSettingsPolicyString] = policyString }
            if let error { dictionary[kSecTrustSettingsAllowedError] = NSNumber(value: TrustCheck(error).status) }
            dictionaries.append(dictionary)
        }
    }
    return NSArray(array: dictionaries)
}

/// The settings a `SecTrustSettingsSetTrustSettings` argument describes; nil when it is not valid for `certificate`.
private func parseSettings(_ value: CFTypeRef?, for certificate: Certificate) -> TrustSettings? {
    let dictionaries: [Any]
    switch value {
    case nil: dictionaries = []
    case let array as NSArray: dictionaries = array.map { $0 }
    case let dictionary as NSDictionary: dictionaries = [dictionary]
    default: return nil
    }
    var constraints: [TrustSettings.Constraint] = []
    for element in dictionaries {
        guard let dictionary = element as? NSDictionary else { return nil }
        var policy: TrustSettings.Policy?
        var policyString: String?
        var allowed: [TrustFailureReason] = []
        var result: TrustSettings.Result = certificate.isSelfIssued ? .trustRoot : .trustAsRoot
        for (key, value) in dictionary {
            guard let key = key as? String else { return nil }
            switch key {
            case String(kSecTrustSettingsPolicy):
                guard let secPolicy = value as? SecPolicy else { return nil }
                switch secPolicy.kind {
                case .basicX509: policy = .basicX509
                case .ssl: policy = .ssl
                case .revocation: return nil
                }
            case String(kSecTrustSettingsPolicyString):
                guard let string = value as? String, !string.isEmpty else { return nil }
                policyString = string
            case String(kSecTrustSettingsAllowedError):
                guard let number = value as? NSNumber, let reason = TrustCheck.reason(for: OSStatus(truncatingIfNeeded: number.int64Value))
                else { return nil }
                allowed.append(reason)
            case String(kSecTrustSettingsResult):
                guard let number = value as? NSNumber, let raw = UInt32(exactly: number.int64Value),
                    let parsed = TrustSettings.Result(rawValue: raw)
                else { return nil }
                result = parsed
            case String(kSecTrustSettingsKeyUsage):
                guard let number = value as? NSNumber, UInt32(truncatingIfNeeded: number.int64Value) == SecTrustSettingsKeyUsage.useAny.rawValue
                else { return nil }
            default:
                return nil  // kSecTrustSettingsApplication included: there are no trusted-application objects here
            }
        }
        // A policy string without a policy is the SSL policy's hostname, as Apple reads it.
        if policyString != nil, policy == nil { policy = .ssl }
        guard
            let constraint = try? TrustSettings.Constraint(
                policy: policy, policyString: policyString, allowedErrors: allowed, result: result)
        else { return nil }
        constraints.append(constraint)
    }
    let settings = TrustSettings(constraints)
    guard (try? settings.validate(for: certificate)) != nil else { return nil }
    return settings
}
