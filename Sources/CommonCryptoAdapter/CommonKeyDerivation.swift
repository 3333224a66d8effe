public import CommonCrypto
import CryptoContract
import Cryptography

// CommonKeyDerivation.h, CommonRandom.h and CommonSymmetricKeywrap.h over the idiomatic API.

func prfAlgorithm(_ prf: CCPseudoRandomAlgorithm) -> DigestAlgorithm? {
    switch Int(prf) {
    case kCCPRFHmacAlgSHA1: .sha1
    case kCCPRFHmacAlgSHA224: .sha224
    case kCCPRFHmacAlgSHA256: .sha256
    case kCCPRFHmacAlgSHA384: .sha384
    case kCCPRFHmacAlgSHA512: .sha512
    default: nil
    }
}

@_cdecl("CCKeyDerivationPBKDF")
public func ccKeyDerivationPBKDF(
    _ algorithm: CCPBKDFAlgorithm, _ password: UnsafePointer<CChar>?, _ passwordLen: Int, _ salt: UnsafePointer<UInt8>?,
    _ saltLen: Int, _ prf: CCPseudoRandomAlgorithm, _ rounds: UInt32, _ derivedKey: UnsafeMutablePointer<UInt8>?,
    _ derivedKeyLen: Int
) -> Int32 {
    guard Int(algorithm) == kCCPBKDF2, let digest = prfAlgorithm(prf), rounds > 0, derivedKeyLen > 0,
        let password = buffer(password, passwordLen), let salt = buffer(salt, saltLen), let derivedKey
    else { return Int32(kCCParamError) }
    do {
        try PBKDF2.deriveKey(
            password: password, salt: salt, prf: digest, rounds: Int(rounds),
            into: UnsafeMutableRawBufferPointer(start: derivedKey, count: derivedKeyLen), engine: Engine.current)
        return Int32(kCCSuccess)
    } catch {
        return status(error)
    }
}

@_cdecl("CCCalibratePBKDF")
public func ccCalibratePBKDF(
    _ algorithm: CCPBKDFAlgorithm, _ passwordLen: Int, _ saltLen: Int, _ prf: CCPseudoRandomAlgorithm, _ derivedKeyLen: Int,
    _ msec: UInt32
) -> UInt32 {
    guard Int(algorithm) == kCCPBKDF2, let digest = prfAlgorithm(prf) else { return 0 }
    let rounds = try? PBKDF2.calibrate(
        passwordLength: passwordLen, saltLength: saltLen, prf: digest, derivedKeyLength: derivedKeyLen,
        milliseconds: Int(msec))
    return UInt32(clamping: rounds ?? 0)
}

@_cdecl("CCRandomGenerateBytes")
public func ccRandomGenerateBytes(_ bytes: UnsafeMutableRawPointer?, _ count: Int) -> CCRNGStatus {
    guard let output = mutableBuffer(bytes, count) else { return .paramError }
    do {
        try Engine.random(output)
        return .success
    } catch {
        return CCRNGStatus(kCCRNGFailure)
    }
}

@_cdecl("CCSymmetricKeyWrap")
public func ccSymmetricKeyWrap(
    _ algorithm: CCWrappingAlgorithm, _ iv: UnsafePointer<UInt8>?, _ ivLen: Int, _ kek: UnsafePointer<UInt8>?, _ kekLen: Int,
    _ rawKey: UnsafePointer<UInt8>?, _ rawKeyLen: Int, _ wrappedKey: UnsafeMutablePointer<UInt8>?,
    _ wrappedKeyLen: UnsafeMutablePointer<Int>?
) -> Int32 {
    guard Int(algorithm) == kCCWRAPAES, let iv = buffer(iv, ivLen), let kek = buffer(kek, kekLen),
        let rawKey = buffer(rawKey, rawKeyLen), let wrappedKeyLen
    else { return Int32(kCCParamError) }
    let needed = rawKeyLen + 8
    guard wrappedKeyLen.pointee >= needed, let wrappedKey else {
        wrappedKeyLen.pointee = needed
        return Int32(kCCBufferTooSmall)
    }
    do {
        try AESKeyWrap.wrap(
            rawKey, kek: kek, iv: iv, into: UnsafeMutableRawBufferPointer(start: wrappedKey, count: needed), engine: Engine.current)
        wrappedKeyLen.pointee = needed
        return Int32(kCCSuccess)
    } catch {
        return keyWrapStatus(error)
    }
}

@_cdecl("CCSymmetricKeyUnwrap")
public func ccSymmetricKeyUnwrap(
    _ algorithm: CCWrappingAlgorithm, _ iv: UnsafePointer<UInt8>?, _ ivLen: Int, _ kek: UnsafePointer<UInt8>?, _ kekLen: Int,
    _ wrappedKey: UnsafePointer<UInt8>?, _ wrappedKeyLen: Int, _ rawKey: UnsafeMutablePointer<UInt8>?,
    _ rawKeyLen: UnsafeMutablePointer<Int>?
) -> Int32 {
    guard Int(algorithm) == kCCWRAPAES, let iv = buffer(iv, ivLen), let kek = buffer(kek, kekLen),
        let wrapped = buffer(wrappedKey, wrappedKeyLen), let rawKeyLen, wrappedKeyLen >= 24
    else { return Int32(kCCParamError) }
    let needed = wrappedKeyLen - 8
    guard rawKeyLen.pointee >= needed, let rawKey else {
        rawKeyLen.pointee = needed
        return Int32(kCCBufferTooSmall)
    }
    do {
        try AESKeyWrap.unwrap(
            wrapped, kek: kek, iv: iv, into: UnsafeMutableRawBufferPointer(start: rawKey, count: needed), engine: Engine.current)
        rawKeyLen.pointee = needed
        return Int32(kCCSuccess)
    } catch {
        return keyWrapStatus(error)
    }
}

/// Key wrap reports a bad KEK size as a parameter error, as Apple's header says.
func keyWrapStatus(_ error: any Error) -> Int32 {
    if let error = error as? CryptoError, error.code == .invalidKeySize { return Int32(kCCParamError) }
    return status(error)
}

@_cdecl("CCSymmetricWrappedSize")
public func ccSymmetricWrappedSize(_ algorithm: CCWrappingAlgorithm, _ rawKeyLen: Int) -> Int {
    Int(algorithm) == kCCWRAPAES ? rawKeyLen + 8 : 0
}

@_cdecl("CCSymmetricUnwrappedSize")
public func ccSymmetricUnwrappedSize(_ algorithm: CCWrappingAlgorithm, _ wrappedKeyLen: Int) -> Int {
    Int(algorithm) == kCCWRAPAES && wrappedKeyLen >= 8 ? wrappedKeyLen - 8 : 0
}
