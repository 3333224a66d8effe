public import Foundation

// macOS's CSSM-era calls of SecCertificate.h, SecIdentity.h, SecKey.h, SecPolicy.h and SecTrust.h (deprecated since
// macOS 10.7), with their CSSM types (CSecurityTypes' CSSMTypes.h). CSSM — modules with handles, CSP keys, access
// credentials, TP evidence — does not exist here: the calls that need it answer errSecUnimplemented and leave their
// out-parameters empty. What the rest of this library can give, they give: a certificate from its DER or its DER
// at a fixed address, its type, identity preferences, a trust's result and chain.

/// A certificate from a CSSM_DATA of DER (macOS).
/// - Parameters:
///   - type: `CSSM_CERT_X_509v1` … `v3` (1–3).
///   - encoding: `CSSM_CERT_ENCODING_DER` (3), or 0 (unknown: the bytes are read as DER).
/// - Returns: `errSecSuccess`; `errSecUnknownFormat` for bytes that are not one DER certificate; `errSecParam` for
///   another type or encoding (nothing is returned).
@discardableResult
public func SecCertificateCreateFromData(
    _ data: UnsafePointer<SecAsn1Item>, _ type: CSSM_CERT_TYPE, _ encoding: CSSM_CERT_ENCODING, _ certificate: UnsafeMutablePointer<SecCertificate?>
) -> OSStatus {
    certificate.pointee = nil
    guard (1...3).contains(type), encoding == 0 || encoding == CSSM_CERT_ENCODING(CSSM_CERT_ENCODING_DER) else { return errSecParam }
    let item = data.pointee
    guard item.Length <= 1 << 24, item.Length == 0 || item.Data != nil else { return errSecParam }
    let bytes = item.Data.map { Data(bytes: $0, count: item.Length) } ?? Data()
    guard let made = SecCertificateCreateWithData(nil, bytes as NSData) else { return errSecUnknownFormat }
    certificate.pointee = made
    return errSecSuccess
}

