public import Foundation

// The 2009 SecKey API (iPhone OS 2.0): SecKeyGeneratePair, SecKeyEncrypt/Decrypt and SecKeyRawSign/RawVerify
// with SecPadding and caller buffers. As in Apple's SecKey.m, each call maps its padding to a SecKeyAlgorithm
// and runs the modern function: an unknown padding is errSecParam, an output longer than the caller's buffer is
// errSecParam ("buffer too small"), and a signature that does not verify is errSSLCrypto (the legacy code),
// not errSecVerifyFailed.

/// Padding of the 2009 calls (Apple's CF_OPTIONS values).
public struct SecPadding: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let PKCS1 = SecPadding(rawValue: 1)
    public static let OAEP = SecPadding(rawValue: 2)
    public static let sigRaw = SecPadding(rawValue: 0x4000)
    public static let PKCS1MD2 = SecPadding(rawValue: 0x8000)
    public static let PKCS1MD5 = SecPadding(rawValue: 0x8001)
    public static let PKCS1SHA1 = SecPadding(rawValue: 0x8002)
    public static let PKCS1SHA224 = SecPadding(rawValue: 0x8003)
    public static let PKCS1SHA256 = SecPadding(rawValue: 0x8004)
    public static let PKCS1SHA384 = SecPadding(rawValue: 0x8005)
    public static let PKCS1SHA512 = SecPadding(rawValue: 0x8006)
}

// The C names, for code that spells them so.
public let kSecPaddingNone = SecPadding(rawValue: 0)
public let kSecPaddingPKCS1 = SecPadding.PKCS1
public let kSecPaddingOAEP = SecPadding.OAEP
public let kSecPaddingSigRaw = SecPadding.sigRaw
public let kSecPaddingPKCS1MD2 = SecPadding.PKCS1MD2
public let kSecPaddingPKCS1MD5 = SecPadding.PKCS1MD5
public let kSecPaddingPKCS1SHA1 = SecPadding.PKCS1SHA1
public let kSecPaddingPKCS1SHA224 = SecPadding.PKCS1SHA224
public let kSecPaddingPKCS1SHA256 = SecPadding.PKCS1SHA256
public let kSecPaddingPKCS1SHA384 = SecPadding.PKCS1SHA384
public let kSecPaddingPKCS1SHA512 = SecPadding.PKCS1SHA512

/// SecureTransport's errSSLCrypto, which the legacy verify returns for a bad signature.
private let legacyVerifyFailed: OSStatus = -9809

/// Generates a key pair; permanent keys (kSecAttrIsPermanent, top level or in kSecPrivateKeyAttrs /
/// kSecPublicKeyAttrs) are added to the default keychain.
/// - Returns: `errSecSuccess`, `errSecParam` (missing or bad type or size), or the keychain's status.
@discardableResult
public func SecKeyGeneratePair(
    _ parameters: CFDictionary, _ publicKey: UnsafeMutablePointer<SecKey?>?, _ privateKey: UnsafeMutablePointer<SecKey?>?
) -> OSStatus {
    publicKey?.pointee = nil
    privateKey?.pointee = nil
    var error: Unmanaged<CFError>?
    guard let generated = SecKeyCreateRandomKey(parameters, &error) else {
        return OSStatus(truncatingIfNeeded: error?.takeRetainedValue().code ?? Int(errSecInternalComponent))
    }
    guard let request = try? KeyParameters(parameters, forCreation: true), let copy = SecKeyCopyPublicKey(generated) else {
        return errSecInternalComponent
    }
    let pair = SecKey(copy.key, applicationTag: request.publicSide.tag, label: request.publicSide.label)
    publicKey?.pointee = pair
    privateKey?.pointee = generated
    return errSecSuccess
}

