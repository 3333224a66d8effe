public import Foundation
import Synchronization
import Trust

// Apple's policies (<Security/SecPolicy.h>) with the signatures Swift imports on Apple platforms: what a
// certificate is trusted for, as an object a SecTrust evaluates against. Each maps onto a `Trust.TrustPolicy`.

/// Core Foundation's option flags.
public typealias CFOptionFlags = UInt

// MARK: Revocation flags

/// Check revocation with OCSP: the stapled response, then the certificate's AIA responder.
public let kSecRevocationOCSPMethod: CFOptionFlags = 1 << 0
/// Check revocation with CRLs fetched from the certificate's distribution point (cached until nextUpdate).
public let kSecRevocationCRLMethod: CFOptionFlags = 1 << 1
/// Prefer CRLs over OCSP when both are available.
public let kSecRevocationPreferCRL: CFOptionFlags = 1 << 2
/// Fail unless a positive revocation response is obtained for every certificate (hard fail).
public let kSecRevocationRequirePositiveResponse: CFOptionFlags = 1 << 3
/// Never use the network for revocation.
public let kSecRevocationNetworkAccessDisabled: CFOptionFlags = 1 << 4
/// OCSP or CRL, whichever is available.
public let kSecRevocationUseAnyAvailableMethod: CFOptionFlags = kSecRevocationOCSPMethod | kSecRevocationCRLMethod

// MARK: Property keys and policy identifiers

