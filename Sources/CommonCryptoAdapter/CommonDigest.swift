public import CommonCrypto
import CryptoContract

// CommonDigest.h's one-shot functions, on the dispatcher (SHA-1 goes to the kernel above the threshold).
// The _Init/_Update/_Final functions keep their state in the caller's struct and live in C
// (Sources/CommonCrypto/digest_contexts.c).

/// Digests `len` bytes at `data` into `md`; returns `md`, or NULL when `md` is NULL (nothing computed).
func oneShot(
    _ algorithm: DigestAlgorithm, _ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?
) -> UnsafeMutablePointer<UInt8>? {
    guard let md, let input = buffer(data, Int(len)) else { return nil }
    do {
        try Engine.current.digest(algorithm, input: input, output: UnsafeMutableRawBufferPointer(start: md, count: algorithm.outputSize))
        return md
    } catch {
        return nil
    }
}

@_cdecl("CC_MD2")
public func ccMD2(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.md2, data, len, md)
}

@_cdecl("CC_MD4")
public func ccMD4(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.md4, data, len, md)
}

@_cdecl("CC_MD5")
public func ccMD5(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.md5, data, len, md)
}

@_cdecl("CC_SHA1")
public func ccSHA1(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.sha1, data, len, md)
}

@_cdecl("CC_SHA224")
public func ccSHA224(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.sha224, data, len, md)
}

@_cdecl("CC_SHA256")
public func ccSHA256(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.sha256, data, len, md)
}

@_cdecl("CC_SHA384")
public func ccSHA384(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.sha384, data, len, md)
}

@_cdecl("CC_SHA512")
public func ccSHA512(_ data: UnsafeRawPointer?, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    oneShot(.sha512, data, len, md)
}

/// CommonHMAC's algorithm numbers.
func hmacAlgorithm(_ algorithm: CCHmacAlgorithm) -> DigestAlgorithm? {
    switch Int(algorithm) {
    case kCCHmacAlgSHA1: .sha1
    case kCCHmacAlgMD5: .md5
    case kCCHmacAlgSHA256: .sha256
    case kCCHmacAlgSHA384: .sha384
    case kCCHmacAlgSHA512: .sha512
    case kCCHmacAlgSHA224: .sha224
    default: nil
    }
}

/// One-shot HMAC on the dispatcher (HMAC-SHA1 goes to the kernel above the threshold). An unknown algorithm
/// or a NULL pointer with a length writes nothing, as the void C signature allows no status.
@_cdecl("CCHmac")
public func ccHmac(
    _ algorithm: CCHmacAlgorithm, _ key: UnsafeRawPointer?, _ keyLength: Int, _ data: UnsafeRawPointer?, _ dataLength: Int,
    _ macOut: UnsafeMutableRawPointer?
) {
    guard let digest = hmacAlgorithm(algorithm), let key = buffer(key, keyLength), let input = buffer(data, dataLength),
        let macOut
    else { return }
    try? Engine.current.hmac(
        digest, key: key, input: input, output: UnsafeMutableRawBufferPointer(start: macOut, count: digest.outputSize))
}
