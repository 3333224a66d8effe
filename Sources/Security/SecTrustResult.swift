import Certificates
public import Dispatch
public import Foundation
import NetworkFetch
import Trust

// Evaluating a SecTrust and reading its result: Apple's result types, errors, chain, dictionaries and exceptions.

// MARK: Keys

// nonisolated(unsafe): immutable NSString constants (Apple's values), never mutated.
/// ``SecTrustCopyResult(_:)``: when the evaluation ran (a CFDate).
nonisolated(unsafe) public let kSecTrustEvaluationDate: CFString = "TrustEvaluationDate"
/// ``SecTrustCopyResult(_:)``: the ``SecTrustResultType`` raw value (a CFNumber).
nonisolated(unsafe) public let kSecTrustResultValue: CFString = "TrustResultValue"
/// ``SecTrustCopyResult(_:)``: per certificate of the chain, a dictionary of its failed checks (name → false).
nonisolated(unsafe) public let kSecTrustResultDetails: CFString = "TrustResultDetails"
/// ``SecTrustCopyResult(_:)``: extended validation (never set: there is no EV policy).
nonisolated(unsafe) public let kSecTrustExtendedValidation: CFString = "TrustExtendedValidation"
/// ``SecTrustCopyResult(_:)``: the organization of an EV certificate (never set).
nonisolated(unsafe) public let kSecTrustOrganizationName: CFString = "Organization"
/// ``SecTrustCopyResult(_:)``: certificate transparency (never set: no CT checking).
nonisolated(unsafe) public let kSecTrustCertificateTransparency: CFString = "TrustCertificateTransparency"
/// ``SecTrustCopyResult(_:)``: whether revocation was checked, and until when the answer holds; certificate
/// transparency's allow list; qualified-certificate statements and QWAC validation (Apple's keys; not set here).
nonisolated(unsafe) public let kSecTrustRevocationChecked: CFString = "TrustRevocationChecked"
nonisolated(unsafe) public let kSecTrustRevocationValidUntilDate: CFString = "TrustExpirationDate"
nonisolated(unsafe) public let kSecTrustCertificateTransparencyWhiteList: CFString = "TrustCertificateTransparencyWhiteList"
nonisolated(unsafe) public let kSecTrustQCStatements: CFString = "TrustQCStatements"
nonisolated(unsafe) public let kSecTrustQWACValidation: CFString = "TrustQWACValidation"
/// ``SecTrustCopyProperties(_:)``: a certificate's title (its subject summary).
nonisolated(unsafe) public let kSecPropertyTypeTitle: CFString = "title"
/// ``SecTrustCopyProperties(_:)``: why a certificate failed.
nonisolated(unsafe) public let kSecPropertyTypeError: CFString = "error"
// The other keys and types of certificate property lists (SecCertificate.h, Apple's values).
nonisolated(unsafe) public let kSecPropertyKeyType: CFString = "type"
nonisolated(unsafe) public let kSecPropertyKeyLabel: CFString = "label"
nonisolated(unsafe) public let kSecPropertyKeyLocalizedLabel: CFString = "localized label"
nonisolated(unsafe) public let kSecPropertyKeyValue: CFString = "value"
nonisolated(unsafe) public let kSecPropertyTypeWarning: CFString = "warning"
nonisolated(unsafe) public let kSecPropertyTypeSuccess: CFString = "success"
nonisolated(unsafe) public let kSecPropertyTypeSection: CFString = "section"
nonisolated(unsafe) public let kSecPropertyTypeData: CFString = "data"
nonisolated(unsafe) public let kSecPropertyTypeString: CFString = "string"
nonisolated(unsafe) public let kSecPropertyTypeURL: CFString = "url"
nonisolated(unsafe) public let kSecPropertyTypeDate: CFString = "date"
nonisolated(unsafe) public let kSecPropertyTypeArray: CFString = "array"
nonisolated(unsafe) public let kSecPropertyTypeNumber: CFString = "number"

// MARK: Evaluating

/// Evaluates the trust (deprecated on Apple platforms in favour of ``SecTrustEvaluateWithError(_:_:)``, still
/// there; not marked deprecated here, so that code written for older SDKs builds with warnings as errors).
/// - Parameters:
///   - trust: the trust; a result already computed for the same settings is reused.
///   - result: the result type: `.unspecified` or `.proceed` when trusted, `.recoverableTrustFailure`,
///     `.fatalTrustFailure`, or `.otherError` when the settings cannot be evaluated.
/// - Returns: `errSecSuccess` whenever the evaluation ran, trusted or not.
@discardableResult
public func SecTrustEvaluate(_ trust: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>) -> OSStatus {
    result.pointee = trust.evaluated().result
    return errSecSuccess
}

