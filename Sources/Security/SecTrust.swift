public import Foundation
import Synchronization
import Trust

// Apple's trust evaluation (<Security/SecTrust.h>) with the signatures Swift imports on Apple platforms, as a thin
// adapter over `Trust.TrustEvaluator`: a SecTrust holds the settings Apple's does, evaluates them with the
// idiomatic evaluator, and answers Apple's result types, status codes and dictionaries.

/// Core Foundation's absolute time: seconds since 2001-01-01 00:00:00 UTC.
public typealias CFAbsoluteTime = Double

/// The `Boolean` of Apple's C API, as Swift imports it (`var allowed: DarwinBoolean = false`).
public struct DarwinBoolean: ExpressibleByBooleanLiteral, Hashable, Sendable, CustomStringConvertible {
    /// The value as a Swift `Bool`.
    public var boolValue: Bool

    public init(_ value: Bool) { boolValue = value }
    public init(booleanLiteral value: Bool) { boolValue = value }
    public var description: String { boolValue.description }
}

/// macOS's name for a user's trust setting (Apple's `SecTrustUserSetting`): a result type.
public typealias SecTrustUserSetting = SecTrustResultType

/// The result of a trust evaluation, with Apple's raw values.
public enum SecTrustResultType: UInt32, Sendable, CustomStringConvertible {
    /// Not evaluated yet, or settings changed since.
    case invalid = 0
    /// Trusted because of an explicit setting: exceptions set with ``SecTrustSetExceptions(_:_:)``, or a chain
    /// ending at one of the administrator's anchors (the phone's configuration-profile roots).
    case proceed = 1
    /// Deprecated by Apple and never returned.
    case confirm = 2
    /// Explicitly distrusted by a user setting (there are no user trust settings yet: never returned).
    case deny = 3
    /// Trusted, with no user setting involved.
    case unspecified = 4
    /// Not trusted, for reasons a changed setting can fix (a date, a hostname, an anchor, a missing issuer).
    case recoverableTrustFailure = 5
    /// Not trusted, for a reason nothing can fix (a bad signature, a malformed certificate, a broken constraint).
    case fatalTrustFailure = 6
    /// The evaluation could not be run (a bad setup).
    case otherError = 7

    public var description: String {
        switch rawValue {
        case 0: "invalid"
        case 1: "proceed"
        case 2: "confirm"
        case 3: "deny"
        case 4: "unspecified"
        case 5: "recoverableTrustFailure"
        case 6: "fatalTrustFailure"
        default: "otherError"
        }
    }
}

/// macOS's trust options (`SecTrustSetOptions`), with Apple's values. Only the allow-expired options change the
/// evaluation; the others are accepted and stored.
public struct SecTrustOptionFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Expired and not-yet-valid certificates other than the root pass (CSSM_TP_ACTION_ALLOW_EXPIRED).
    public static let allowExpired = SecTrustOptionFlags(rawValue: 0x0000_0001)
    /// The leaf may be a CA (accepted, no effect yet).
    public static let leafIsCA = SecTrustOptionFlags(rawValue: 0x0000_0002)
    /// Fetch missing issuers from the network (accepted, no effect yet: there is no AIA fetching).
    public static let fetchIssuerFromNet = SecTrustOptionFlags(rawValue: 0x0000_0004)
    /// An expired or not-yet-valid root passes (CSSM_TP_ACTION_ALLOW_EXPIRED_ROOT).
    public static let allowExpiredRoot = SecTrustOptionFlags(rawValue: 0x0000_0008)
    /// Require a revocation check per certificate (accepted, no effect yet).
    public static let requireRevPerCert = SecTrustOptionFlags(rawValue: 0x0000_0010)
    /// Use trust settings (accepted, no effect: there are no user trust settings).
    public static let useTrustSettings = SecTrustOptionFlags(rawValue: 0x0000_0020)
    /// Trust self-signed certificates implicitly (accepted, no effect).
    public static let implicitAnchors = SecTrustOptionFlags(rawValue: 0x0000_0040)
}

/// The completion of ``SecTrustEvaluateAsyncWithError(_:_:_:)``: the trust, whether it is trusted, and the
/// error when it is not.
public typealias SecTrustWithErrorCallback = @Sendable (SecTrust, Bool, CFError?) -> Void