// nonisolated(unsafe): immutable NSString constants (Apple's values), never mutated.
/// The policy's object identifier (one of the `kSecPolicyApple…` values) in ``SecPolicyCopyProperties(_:)``.
nonisolated(unsafe) public let kSecPolicyOid: CFString = "SecPolicyOid"
/// The SSL policy's hostname.
nonisolated(unsafe) public let kSecPolicyName: CFString = "SecPolicyName"
/// `kCFBooleanTrue` for a client SSL policy.
nonisolated(unsafe) public let kSecPolicyClient: CFString = "SecPolicyClient"
/// The revocation policy's flags (a CFNumber).
nonisolated(unsafe) public let kSecPolicyRevocationFlags: CFString = "SecPolicyRevocationFlags"
/// `SecPolicyCreateBasicX509`'s identifier.
nonisolated(unsafe) public let kSecPolicyAppleX509Basic: CFString = "1.2.840.113635.100.1.2"
/// `SecPolicyCreateSSL`'s identifier.
nonisolated(unsafe) public let kSecPolicyAppleSSL: CFString = "1.2.840.113635.100.1.3"
/// `SecPolicyCreateRevocation`'s identifier.
nonisolated(unsafe) public let kSecPolicyAppleRevocation: CFString = "1.2.840.113635.100.1.21"
/// The Passbook signing policy's team identifier.
nonisolated(unsafe) public let kSecPolicyTeamIdentifier: CFString = "SecPolicyTeamIdentifier"
// Apple's other policy identifiers (its SecPolicy.list): named so Apple code compiles and can compare a policy's
// `kSecPolicyOid` with them; this library creates the X.509 basic, SSL and revocation policies only.
nonisolated(unsafe) public let kSecPolicyAppleSMIME: CFString = "1.2.840.113635.100.1.8"
nonisolated(unsafe) public let kSecPolicyAppleEAP: CFString = "1.2.840.113635.100.1.9"
nonisolated(unsafe) public let kSecPolicyAppleIPsec: CFString = "1.2.840.113635.100.1.11"
nonisolated(unsafe) public let kSecPolicyAppleiChat: CFString = "1.2.840.113635.100.1.12"
nonisolated(unsafe) public let kSecPolicyApplePKINITClient: CFString = "1.2.840.113635.100.1.14"
nonisolated(unsafe) public let kSecPolicyApplePKINITServer: CFString = "1.2.840.113635.100.1.15"
nonisolated(unsafe) public let kSecPolicyAppleCodeSigning: CFString = "1.2.840.113635.100.1.16"
nonisolated(unsafe) public let kSecPolicyAppleIDValidation: CFString = "1.2.840.113635.100.1.18"
nonisolated(unsafe) public let kSecPolicyMacAppStoreReceipt: CFString = "1.2.840.113635.100.1.19"
nonisolated(unsafe) public let kSecPolicyAppleTimeStamping: CFString = "1.2.840.113635.100.1.20"
nonisolated(unsafe) public let kSecPolicyApplePassbookSigning: CFString = "1.2.840.113635.100.1.22"
nonisolated(unsafe) public let kSecPolicyApplePayIssuerEncryption: CFString = "1.2.840.113635.100.1.39"
nonisolated(unsafe) public let kSecPolicyAppleSSLServer: CFString = "1.2.840.113635.100.1.3.1"
nonisolated(unsafe) public let kSecPolicyAppleSSLClient: CFString = "1.2.840.113635.100.1.3.2"
nonisolated(unsafe) public let kSecPolicyAppleEAPServer: CFString = "1.2.840.113635.100.1.9.1"
nonisolated(unsafe) public let kSecPolicyAppleEAPClient: CFString = "1.2.840.113635.100.1.9.2"
nonisolated(unsafe) public let kSecPolicyAppleIPSecServer: CFString = "1.2.840.113635.100.1.11.1"
nonisolated(unsafe) public let kSecPolicyAppleIPSecClient: CFString = "1.2.840.113635.100.1.11.2"
// Key usages for SecPolicyCreateWithProperties (macOS).
nonisolated(unsafe) public let kSecPolicyKU_DigitalSignature: CFString = "CE_KU_DigitalSignature"
nonisolated(unsafe) public let kSecPolicyKU_NonRepudiation: CFString = "CE_KU_NonRepudiation"
nonisolated(unsafe) public let kSecPolicyKU_KeyEncipherment: CFString = "CE_KU_KeyEncipherment"
nonisolated(unsafe) public let kSecPolicyKU_DataEncipherment: CFString = "CE_KU_DataEncipherment"
nonisolated(unsafe) public let kSecPolicyKU_KeyAgreement: CFString = "CE_KU_KeyAgreement"
nonisolated(unsafe) public let kSecPolicyKU_KeyCertSign: CFString = "CE_KU_KeyCertSign"
nonisolated(unsafe) public let kSecPolicyKU_CRLSign: CFString = "CE_KU_CRLSign"
nonisolated(unsafe) public let kSecPolicyKU_EncipherOnly: CFString = "CE_KU_EncipherOnly"
nonisolated(unsafe) public let kSecPolicyKU_DecipherOnly: CFString = "CE_KU_DecipherOnly"

/// A trust policy (Apple's `SecPolicyRef`): immutable once created.
public final class SecPolicy: Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case basicX509
        case ssl(server: Bool, hostname: String?)
        case revocation(CFOptionFlags)
    }

    /// What the policy checks; changed only by ``SecPolicySetProperties(_:_:)`` (macOS lets an application rename
    /// an SSL policy's host after creating it).
    private let state: Mutex<Kind>
    var kind: Kind { state.withLock { $0 } }

    init(_ kind: Kind) { state = Mutex(kind) }

    func replaceKind(_ kind: Kind) { state.withLock { $0 = kind } }

    /// The evaluator's policy; nil for the revocation policy, which adds a revocation check to the others.
    var trustPolicy: TrustPolicy? {
        switch kind {
        case .basicX509: .basicX509
        case .ssl(true, let hostname): .sslServer(hostname: hostname)
        case .ssl(false, _): .sslClient
        case .revocation: nil
        }
    }

    /// The SSL server policy's hostname, if any.
    var hostname: String? {
        if case .ssl(true, let hostname) = kind { return hostname }
        return nil
    }

    /// The revocation flags, nil for the other policies.
    var revocationFlags: CFOptionFlags? {
        if case .revocation(let flags) = kind { return flags }
        return nil
    }

    public static func == (lhs: SecPolicy, rhs: SecPolicy) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    public var description: String {
        switch kind {
        case .basicX509: "<SecPolicy: basicX509>"
        case .ssl(let server, let hostname):
            "<SecPolicy: \(server ? "sslServer" : "sslClient")\(hostname.map { " \($0)" } ?? "")>"
        case .revocation(let flags): "<SecPolicy: revocation \(flags)>"
        }
    }
}