/// Evaluates the trust.
/// - Parameters:
///   - trust: the trust.
///   - error: when not trusted, a CFError in `NSOSStatusErrorDomain` whose code is Apple's status for the first
///     failure (the first fatal one, else the first from the leaf up: `errSecCertificateExpired`,
///     `errSecNotTrusted`, `errSecHostNameMismatch`, `errSecCreateChainFailed`, `errSecInvalidSignature`, …) and
///     whose description names the certificate and the reason; nil when trusted.
/// - Returns: true when the result is `.unspecified` or `.proceed`.
@discardableResult
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    let evaluation = trust.evaluated()
    error?.pointee = evaluation.error
    return evaluation.error == nil
}

/// Evaluates the trust on another thread and calls `result` on `queue`.
/// - Parameters:
///   - trust: the trust.
///   - queue: where `result` is called.
///   - result: the trust, whether it is trusted, and the error as ``SecTrustEvaluateWithError(_:_:)`` gives it.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustEvaluateAsyncWithError(
    _ trust: SecTrust, _ queue: DispatchQueue, _ result: @escaping SecTrustWithErrorCallback
) -> OSStatus {
    // A task, not a dispatch queue, so that the caller's task-local default keychain (KeychainDefaults.withStore)
    // is the one searched for missing intermediates; on the network executor, since the evaluation is the
    // synchronous one and blocks its thread while it fetches, which must be neither one of the cooperative pool's
    // nor one the shared network executor needs.
    Task(executorPreference: NetworkExecutor.dedicated()) {
        let evaluation = trust.evaluated()
        let error = evaluation.error
        queue.async { result(trust, error == nil, error) }
    }
    return errSecSuccess
}

/// The result of the last evaluation, without evaluating.
/// - Parameters:
///   - trust: the trust.
///   - result: the result type; `.invalid` before the first evaluation and after any change of the settings.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustGetTrustResult(_ trust: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>) -> OSStatus {
    result.pointee = trust.lastEvaluation?.result ?? .invalid
    return errSecSuccess
}

// MARK: The chain

/// The number of certificates in the chain (evaluating first when needed, as Apple's does).
/// - Returns: the length of the chain, leaf to anchor (or as far as it was built).
@discardableResult
public func SecTrustGetCertificateCount(_ trust: SecTrust) -> CFIndex { trust.evaluated().chain.count }

/// One certificate of the chain: index 0 is the leaf (no evaluation needed); the others evaluate first.
/// Deprecated on Apple platforms for ``SecTrustCopyCertificateChain(_:)`` (not marked here, see above).
/// - Returns: the certificate, or nil for an index outside the chain.
@discardableResult
public func SecTrustGetCertificateAtIndex(_ trust: SecTrust, _ ix: CFIndex) -> SecCertificate? {
    if ix == 0 { return trust.settings.certificates[0] }  // [0]: a trust always has its leaf
    let chain = trust.evaluated().chain
    return chain.indices.contains(ix) ? SecCertificate(chain[ix]) : nil
}

/// The chain, leaf to anchor (or as far as it was built), evaluating first when needed.
/// - Returns: an array of SecCertificates.
@discardableResult
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? {
    NSArray(array: trust.evaluated().chain.map(SecCertificate.init))
}

/// The leaf's public key.
/// - Returns: the key, or nil when its type is not supported.
@discardableResult
public func SecTrustCopyKey(_ trust: SecTrust) -> SecKey? {
    SecCertificateCopyKey(trust.settings.certificates[0])  // [0]: a trust always has its leaf
}

/// The leaf's public key (Apple's older, deprecated name for ``SecTrustCopyKey(_:)``; not marked here).
@discardableResult
public func SecTrustCopyPublicKey(_ trust: SecTrust) -> SecKey? { SecTrustCopyKey(trust) }

// MARK: Result dictionaries

/// The result of the evaluation (evaluating first when needed): `kSecTrustEvaluationDate`,
/// `kSecTrustResultValue` and `kSecTrustResultDetails` (per certificate of the chain, its failed checks, each
/// mapped to false, named as Apple's SecPolicyChecks: `TemporalValidity`, `AnchorTrusted`, `MissingIntermediate`,
/// `SSLHostname`, …).
/// - Returns: the dictionary.
@discardableResult
public func SecTrustCopyResult(_ trust: SecTrust) -> CFDictionary? {
    let evaluation = trust.evaluated()
    let details = evaluation.reasons.map { reasons in
        NSDictionary(
            dictionary: Dictionary(reasons.map { (TrustCheck($0).name, kCFBooleanFalse!) }) { first, _ in first })
    }
    return NSDictionary(dictionary: [
        kSecTrustEvaluationDate as String: NSDate(
            timeIntervalSinceReferenceDate: evaluation.evaluationDate.timeIntervalSinceReferenceDate),
        kSecTrustResultValue as String: NSNumber(value: evaluation.result.rawValue),
        kSecTrustResultDetails as String: NSArray(array: details),
    ])
}