/// A trust evaluation (Apple's `SecTrustRef`): the certificates, policies, anchors and date to evaluate, and the
/// last result. Every function may be called from any thread: the settings and the result are behind a mutex,
/// and the evaluation itself runs outside it (so one trust evaluated from many threads does not serialize them).
public final class SecTrust: Sendable, CustomStringConvertible {
    struct Settings: Sendable {
        var certificates: [SecCertificate]
        var policies: [SecPolicy]
        /// Set by `SecTrustSetAnchorCertificates`; nil means the system's anchors.
        var customAnchors: [SecCertificate]?
        var anchorsOnly = true
        var verifyDate: Date?
        var networkFetchAllowed: Bool?
        /// Set by `SecTrustSetOCSPResponse`: DER OCSP responses stapled by the peer.
        var stapledOCSPResponses: [Data] = []
        var options: SecTrustOptionFlags = []
        var exceptions: TrustExceptions?
        /// Set by `SecTrustSetKeychains`: where missing intermediates are looked for; nil means the default
        /// keychain (and its search list), empty means none.
        var keychains: [SecKeychain]?
        /// Set by `SecTrustSetSignedCertificateTimestamps`: the SCTs the peer presented (kept with the trust;
        /// certificate transparency is not enforced here).
        var signedCertificateTimestamps: [Data] = []

        /// The `kSecRevocation…` flags of the revocation policies, or-ed (0 without one).
        var revocationFlags: CFOptionFlags { policies.compactMap(\.revocationFlags).reduce(0, |) }

        /// Whether the network may be used: the trust's setting, else Apple's default (allowed, unless a
        /// revocation policy disables network access).
        var isNetworkFetchAllowed: Bool {
            networkFetchAllowed ?? (revocationFlags & kSecRevocationNetworkAccessDisabled == 0)
        }
    }

    struct State: Sendable {
        var settings: Settings
        /// Bumped by every change of the settings, so that an evaluation of old settings is not kept.
        var generation = 0
        var evaluation: SecTrustEvaluation?
    }

    let state: Mutex<State>

    init(certificates: [SecCertificate], policies: [SecPolicy]) {
        state = Mutex(State(settings: Settings(certificates: certificates, policies: policies)))
    }

    var settings: Settings { state.withLock { $0.settings } }

    /// Changes the settings and forgets the result (the result is `.invalid` until the next evaluation).
    func change(_ body: (inout Settings) -> Void) {
        state.withLock {
            body(&$0.settings)
            $0.generation += 1
            $0.evaluation = nil
        }
    }

    /// The result of the last evaluation of the current settings, without evaluating; nil when there is none.
    var lastEvaluation: SecTrustEvaluation? { state.withLock { $0.evaluation } }

    /// The current result, evaluating first when there is none.
    func evaluated() -> SecTrustEvaluation {
        let (settings, generation, cached) = state.withLock { ($0.settings, $0.generation, $0.evaluation) }
        if let cached { return cached }
        let evaluation = SecTrustEvaluation(settings)
        state.withLock { if $0.generation == generation { $0.evaluation = evaluation } }
        return evaluation
    }

    public var description: String {
        let settings = self.settings
        return "<SecTrust \(settings.certificates.first?.certificate.subjectSummary ?? "") "
            + "\(settings.policies.map(\.description).joined(separator: ", "))>"
    }

    /// The certificates of `value`: one SecCertificate or an array of them; nil for anything else or none.
    static func certificates(_ value: Any) -> [SecCertificate]? {
        // A CFArray first, read in place: the usual argument, which the casts below bridged into a Swift array
        // (and a CFArray tried as a SecCertificate first) on every SecTrustCreate and SetAnchorCertificates.
        if let array = value as? NSArray { return array.count > 0 ? every(array, as: SecCertificate.self) : nil }
        if let certificate = value as? SecCertificate { return [certificate] }
        guard let array = value as? [Any], !array.isEmpty else { return nil }
        return every(array, as: SecCertificate.self)
    }

    /// The policies of `value`: nil means basic X.509; one SecPolicy or an array of them; nil for anything else.
    static func policies(_ value: Any?) -> [SecPolicy]? {
        guard let value else { return [SecPolicyCreateBasicX509()] }
        if let policy = value as? SecPolicy { return [policy] }
        guard let array = value as? [Any] else { return nil }
        return every(array, as: SecPolicy.self)
    }

    /// Every element of `elements` as a `T`; nil when one is not.
    private static func every<T>(_ elements: some Sequence<Any>, as type: T.Type) -> [T]? {
        var result: [T] = []
        result.reserveCapacity(elements.underestimatedCount)
        for element in elements {
            guard let typed = element as? T else { return nil }
            result.append(typed)
        }
        return result
    }
}

// MARK: Creating and configuring