private func signatureAlgorithm(_ key: SecKey, _ padding: SecPadding, _ length: Int) -> SecKeyAlgorithm? {
    if key.key.type == .rsa {
        switch padding.rawValue {
        case 0: return .rsaSignatureRaw
        case 1: return .rsaSignatureDigestPKCS1v15Raw
        case 0x8002: return .rsaSignatureDigestPKCS1v15SHA1
        case 0x8003: return .rsaSignatureDigestPKCS1v15SHA224
        case 0x8004: return .rsaSignatureDigestPKCS1v15SHA256
        case 0x8005: return .rsaSignatureDigestPKCS1v15SHA384
        case 0x8006: return .rsaSignatureDigestPKCS1v15SHA512
        default: return nil
        }
    }
    if padding == .sigRaw { return .ecdsaSignatureRFC4754 }
    if padding == .PKCS1 {
        switch length {
        case 20: return .ecdsaSignatureDigestX962SHA1
        case 28: return .ecdsaSignatureDigestX962SHA224
        case 32: return .ecdsaSignatureDigestX962SHA256
        case 48: return .ecdsaSignatureDigestX962SHA384
        case 64: return .ecdsaSignatureDigestX962SHA512
        default: break
        }
    }
    // Apple: "previous SecECKey implementation really considered anything else than SigRaw (incl. None!) as
    // PKCS1 (i.e. x962)".
    return .ecdsaSignatureDigestX962
}

private func encryptionAlgorithm(_ key: SecKey, _ padding: SecPadding) -> SecKeyAlgorithm? {
    guard key.key.type == .rsa else { return nil }
    switch padding.rawValue {
    case 0: return .rsaEncryptionRaw
    case 1: return .rsaEncryptionPKCS1
    case 2: return .rsaEncryptionOAEPSHA1
    default: return nil
    }
}

/// Runs a modern call and copies its output into the caller's buffer, as Apple's SecKeyPerformLegacyOperation.
private func legacy(
    _ output: UnsafeMutablePointer<UInt8>?, _ outputLength: UnsafeMutablePointer<Int>?,
    stripLeadingZeros: Bool = false, _ operation: (UnsafeMutablePointer<Unmanaged<CFError>?>) -> CFData?
) -> OSStatus {
    var error: Unmanaged<CFError>?
    guard let result = operation(&error) else {
        let status = OSStatus(truncatingIfNeeded: error?.takeRetainedValue().code ?? Int(errSecInternalComponent))
        return status == errSecVerifyFailed ? legacyVerifyFailed : status
    }
    var bytes = result.copiedBytes
    if stripLeadingZeros, let first = bytes.firstIndex(where: { $0 != 0 }) {
        bytes = bytes[first...]
    } else if stripLeadingZeros {
        bytes = Data()
    }
    guard let outputLength else { return errSecParam }
    guard bytes.count <= outputLength.pointee else { return errSecParam }  // Apple: "buffer too small"
    guard let output else { return errSecParam }
    bytes.copyBytes(to: output, count: bytes.count)
    outputLength.pointee = bytes.count
    return errSecSuccess
}

private func data(_ pointer: UnsafePointer<UInt8>?, _ length: Int) -> CFData? {
    guard length >= 0 else { return nil }
    guard let pointer else { return length == 0 ? NSData() : nil }
    return NSData(bytes: pointer, length: length)
}

/// Encrypts with a public (or private) RSA key.
/// - Parameters:
///   - padding: `kSecPaddingNone` (raw), `kSecPaddingPKCS1`, `kSecPaddingOAEP` (SHA-1).
///   - cipherTextLen: in: the buffer's size; out: the ciphertext's (the modulus size).
/// - Returns: `errSecSuccess`, or `errSecParam` (another padding or an EC key, plaintext too long for the
///   modulus, buffer too small).
@discardableResult
public func SecKeyEncrypt(
    _ key: SecKey, _ padding: SecPadding, _ plainText: UnsafePointer<UInt8>, _ plainTextLen: Int,
    _ cipherText: UnsafeMutablePointer<UInt8>, _ cipherTextLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    guard let algorithm = encryptionAlgorithm(key, padding), let input = data(plainText, plainTextLen) else { return errSecParam }
    return legacy(cipherText, cipherTextLen) { SecKeyCreateEncryptedData(key, algorithm, input, $0) }
}

