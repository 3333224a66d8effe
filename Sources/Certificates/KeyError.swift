public import SecurityBase
internal import COpenSSL

/// An error of an asymmetric-key operation. Equal by code; the Apple-compatible surface maps codes to `OSStatus`.
/// Reasons name what was wrong, never key material.
public struct KeyError: CodedError {
    public typealias Code = ErrorCode<KeyError>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation
    /// OpenSSL's first queued error (`ERR_get_error`), 0 when none was queued.
    public let openSSLCode: UInt

    public init(_ code: Code, _ reason: String, openSSLCode: UInt = 0, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
        self.openSSLCode = openSSLCode
    }


    /// An error carrying OpenSSL's first queued error; drains the queue so no stale error leaks into a later call.
    static func openSSL(_ code: Code, _ reason: String) -> KeyError {
        let first = ERR_get_error()
        var text = [CChar](repeating: 0, count: 256)
        if first != 0 { ERR_error_string_n(first, &text, text.count) }
        ERR_clear_error()
        guard first != 0 else { return KeyError(code, reason) }
        let detail = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return KeyError(code, "\(reason): \(detail)", openSSLCode: first)
    }
}

extension ErrorCode where Domain == KeyError {
    /// A key size the key type does not allow (RSA: 1024...4096 bits in whole bytes; EC: 256, 384, 521).
    public static let unsupportedKeySize = Self(name: "unsupportedKeySize")
    /// Key data that does not decode: wrong length, a point not on the curve, malformed DER, an inconsistent key.
    public static let invalidKeyData = Self(name: "invalidKeyData")
    /// An algorithm the key's type or class cannot run (an EC key asked for RSA, a public key asked to sign).
    public static let unsupportedAlgorithm = Self(name: "unsupportedAlgorithm")
    /// Input of the wrong size for the algorithm: a digest of the wrong length, data too long for the modulus.
    public static let invalidInput = Self(name: "invalidInput")
    /// The signature does not verify.
    public static let verificationFailed = Self(name: "verificationFailed")
    /// The ciphertext does not decrypt (wrong length, bad padding).
    public static let decryptionFailed = Self(name: "decryptionFailed")
    /// The private key is held by another process (``AsymmetricKey/isHeldElsewhere``): it cannot be exported or
    /// used by OpenSSL here.
    public static let heldElsewhere = Self(name: "heldElsewhere")
    /// OpenSSL failed where it should not have (``KeyError/openSSLCode`` holds its first queued error).
    public static let backendFailure = Self(name: "backendFailure")
}