/// Creates a trust for certificates and policies.
/// - Parameters:
///   - certificates: the certificate to evaluate (a SecCertificate), or an array of certificates: the leaf
///     first, then any certificates that may help build the chain, in any order (extra ones are harmless).
///   - policies: a SecPolicy, an array of them (all must pass), or nil for the basic X.509 policy.
///   - trust: on success, the new trust; nil on failure.
/// - Returns: `errSecSuccess`, or `errSecParam` when `certificates` or `policies` is anything else (an empty
///   array, an array with another type in it).
@discardableResult
public func SecTrustCreateWithCertificates(
    _ certificates: CFTypeRef, _ policies: CFTypeRef?, _ trust: UnsafeMutablePointer<SecTrust?>
) -> OSStatus {
    trust.pointee = nil
    guard let certificates = SecTrust.certificates(certificates), let policies = SecTrust.policies(policies) else {
        return errSecParam
    }
    trust.pointee = SecTrust(certificates: certificates, policies: policies)
    return errSecSuccess
}

/// Sets the anchors: from now on only these are trusted (until ``SecTrustSetAnchorCertificatesOnly(_:_:)`` with
/// false adds the system's back).
/// - Parameters:
///   - trust: the trust.
///   - anchorCertificates: an array of SecCertificates (empty: nothing is trusted); nil restores the system's
///     anchors.
/// - Returns: `errSecSuccess`, or `errSecParam` when the array holds anything other than certificates.
@discardableResult
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray?) -> OSStatus {
    var anchors: [SecCertificate]?
    if let anchorCertificates {
        anchors = []
        for element in anchorCertificates {
            guard let certificate = element as? SecCertificate else { return errSecParam }
            anchors?.append(certificate)
        }
    }
    trust.change {
        $0.customAnchors = anchors
        $0.anchorsOnly = true
    }
    return errSecSuccess
}

/// Whether only the anchors set by ``SecTrustSetAnchorCertificates(_:_:)`` are trusted (true, the default once
/// they are set) or the system's and the administrator's anchors as well (false).
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.change { $0.anchorsOnly = anchorCertificatesOnly }
    return errSecSuccess
}

/// The anchors set by ``SecTrustSetAnchorCertificates(_:_:)``.
/// - Parameters:
///   - trust: the trust.
///   - anchors: the custom anchors, or nil when none are set (the system's are used).
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustCopyCustomAnchorCertificates(_ trust: SecTrust, _ anchors: UnsafeMutablePointer<CFArray?>)
    -> OSStatus
{
    anchors.pointee = trust.settings.customAnchors.map { NSArray(array: $0) }
    return errSecSuccess
}

/// Sets the date the certificates are checked at (by default, the time of each evaluation).
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustSetVerifyDate(_ trust: SecTrust, _ verifyDate: CFDate) -> OSStatus {
    let date = Date(timeIntervalSinceReferenceDate: verifyDate.timeIntervalSinceReferenceDate)
    trust.change { $0.verifyDate = date }
    return errSecSuccess
}

/// The date the certificates are checked at: the one set, else the current time.
/// - Returns: seconds since 2001-01-01 UTC.
@discardableResult
public func SecTrustGetVerifyTime(_ trust: SecTrust) -> CFAbsoluteTime {
    (trust.settings.verifyDate ?? Date()).timeIntervalSinceReferenceDate
}

/// Replaces the policies.
/// - Parameters:
///   - trust: the trust.
///   - policies: a SecPolicy or an array of them.
/// - Returns: `errSecSuccess`, or `errSecParam` for anything else.
@discardableResult
public func SecTrustSetPolicies(_ trust: SecTrust, _ policies: CFTypeRef) -> OSStatus {
    guard let policies = SecTrust.policies(policies) else { return errSecParam }
    trust.change { $0.policies = policies }
    return errSecSuccess
}

/// The policies.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustCopyPolicies(_ trust: SecTrust, _ policies: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    policies.pointee = NSArray(array: trust.settings.policies)
    return errSecSuccess
}

/// Whether the evaluation may use the network: to download missing intermediates from AIA caIssuers URLs (after
/// the given certificates and the keychain's), and for revocation (OCSP responders and CRL distribution points of
/// a revocation policy).
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustSetNetworkFetchAllowed(_ trust: SecTrust, _ allowFetch: Bool) -> OSStatus {
    trust.change { $0.networkFetchAllowed = allowFetch }
    return errSecSuccess
}

