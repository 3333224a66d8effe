public import Foundation
import Certificates

// Elliptic-curve key agreement (SecKey.h's SecKeyCopyKeyExchangeResult): ECDH over OpenSSL, optionally through the
// ANSI X9.63 key-derivation function, with Apple's algorithm names and parameters.

/// The ECDH algorithms and, for the KDF variants, their digest.
private func keyExchangeDigest(_ algorithm: SecKeyAlgorithm) -> (known: Bool, digest: AsymmetricKey.KeyDerivationDigest?) {
    switch algorithm {
    case .ecdhKeyExchangeStandard, .ecdhKeyExchangeCofactor: (true, nil)
    case .ecdhKeyExchangeStandardX963SHA1, .ecdhKeyExchangeCofactorX963SHA1: (true, .sha1)
    case .ecdhKeyExchangeStandardX963SHA224, .ecdhKeyExchangeCofactorX963SHA224: (true, .sha224)
    case .ecdhKeyExchangeStandardX963SHA256, .ecdhKeyExchangeCofactorX963SHA256: (true, .sha256)
    case .ecdhKeyExchangeStandardX963SHA384, .ecdhKeyExchangeCofactorX963SHA384: (true, .sha384)
    case .ecdhKeyExchangeStandardX963SHA512, .ecdhKeyExchangeCofactorX963SHA512: (true, .sha512)
    default: (false, nil)
    }
}

/// Whether `algorithm` is an ECDH algorithm `key` can run (an EC private key).
func supportsKeyExchange(_ key: SecKey, _ algorithm: SecKeyAlgorithm) -> Bool {
    keyExchangeDigest(algorithm).known && key.key.type == .ellipticCurve && key.key.isPrivate
}

/// The shared secret of ECDH between `privateKey` and `publicKey`: the raw x-coordinate for
/// `ecdhKeyExchangeStandard`/`Cofactor`, or that secret through the X9.63 KDF (SEC 1 §3.6.1) for the `…X963SHA…`
/// variants, which need `SecKeyKeyExchangeParameter.requestedSize` (the output length) and may give
/// `.sharedInfo` (data).
/// - Returns: the result, or nil with `errSecParam` (not an ECDH algorithm, not an EC private key and an EC
///   public key on the same curve, a missing or bad parameter).
@discardableResult
public func SecKeyCopyKeyExchangeResult(
    _ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey, _ parameters: CFDictionary,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    KeyErrors.run(error) {
        let (known, digest) = keyExchangeDigest(algorithm)
        guard known, supportsKeyExchange(privateKey, algorithm) else {
            throw StatusError(errSecParam, "\(algorithm.rawValue): algorithm not supported by the key")
        }
        guard publicKey.key.type == .ellipticCurve, publicKey.key.curve == privateKey.key.curve else {
            throw StatusError(errSecParam, "the public key is not an EC key on the private key's curve")
        }
        guard let digest else {
            do {
                return try privateKey.key.sharedSecret(with: publicKey.key) as NSData
            } catch {
                throw StatusError(errSecParam, "ECDH failed: \(error)")
            }
        }
        guard let size = (parameters[SecKeyKeyExchangeParameter.requestedSize.rawValue] as? NSNumber)?.intValue,
            (1...(1 << 20)).contains(size)
        else { throw StatusError(errSecParam, "the X9.63 KDF needs a requested size (1 byte to 1 MiB)") }
        var sharedInfo = Data()
        if let value = parameters[SecKeyKeyExchangeParameter.sharedInfo.rawValue] {
            guard let data = dataValue(value) else {
                throw StatusError(errSecParam, "the shared info is not data")
            }
            sharedInfo = data
        }
        do {
            return try privateKey.key.sharedSecret(with: publicKey.key, x963: digest, sharedInfo: sharedInfo, length: size) as NSData
        } catch {
            throw StatusError(errSecParam, "ECDH failed: \(error)")
        }
    }
}