/// Decrypts with a private RSA key. With `kSecPaddingNone` the leading zero bytes of the block are removed.
/// - Returns: `errSecSuccess`, or `errSecParam` (another padding or an EC key, ciphertext not one modulus
///   long, bad padding, buffer too small, a public key).
@discardableResult
public func SecKeyDecrypt(
    _ key: SecKey, _ padding: SecPadding, _ cipherText: UnsafePointer<UInt8>, _ cipherTextLen: Int,
    _ plainText: UnsafeMutablePointer<UInt8>, _ plainTextLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    guard let algorithm = encryptionAlgorithm(key, padding), let input = data(cipherText, cipherTextLen) else { return errSecParam }
    return legacy(plainText, plainTextLen, stripLeadingZeros: algorithm == .rsaEncryptionRaw) {
        SecKeyCreateDecryptedData(key, algorithm, input, $0)
    }
}

/// Signs a digest with a private key.
/// - Parameters:
///   - padding: RSA: `kSecPaddingPKCS1SHA1`…`SHA512` (adds the DigestInfo; the input must be that digest),
///     `kSecPaddingPKCS1` (the input as given), `kSecPaddingNone` (raw); EC: `kSecPaddingSigRaw` (r||s),
///     anything else X9.62 DER.
///   - sigLen: in: the buffer's size; out: the signature's.
/// - Returns: `errSecSuccess`, or `errSecParam` (unknown padding, a digest of the wrong length, buffer too
///   small, a public key).
@discardableResult
public func SecKeyRawSign(
    _ key: SecKey, _ padding: SecPadding, _ dataToSign: UnsafePointer<UInt8>, _ dataToSignLen: Int,
    _ sig: UnsafeMutablePointer<UInt8>, _ sigLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    guard let algorithm = signatureAlgorithm(key, padding, dataToSignLen), let input = data(dataToSign, dataToSignLen) else {
        return errSecParam
    }
    return legacy(sig, sigLen) { SecKeyCreateSignature(key, algorithm, input, $0) }
}

/// Checks a signature made by ``SecKeyRawSign(_:_:_:_:_:_:)``.
/// - Returns: `errSecSuccess`, `errSSLCrypto` (-9809) when the signature does not verify, `errSecParam`
///   (unknown padding, a digest of the wrong length).
@discardableResult
public func SecKeyRawVerify(
    _ key: SecKey, _ padding: SecPadding, _ signedData: UnsafePointer<UInt8>, _ signedDataLen: Int,
    _ sig: UnsafePointer<UInt8>, _ sigLen: Int
) -> OSStatus {
    guard let algorithm = signatureAlgorithm(key, padding, signedDataLen), let input = data(signedData, signedDataLen),
        let signature = data(sig, sigLen)
    else { return errSecParam }
    var error: Unmanaged<CFError>?
    guard SecKeyVerifySignature(key, algorithm, input, signature, &error) else {
        let status = OSStatus(truncatingIfNeeded: error?.takeRetainedValue().code ?? Int(errSecInternalComponent))
        return status == errSecVerifyFailed ? legacyVerifyFailed : status
    }
    return errSecSuccess
}

// MARK: macOS's asynchronous generation and symmetric keys

/// The callback of ``SecKeyGeneratePairAsync(_:_:_:)``: the public and private key, or the error.
public typealias SecKeyGeneratePairBlock = @Sendable (SecKey?, SecKey?, CFError?) -> Void

/// Generates a key pair on another thread, as ``SecKeyGeneratePair(_:_:_:)`` does, and calls `result` on
/// `deliveryQueue` (macOS).
public func SecKeyGeneratePairAsync(_ parameters: CFDictionary, _ deliveryQueue: DispatchQueue, _ result: @escaping SecKeyGeneratePairBlock) {
    // A copy: the caller may change a mutable dictionary once this returns (Apple copies it too).
    let copy = parameters.copy() as? NSDictionary ?? parameters
    nonisolated(unsafe) let unsafeCopy = copy  // the immutable copy is read by the one task only
    Task.detached {
        var publicKey: SecKey?
        var privateKey: SecKey?
        let status = SecKeyGeneratePair(unsafeCopy, &publicKey, &privateKey)
        let error: CFError? = status == errSecSuccess ? nil : legacyKeyError(status, "key pair generation failed")
        let pair = (publicKey, privateKey)
        deliveryQueue.async { result(pair.0, pair.1, error) }
    }
}