/// Gives the evaluation OCSP responses stapled by the peer (a TLS server's status_request answer), used for the
/// leaf before any responder is asked, and even without a revocation policy.
/// - Parameters:
///   - responseData: one DER OCSP response (`CFData`) or an array of them; nil removes them.
/// - Returns: `errSecSuccess`, or `errSecParam` for anything else.
@discardableResult
public func SecTrustSetOCSPResponse(_ trust: SecTrust, _ responseData: CFTypeRef?) -> OSStatus {
    let responses: [Data]
    switch responseData {
    case nil: responses = []
    case let data as NSData: responses = [data.copiedBytes]
    case let array as NSArray:
        var collected: [Data] = []
        for element in array {
            guard let data = element as? NSData else { return errSecParam }
            collected.append(data.copiedBytes)
        }
        responses = collected
    default: return errSecParam
    }
    trust.change { $0.stapledOCSPResponses = responses }
    return errSecSuccess
}

/// Whether the evaluation may use the network: the value set, else Apple's default (allowed, unless a revocation
/// policy says `kSecRevocationNetworkAccessDisabled`).
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustGetNetworkFetchAllowed(_ trust: SecTrust, _ allowFetch: UnsafeMutablePointer<DarwinBoolean>)
    -> OSStatus
{
    allowFetch.pointee = DarwinBoolean(trust.settings.isNetworkFetchAllowed)
    return errSecSuccess
}

/// macOS's trust options: ``SecTrustOptionFlags/allowExpired`` and ``SecTrustOptionFlags/allowExpiredRoot``
/// make expired or not-yet-valid certificates pass (the desktop guide's `CSSM_TP_ACTION_ALLOW_EXPIRED |
/// CSSM_TP_ACTION_ALLOW_EXPIRED_ROOT` flow); the other flags are stored without effect.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustSetOptions(_ trustRef: SecTrust, _ options: SecTrustOptionFlags) -> OSStatus {
    trustRef.change { $0.options = options }
    return errSecSuccess
}

// MARK: Core Foundation time (the guide's listings set evaluation dates with these)

/// The current time, in seconds since 2001-01-01 00:00:00 UTC.
@discardableResult
public func CFAbsoluteTimeGetCurrent() -> CFAbsoluteTime { Date().timeIntervalSinceReferenceDate }

/// A date at an absolute time.
/// - Parameters:
///   - allocator: ignored (pass nil or `kCFAllocatorDefault`).
///   - at: seconds since 2001-01-01 00:00:00 UTC.
/// - Returns: the date.
@discardableResult
public func CFDateCreate(_ allocator: CFAllocator!, _ at: CFAbsoluteTime) -> CFDate! {
    NSDate(timeIntervalSinceReferenceDate: at)
}

// MARK: Keychains, system anchors, certificate transparency

/// Where a missing intermediate is looked for (macOS): a `SecKeychain`, an array of them, or nil for the default
/// keychain and its search list (the default); an empty array searches no keychain.
/// - Returns: `errSecSuccess`; `errSecParam` for anything else (nothing is changed).
@discardableResult
public func SecTrustSetKeychains(_ trust: SecTrust, _ keychainOrArray: CFTypeRef?) -> OSStatus {
    let keychains: [SecKeychain]?
    switch KeychainArgument(keychainOrArray) {
    case .defaultList: keychains = nil
    case .keychains(let list): keychains = list
    case .invalid: return errSecParam
    }
    trust.change { $0.keychains = keychains }
    return errSecSuccess
}

/// The system's anchor certificates (macOS): the system trust store's roots (Debian's `ca-certificates` bundle,
/// and the administrator's anchors), as ``SecTrustSetAnchorCertificates(_:_:)`` takes them.
/// - Parameters:
///   - anchors: on return, an array of ``SecCertificate``.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustCopyAnchorCertificates(_ anchors: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    anchors.pointee = NSArray(array: SystemAnchors.all.map(SecCertificate.init))
    return errSecSuccess
}

/// The signed certificate timestamps the peer presented (from the TLS extension or a stapled OCSP response), as
/// an array of CFData: kept with the trust; certificate transparency is not enforced here (no log list is
/// shipped), so they change no result.
/// - Returns: `errSecSuccess`; `errSecParam` when a member is not data (nothing is changed).
@discardableResult
public func SecTrustSetSignedCertificateTimestamps(_ trust: SecTrust, _ sctArray: CFArray?) -> OSStatus {
    var timestamps: [Data] = []
    for member in sctArray ?? NSArray() {
        guard let data = dataValue(member) else { return errSecParam }
        timestamps.append(data)
    }
    trust.change { $0.signedCertificateTimestamps = timestamps }
    return errSecSuccess
}