/// Per certificate of the chain (evaluating first when needed), a dictionary: `kSecPropertyTypeTitle` its subject
/// summary and, when it fails, `kSecPropertyTypeError` the reason (as the error of
/// ``SecTrustEvaluateWithError(_:_:)`` words it).
/// - Returns: the array.
@discardableResult
public func SecTrustCopyProperties(_ trust: SecTrust) -> CFArray? {
    let evaluation = trust.evaluated()
    let properties = zip(evaluation.chain, evaluation.reasons).map { certificate, reasons in
        let dictionary = NSMutableDictionary()
        dictionary[kSecPropertyTypeTitle] = NSString(string: certificate.subjectSummary ?? "")
        if let reason = reasons.first(where: \.isFatal) ?? reasons.first {
            let check = TrustCheck(reason)
            dictionary[kSecPropertyTypeError] = NSString(
                string: "“\(certificate.subjectSummary ?? "")” certificate \(check.message)")
        }
        return dictionary
    }
    return NSArray(array: properties)
}

// MARK: Exceptions

/// The exceptions that would make the current failures pass (evaluating first when needed): an opaque CFData
/// recording each chain certificate's SHA-1 and its recoverable failures. Give it to
/// ``SecTrustSetExceptions(_:_:)`` (on this trust or a later one for the same leaf): the same failures then give
/// `.proceed`; a new failure, or a fatal one, is not covered.
/// - Returns: the exceptions.
@discardableResult
public func SecTrustCopyExceptions(_ trust: SecTrust) -> CFData? {
    let evaluation = trust.evaluated()
    return NSData(data: TrustExceptions(chain: evaluation.chain, reasons: evaluation.reasons).encoded)
}

/// Sets exceptions from ``SecTrustCopyExceptions(_:)`` (the result becomes `.invalid` until evaluated again).
/// - Parameters:
///   - trust: the trust.
///   - exceptions: the exceptions, or nil to remove them.
/// - Returns: true when the exceptions are for this trust's leaf; false (and no exceptions kept) when they are
///   for another leaf, are not exceptions, or are nil.
@discardableResult
public func SecTrustSetExceptions(_ trust: SecTrust, _ exceptions: CFData?) -> Bool {
    let decoded = exceptions.flatMap { TrustExceptions($0.copiedBytes) }
    let leaf = trust.settings.certificates[0].certificate  // [0]: a trust always has its leaf
    let applies = decoded?.isFor(leaf) ?? false
    trust.change { $0.exceptions = applies ? decoded : nil }
    return applies
}

/// The callback of ``SecTrustEvaluateAsync(_:_:_:)``: the trust and its result type.
public typealias SecTrustCallback = @Sendable (SecTrust, SecTrustResultType) -> Void

/// Evaluates the trust on another thread and calls `result` on `queue` with the result type (Apple's deprecated
/// form of ``SecTrustEvaluateAsyncWithError(_:_:_:)``).
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustEvaluateAsync(_ trust: SecTrust, _ queue: DispatchQueue, _ result: @escaping SecTrustCallback) -> OSStatus {
    Task(executorPreference: NetworkExecutor.dedicated()) {
        let type = trust.evaluated().result
        queue.async { result(trust, type) }
    }
    return errSecSuccess
}

/// The status of the last evaluation as macOS's trust policy module reported it (macOS): `errSecSuccess` when
/// trusted, else the code of ``SecTrustEvaluateWithError(_:_:)``'s error (Apple's CSSM trust codes are these same
/// `errSec…` values, -67xxx).
/// - Parameters:
///   - resultCode: on return, the code.
/// - Returns: `errSecSuccess`, or `errSecTrustNotAvailable` when the trust has not been evaluated since its last
///   change.
@discardableResult
public func SecTrustGetCssmResultCode(_ trust: SecTrust, _ resultCode: UnsafeMutablePointer<OSStatus>) -> OSStatus {
    guard let evaluation = trust.lastEvaluation else { return errSecTrustNotAvailable }
    resultCode.pointee = evaluation.error.map { OSStatus(truncatingIfNeeded: CFErrorGetCode($0)) } ?? errSecSuccess
    return errSecSuccess
}