private func legacyKeyError(_ status: OSStatus, _ reason: String) -> CFError {
    NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: [NSLocalizedDescriptionKey: reason])
}

/// macOS's CDSA symmetric keys (`kSecAttrKeyTypeAES` and others as a SecKey) are not a kind of key here:
/// nil with `errSecUnimplemented` (use CommonCrypto's `CCCrypt` with the key bytes, and
/// `CCKeyDerivationPBKDF` for a password-derived key). Listed in docs/apple-compatibility.md.
@discardableResult
public func SecKeyGenerateSymmetric(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    KeyErrors.report(errSecUnimplemented, "symmetric SecKeys (macOS CDSA keys) are not provided; use CommonCrypto", error)
    return nil
}

/// As ``SecKeyGenerateSymmetric(_:_:)``: nil with `errSecUnimplemented`.
@discardableResult
public func SecKeyCreateFromData(_ parameters: CFDictionary, _ keyData: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    KeyErrors.report(errSecUnimplemented, "symmetric SecKeys (macOS CDSA keys) are not provided; use CommonCrypto", error)
    return nil
}

/// As ``SecKeyGenerateSymmetric(_:_:)``: nil with `errSecUnimplemented` (CommonCrypto's
/// `CCKeyDerivationPBKDF` derives the same key bytes).
@discardableResult
public func SecKeyDeriveFromPassword(_ password: CFString, _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    KeyErrors.report(errSecUnimplemented, "symmetric SecKeys (macOS CDSA keys) are not provided; use CCKeyDerivationPBKDF", error)
    return nil
}

/// Not implemented on macOS either (Apple's returns `errSecUnimplemented`): the same here.
@discardableResult
public func SecKeyWrapSymmetric(
    _ keyToWrap: SecKey, _ wrappingKey: SecKey, _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    KeyErrors.report(errSecUnimplemented, "SecKeyWrapSymmetric is not implemented (nor is it on macOS)", error)
    return nil
}

/// Not implemented on macOS either (Apple's returns `errSecUnimplemented`): the same here.
@discardableResult
public func SecKeyUnwrapSymmetric(
    _ keyToUnwrap: UnsafeMutablePointer<Unmanaged<CFData>?>, _ unwrappingKey: SecKey, _ parameters: CFDictionary,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    KeyErrors.report(errSecUnimplemented, "SecKeyUnwrapSymmetric is not implemented (nor is it on macOS)", error)
    return nil
}

// MARK: SecKey.h's macOS enumerations

/// Key sizes in bits (Apple's `SecKeySizes`). Several share a value (192 is 3DES, AES-192 and P-192), so this is
/// a structure of constants, as Swift imports the duplicates of a C enumeration.
public struct SecKeySizes: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let secDefaultKeySize = SecKeySizes(rawValue: 0)
    public static let sec3DES192 = SecKeySizes(rawValue: 192)
    public static let secAES128 = SecKeySizes(rawValue: 128)
    public static let secAES192 = SecKeySizes(rawValue: 192)
    public static let secAES256 = SecKeySizes(rawValue: 256)
    public static let secp192r1 = SecKeySizes(rawValue: 192)
    public static let secp256r1 = SecKeySizes(rawValue: 256)
    public static let secp384r1 = SecKeySizes(rawValue: 384)
    public static let secp521r1 = SecKeySizes(rawValue: 521)
    public static let secRSAMin = SecKeySizes(rawValue: 1024)
    public static let secRSAMax = SecKeySizes(rawValue: 4096)
}

/// What credentials `SecKeyGetCredentials` would return (Apple's `SecCredentialType`; that call uses CSSM types
/// and is not provided, see docs/apple-compatibility.md).
public enum SecCredentialType: UInt32, Sendable {
    case `default` = 0
    case withUI = 1
    case noUI = 2
}
