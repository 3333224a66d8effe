internal import COpenSSL
public import Foundation

extension AsymmetricKey {
    /// The public key of a DER SubjectPublicKeyInfo (a certificate's key).
    /// - Throws: ``KeyError`` `.invalidKeyData` for bytes that are not one SubjectPublicKeyInfo of an RSA key or
    ///   an EC key on P-256, P-384 or P-521.
    public convenience init(subjectPublicKeyInfo: Data) throws {
        let bytes = Array(subjectPublicKeyInfo)
        let pkey: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var start = buffer.baseAddress
            // d2i_PUBKEY advances `start` past what it read; trailing bytes are refused.
            let pkey = d2i_PUBKEY(nil, &start, buffer.count)
            guard let pkey, let start, let base = buffer.baseAddress, start - base == buffer.count else {
                EVP_PKEY_free(pkey)
                return nil
            }
            return pkey
        }
        guard let pkey else {
            ERR_clear_error()
            throw KeyError(.invalidKeyData, "not one DER SubjectPublicKeyInfo")
        }
        try self.init(takingOwnership: pkey, isPrivate: false)
    }
}

extension Certificate {
    /// The certificate's public key.
    /// - Throws: ``KeyError`` `.invalidKeyData` for a key type this module does not support.
    public func publicKey() throws -> AsymmetricKey { try AsymmetricKey(subjectPublicKeyInfo: subjectPublicKeyInfo) }
}
