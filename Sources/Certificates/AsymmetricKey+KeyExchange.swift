public import Foundation
internal import COpenSSL
internal import COpenSSLShims
import SecurityBase

extension AsymmetricKey {
    /// Elliptic-curve Diffie–Hellman (SEC 1 §3.3.1): the x-coordinate of this private key times `peer`'s public
    /// point. The curves here (P-256/384/521) have cofactor 1, so the cofactor variant gives the same bytes.
    /// - Parameter peer: the other side's public key (a private key's public half is used), on the same curve.
    /// - Returns: the shared secret, as long as the curve's field.
    /// A key held elsewhere agrees where it is held (``PrivateKeyOperations/sharedSecret(with:)``).
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` (not two EC keys, or a public key here), `.heldElsewhere` (a
    ///   holder that does no key exchange), `.invalidKeyData` (another curve), `.backendFailure` when OpenSSL fails.
    public func sharedSecret(with peer: AsymmetricKey) throws -> Data {
        guard type == .ellipticCurve, peer.type == .ellipticCurve, isPrivate else {
            throw KeyError(.unsupportedAlgorithm, "ECDH needs an EC private key and an EC public key")
        }
        guard curve == peer.curve else { throw KeyError(.invalidKeyData, "the two keys are on different curves") }
        let other = try peer.publicKey()
        if let holder { return try holder.sharedSecret(with: other) }
        ERR_clear_error()
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { throw KeyError.openSSL(.backendFailure, "ECDH context") }
        defer { EVP_PKEY_CTX_free(context) }
        // EVP_PKEY_derive_set_peer checks the peer's key against ours (same group) and takes its own reference.
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, other.pkey) == 1 else {
            throw KeyError.openSSL(.backendFailure, "ECDH with this peer")
        }
        var length = 0
        guard EVP_PKEY_derive(context, nil, &length) == 1, length > 0 else { throw KeyError.openSSL(.backendFailure, "ECDH length") }
        var secret = Data(count: length)
        let derived = secret.withUnsafeMutableBytes {
            EVP_PKEY_derive(context, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)  // !: length > 0
        }
        guard derived == 1 else { throw KeyError.openSSL(.backendFailure, "ECDH") }
        return secret.prefix(length)
    }

    /// The digests of the X9.63 key-derivation function.
    public enum KeyDerivationDigest: String, Sendable {
        case sha1 = "SHA1", sha224 = "SHA2-224", sha256 = "SHA2-256", sha384 = "SHA2-384", sha512 = "SHA2-512"
    }

    /// ECDH (``sharedSecret(with:)``) through the ANSI X9.63 key-derivation function (SEC 1 §3.6.1): `length`
    /// bytes of Hash(Z || counter || sharedInfo), counter from 1.
    /// - Throws: as ``sharedSecret(with:)``; ``KeyError`` `.invalidKeyData` for a length outside 1 byte–1 MiB.
    public func sharedSecret(with peer: AsymmetricKey, x963 digest: KeyDerivationDigest, sharedInfo: Data, length: Int) throws -> Data {
        guard (1...(1 << 20)).contains(length) else { throw KeyError(.invalidKeyData, "an X9.63 output of \(length) bytes") }
        var secret = try sharedSecret(with: peer)
        defer { secret.withUnsafeMutableBytes { secureWipe($0) } }
        var output = Data(count: length)
        ERR_clear_error()
        let status = output.withUnsafeMutableBytes { out in
            secret.withUnsafeBytes { z in
                sharedInfo.withUnsafeBytes { info in
                    copenssl_x963_kdf(
                        digest.rawValue, z.bindMemory(to: UInt8.self).baseAddress, z.count, info.bindMemory(to: UInt8.self).baseAddress,
                        info.count, out.bindMemory(to: UInt8.self).baseAddress, out.count)
                }
            }
        }
        guard status == 1 else { throw KeyError.openSSL(.backendFailure, "X9.63 key derivation") }
        return output
    }
}