/// The basic X.509 policy: RFC 5280 path validation (signatures, validity, basic constraints, key usage of the
/// CAs, name constraints, critical extensions) and nothing more.
/// - Returns: the policy.
@discardableResult
public func SecPolicyCreateBasicX509() -> SecPolicy { SecPolicy(.basicX509) }

/// The SSL policy: basic X.509, plus the serverAuth (or clientAuth) extended key usage on the leaf and the CAs
/// and the CA/Browser Forum's strict profile; for a server, the leaf's names must match `hostname` (RFC 6125).
/// - Parameters:
///   - server: true to evaluate a server's certificate, false a client's (then `hostname` is ignored).
///   - hostname: the server's DNS name or IP address; nil checks no name. A hostname that is not a DNS name or
///     an IP address matches no certificate (a recoverable hostname mismatch, as Apple's).
/// - Returns: the policy.
@discardableResult
public func SecPolicyCreateSSL(_ server: Bool, _ hostname: CFString?) -> SecPolicy {
    SecPolicy(.ssl(server: server, hostname: server ? hostname.map { String($0) } : nil))
}

/// The revocation policy, added to another policy's evaluation.
///
/// Every certificate below the anchor is checked: OCSP (a stapled response from `SecTrustSetOCSPResponse`, then
/// the AIA responder over HTTP) preferred, CRLs from the distribution point as the fallback
/// (`kSecRevocationPreferCRL` swaps them); fetches time out after 5 seconds. Soft-fail, as Apple's: a status
/// that cannot be learned passes, unless `kSecRevocationRequirePositiveResponse` makes it a recoverable
/// `errSecIncompleteCertRevocationCheck`; a revoked certificate is fatal (`errSecCertificateRevoked`).
/// `kSecRevocationNetworkAccessDisabled` (or `SecTrustSetNetworkFetchAllowed(false)`) leaves only stapled
/// responses and cached CRLs.
/// - Parameter revocationFlags: `kSecRevocation…` flags, or-ed.
/// - Returns: the policy, or nil when no method flag (OCSP or CRL) is given.
@discardableResult
public func SecPolicyCreateRevocation(_ revocationFlags: CFOptionFlags) -> SecPolicy? {
    guard revocationFlags & kSecRevocationUseAnyAvailableMethod != 0 else { return nil }
    return SecPolicy(.revocation(revocationFlags))
}

/// The policy's properties: `kSecPolicyOid` (the policy identifier), and for SSL `kSecPolicyName` (the hostname,
/// when one was given) and `kSecPolicyClient` (`kCFBooleanTrue` for a client policy); for revocation
/// `kSecPolicyRevocationFlags`.
/// - Parameter policyRef: the policy.
/// - Returns: the properties.
@discardableResult
public func SecPolicyCopyProperties(_ policyRef: SecPolicy) -> CFDictionary {
    let properties = NSMutableDictionary()
    switch policyRef.kind {
    case .basicX509:
        properties[kSecPolicyOid] = kSecPolicyAppleX509Basic
    case .ssl(let server, let hostname):
        properties[kSecPolicyOid] = kSecPolicyAppleSSL
        if let hostname { properties[kSecPolicyName] = NSString(string: hostname) }
        if !server { properties[kSecPolicyClient] = kCFBooleanTrue }
    case .revocation(let flags):
        properties[kSecPolicyOid] = kSecPolicyAppleRevocation
        properties[kSecPolicyRevocationFlags] = NSNumber(value: flags)
    }
    return properties
}