/// The certificate's DER, as a CSSM_DATA pointing at bytes the certificate keeps for as long as it lives (macOS).
@discardableResult
public func SecCertificateGetData(_ certificate: SecCertificate, _ data: CSSM_DATA_PTR) -> OSStatus {
    let bytes = certificate.fixedBytes.bytes(of: certificate.certificate.derEncoded)
    data.pointee = SecAsn1Item(Length: bytes.count, Data: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
    return errSecSuccess
}

/// The certificate's CSSM type: `CSSM_CERT_X_509v1`, `v2` or `v3` by its version (macOS).
@discardableResult
public func SecCertificateGetType(_ certificate: SecCertificate, _ certificateType: UnsafeMutablePointer<CSSM_CERT_TYPE>) -> OSStatus {
    certificateType.pointee = CSSM_CERT_TYPE(min(max(certificate.certificate.version, 1), 3))
    return errSecSuccess
}

/// CSSM's parsed subject (macOS): not made here; `errSecUnimplemented`, nil (``SecCertificateCopyNormalizedSubjectContent(_:_:)``
/// and ``SecCertificateCopyValues(_:_:_:)`` give the name).
@discardableResult
public func SecCertificateGetSubject(_ certificate: SecCertificate, _ subject: UnsafeMutablePointer<UnsafePointer<CSSM_X509_NAME>?>) -> OSStatus {
    subject.pointee = nil
    return errSecUnimplemented
}

/// CSSM's parsed issuer (macOS): `errSecUnimplemented`, nil, as ``SecCertificateGetSubject(_:_:)``.
@discardableResult
public func SecCertificateGetIssuer(_ certificate: SecCertificate, _ issuer: UnsafeMutablePointer<UnsafePointer<CSSM_X509_NAME>?>) -> OSStatus {
    issuer.pointee = nil
    return errSecUnimplemented
}

/// The certificate library handle (macOS): there are no CSSM modules here; `errSecUnimplemented`, 0.
@discardableResult
public func SecCertificateGetCLHandle(_ certificate: SecCertificate, _ clHandle: UnsafeMutablePointer<CSSM_CL_HANDLE>) -> OSStatus {
    clHandle.pointee = 0
    return errSecUnimplemented
}

/// CSSM's signature algorithm identifier (macOS): `errSecUnimplemented`, nil.
@discardableResult
public func SecCertificateGetAlgorithmID(
    _ certificate: SecCertificate, _ algid: UnsafeMutablePointer<UnsafePointer<SecAsn1AlgId>?>
) -> OSStatus {
    algid.pointee = nil
    return errSecUnimplemented
}

/// The identity preferred for `name` (macOS's older form of ``SecIdentityCopyPreferred(_:_:_:)``; the key usage
/// does not narrow it, as there).
/// - Returns: `errSecSuccess`, or `errSecItemNotFound` when none is set or its key is not in the keychains.
@discardableResult
public func SecIdentityCopyPreference(
    _ name: CFString, _ keyUsage: CSSM_KEYUSE, _ validIssuers: CFArray?, _ identity: UnsafeMutablePointer<SecIdentity?>
) -> OSStatus {
    identity.pointee = SecIdentityCopyPreferred(name, nil, validIssuers)
    return identity.pointee == nil ? errSecItemNotFound : errSecSuccess
}

/// Sets the identity preferred for `name` (macOS's older form of ``SecIdentitySetPreferred(_:_:_:)``).
@discardableResult
public func SecIdentitySetPreference(_ identity: SecIdentity, _ name: CFString, _ keyUsage: CSSM_KEYUSE) -> OSStatus {
    SecIdentitySetPreferred(identity, name, nil)
}

/// The key as a CSP key (macOS): keys here are not CSP keys; `errSecUnimplemented`, nil.
@discardableResult
public func SecKeyGetCSSMKey(_ key: SecKey, _ cssmKey: UnsafeMutablePointer<UnsafePointer<CSSM_KEY>?>) -> OSStatus {
    cssmKey.pointee = nil
    return errSecUnimplemented
}

/// The key's CSP handle (macOS): `errSecUnimplemented`, 0.
@discardableResult
public func SecKeyGetCSPHandle(_ keyRef: SecKey, _ cspHandle: UnsafeMutablePointer<CSSM_CSP_HANDLE>) -> OSStatus {
    cspHandle.pointee = 0
    return errSecUnimplemented
}

/// CSSM access credentials for an operation on the key (macOS): `errSecUnimplemented`, nil (a key's use is
/// governed by its item's access control list here, see `SecAccess`).
@discardableResult
public func SecKeyGetCredentials(
    _ keyRef: SecKey, _ operation: CSSM_ACL_AUTHORIZATION_TAG, _ credentialType: SecCredentialType,
    _ outCredentials: UnsafeMutablePointer<UnsafePointer<CSSM_ACCESS_CREDENTIALS>?>
) -> OSStatus {
    outCredentials.pointee = nil
    return errSecUnimplemented
}

/// The policy's CSSM OID (macOS): `errSecUnimplemented` (``SecPolicyCopyProperties(_:)``'s `kSecPolicyOid` names it).
@discardableResult
public func SecPolicyGetOID(_ policyRef: SecPolicy, _ oid: UnsafeMutablePointer<SecAsn1Oid>) -> OSStatus {
    oid.pointee = SecAsn1Oid(Length: 0, Data: nil)
    return errSecUnimplemented
}

/// The policy's CSSM value (macOS): `errSecUnimplemented` (``SecPolicyCopyProperties(_:)`` gives the properties).
@discardableResult
public func SecPolicyGetValue(_ policyRef: SecPolicy, _ value: UnsafeMutablePointer<SecAsn1Item>) -> OSStatus {
    value.pointee = SecAsn1Item(Length: 0, Data: nil)
    return errSecUnimplemented
}

/// Sets the policy's CSSM value (macOS): `errSecUnimplemented`, nothing changed (``SecPolicySetProperties(_:_:)``).
@discardableResult
public func SecPolicySetValue(_ policyRef: SecPolicy, _ value: UnsafePointer<SecAsn1Item>) -> OSStatus { errSecUnimplemented }

/// The trust policy module's handle (macOS): `errSecUnimplemented`, 0.
@discardableResult
public func SecPolicyGetTPHandle(_ policyRef: SecPolicy, _ tpHandle: UnsafeMutablePointer<CSSM_TP_HANDLE>) -> OSStatus {
    tpHandle.pointee = 0
    return errSecUnimplemented
}

/// CSSM trust-policy action parameters (macOS): `errSecUnimplemented`, nothing changed (``SecTrustSetOptions(_:_:)``
/// carries the allow-expired options).
@discardableResult
public func SecTrustSetParameters(_ trustRef: SecTrust, _ action: CSSM_TP_ACTION, _ actionData: CFData) -> OSStatus { errSecUnimplemented }

/// The last evaluation's result type and chain (macOS's older form of ``SecTrustGetTrustResult(_:_:)`` with
/// ``SecTrustCopyCertificateChain(_:)``); CSSM's per-certificate evidence is not made here: `statusChain` is nil
/// (``SecTrustCopyProperties(_:)`` and ``SecTrustCopyResult(_:)`` give each certificate's reasons).
/// - Returns: `errSecSuccess`, or `errSecTrustNotAvailable` before an evaluation.
@discardableResult
public func SecTrustGetResult(
    _ trustRef: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>?, _ certChain: UnsafeMutablePointer<CFArray?>?,
    _ statusChain: UnsafeMutablePointer<UnsafeMutablePointer<CSSM_TP_APPLE_EVIDENCE_INFO>?>?
) -> OSStatus {
    statusChain?.pointee = nil
    guard let evaluation = trustRef.lastEvaluation else {
        certChain?.pointee = nil
        return errSecTrustNotAvailable
    }
    result?.pointee = evaluation.result
    certChain?.pointee = NSArray(array: evaluation.chain.map(SecCertificate.init))
    return errSecSuccess
}

/// The trust policy module's raw result (macOS): `errSecUnimplemented`, nil (``SecTrustGetCssmResultCode(_:_:)``
/// gives its code).
@discardableResult
public func SecTrustGetCssmResult(_ trust: SecTrust, _ result: UnsafeMutablePointer<CSSM_TP_VERIFY_CONTEXT_RESULT_PTR?>) -> OSStatus {
    result.pointee = nil
    return errSecUnimplemented
}

/// The trust policy module's handle (macOS): `errSecUnimplemented`, 0.
@discardableResult
public func SecTrustGetTPHandle(_ trust: SecTrust, _ handle: UnsafeMutablePointer<CSSM_TP_HANDLE>) -> OSStatus {
    handle.pointee = 0
    return errSecUnimplemented
}