/// A policy from its identifier and properties (Apple's `SecPolicyCreateWithProperties`).
/// - Parameters:
///   - policyIdentifier: `kSecPolicyAppleX509Basic`, `kSecPolicyAppleSSL` (server, or client with `kSecPolicyClient`
///     true), `kSecPolicyAppleSSLServer`, `kSecPolicyAppleSSLClient`, or `kSecPolicyAppleRevocation`.
///   - properties: `kSecPolicyName` (an SSL server's hostname), `kSecPolicyClient` (a boolean),
///     `kSecPolicyRevocationFlags` (a number; default `kSecRevocationUseAnyAvailableMethod`).
/// - Returns: the policy; nil for another identifier (the S/MIME, EAP, IPsec, code-signing and Apple-service
///   policies are not evaluated here, see docs/certificates-and-trust.md), or a property of the wrong type.
@discardableResult
public func SecPolicyCreateWithProperties(_ policyIdentifier: CFTypeRef, _ properties: CFDictionary?) -> SecPolicy? {
    guard let identifier = stringValue(policyIdentifier) else { return nil }
    return policyKind(identifier, properties).map(SecPolicy.init)
}

/// A policy from its identifier alone (Apple's deprecated `SecPolicyCreateWithOID`): as
/// ``SecPolicyCreateWithProperties(_:_:)`` with no properties.
@discardableResult
public func SecPolicyCreateWithOID(_ policyOID: CFTypeRef) -> SecPolicy? {
    SecPolicyCreateWithProperties(policyOID, nil)
}

/// Changes a policy's properties (macOS): `kSecPolicyName` and `kSecPolicyClient` of an SSL policy,
/// `kSecPolicyRevocationFlags` of a revocation policy; a `kSecPolicyOid` other than the policy's own is refused.
/// - Returns: `errSecSuccess`; `errSecParam` for a property of the wrong type, another identifier or a property
///   the policy does not have (nothing is changed).
@discardableResult
public func SecPolicySetProperties(_ policyRef: SecPolicy, _ properties: CFDictionary) -> OSStatus {
    let current = SecPolicyCopyProperties(policyRef)
    guard let identifier = stringValue(current[kSecPolicyOid]) else { return errSecParam }
    if let asked = properties[kSecPolicyOid] {
        guard stringValue(asked) == identifier else { return errSecParam }
    }
    let merged = NSMutableDictionary()
    for case (let key as NSString, let value) in current { merged[key] = value }
    for case (let key as NSString, let value) in properties { merged[key] = value }
    guard let kind = policyKind(identifier, merged) else { return errSecParam }
    policyRef.replaceKind(kind)
    return errSecSuccess
}

private func policyKind(_ identifier: String, _ properties: CFDictionary?) -> SecPolicy.Kind? {
    let properties = properties ?? NSDictionary()
    var name: String?
    if let value = properties[kSecPolicyName] {
        guard let text = stringValue(value) else { return nil }
        name = text
    }
    var client = false
    if let value = properties[kSecPolicyClient] {
        guard let flag = value as? Bool ?? (value as? NSNumber)?.boolValue else { return nil }
        client = flag
    }
    switch identifier {
    case String(kSecPolicyAppleX509Basic):
        return .basicX509
    case String(kSecPolicyAppleSSL):
        return .ssl(server: !client, hostname: client ? nil : name)
    case String(kSecPolicyAppleSSLServer):
        return .ssl(server: true, hostname: name)
    case String(kSecPolicyAppleSSLClient):
        return .ssl(server: false, hostname: nil)
    case String(kSecPolicyAppleRevocation):
        var flags = kSecRevocationUseAnyAvailableMethod
        if let value = properties[kSecPolicyRevocationFlags] {
            guard let number = value as? NSNumber else { return nil }
            flags = CFOptionFlags(number.uintValue)
        }
        return flags & kSecRevocationUseAnyAvailableMethod == 0 ? nil : .revocation(flags)
    default:
        return nil
    }
}
