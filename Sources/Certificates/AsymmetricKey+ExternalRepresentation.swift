public import Foundation
internal import COpenSSL
internal import COpenSSLShims
import SecurityBase

extension AsymmetricKey {
    /// Reads Apple's external representation of a key.
    /// - Parameters:
    ///   - externalRepresentation: PKCS#1 DER (RSA) or X9.63 bytes (EC).
    ///   - type: the key type.
    ///   - isPrivate: whether the bytes hold a private key.
    /// - Throws: ``KeyError`` `.invalidKeyData` for malformed DER, trailing bytes, an inconsistent RSA key, a
    ///   length that fits no curve, or a point not on the curve (or not matching the private scalar).
    public convenience init(externalRepresentation bytes: Data, type: KeyType, isPrivate: Bool) throws {
        let pkey: OpaquePointer
        if type == .rsa {
            pkey = try Self.decodeRSA(bytes, isPrivate: isPrivate)
        } else {
            pkey = try Self.decodeEC(bytes, isPrivate: isPrivate)
        }
        try self.init(takingOwnership: pkey, isPrivate: isPrivate)
        // DER has one encoding of a value: bytes the key does not write back are not a key (a fuzz run found a
        // negative public exponent, `02 03 ff ff 01`, that OpenSSL's decoder accepts and writes otherwise).
        guard type != .rsa || (try? externalRepresentation()) == bytes else {
            throw KeyError(.invalidKeyData, "RSA key data that is not the key's one DER encoding")
        }
    }

    /// Reads a private key file as OpenSSL writes one: DER (PKCS#8 `PrivateKeyInfo`, or PKCS#1 / SEC 1) or PEM
    /// (`PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY`), unencrypted.
    /// - Parameter bytes: the file's bytes.
    /// - Throws: ``KeyError`` `.invalidKeyData` for anything else; an encrypted key is refused, never prompted
    ///   for.
    public convenience init(privateKeyFile bytes: Data) throws {
        let decoded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress, !raw.isEmpty else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            // d2i_AutoPrivateKey: works out the DER form; the cursor ends after the bytes it used.
            if let pkey = d2i_AutoPrivateKey(nil, &cursor, raw.count) {
                if cursor == base + raw.count { return pkey }
                EVP_PKEY_free(pkey)  // trailing bytes: not one DER key
                return nil
            }
            ERR_clear_error()
            guard let bio = BIO_new_mem_buf(base, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // PEM_read_bio_PrivateKey: with no callback OpenSSL would prompt on the terminal for an encrypted
            // key; this one answers -1, "no passphrase", so an encrypted key fails instead.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let pkey = decoded else {
            throw KeyError.openSSL(.invalidKeyData, "not an unencrypted private key (DER or PEM)")
        }
        try self.init(takingOwnership: pkey, isPrivate: true)
    }

    private static func decodeRSA(_ bytes: Data, isPrivate: Bool) throws -> OpaquePointer {
        guard !bytes.isEmpty else { throw KeyError(.invalidKeyData, "empty RSA key data") }
        let decoded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            // The provider's decoder, so the key is provider-native; it refuses trailing bytes.
            copenssl_rsa_key_from_pkcs1(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, isPrivate ? 1 : 0)
        }
        guard let pkey = decoded else {
            throw KeyError.openSSL(.invalidKeyData, "not a PKCS#1 RSA\(isPrivate ? "Private" : "Public")Key")
        }
        guard EVP_PKEY_is_a(pkey, "RSA") == 1, EVP_PKEY_get_bits(pkey) >= 512 else {
            EVP_PKEY_free(pkey)
            throw KeyError(.invalidKeyData, "not an RSA key of at least 512 bits")
        }
        if isPrivate {
            // EVP_PKEY_check: "validates the key-pair": n = p·q, d·e ≡ 1, the CRT values.
            let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil)
            let valid = context != nil && EVP_PKEY_check(context) == 1
            EVP_PKEY_CTX_free(context)
            guard valid else {
                EVP_PKEY_free(pkey)
                throw KeyError.openSSL(.invalidKeyData, "inconsistent RSA private key")
            }
        }
        return pkey
    }

    private static func decodeEC(_ bytes: Data, isPrivate: Bool) throws -> OpaquePointer {
        let parts = isPrivate ? 3 : 2
        guard bytes.count % parts == 1, bytes.first == 0x04,
            let curve = EllipticCurve.all.first(where: { 1 + parts * $0.fieldBytes == bytes.count })
        else {
            throw KeyError(
                .invalidKeyData, "EC \(isPrivate ? "private" : "public") key data is not 04||X||Y\(isPrivate ? "||K" : "") on a supported curve")
        }
        let pointLength = 1 + 2 * curve.fieldBytes
        let decoded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            let base = raw.bindMemory(to: UInt8.self).baseAddress!  // !: count > 0 was checked above
            return copenssl_ec_key_from_parts(
                curve.groupName, base, pointLength, isPrivate ? base + pointLength : nil,
                isPrivate ? curve.fieldBytes : 0)
        }
        guard let pkey = decoded else { throw KeyError.openSSL(.invalidKeyData, "the point is not on \(curve)") }
        // EVP_PKEY_public_check: the point is on the curve and not at infinity; EVP_PKEY_pairwise_check: the
        // public point is the private scalar times the generator (and the scalar is in range).
        let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil)
        let valid =
            context != nil && EVP_PKEY_public_check(context) == 1
            && (!isPrivate || EVP_PKEY_pairwise_check(context) == 1)
        EVP_PKEY_CTX_free(context)
        guard valid else {
            EVP_PKEY_free(pkey)
            throw KeyError.openSSL(.invalidKeyData, "the EC key does not check on \(curve)")
        }
        return pkey
    }

    /// Apple's external representation (see the type's description). For a private key the bytes are secret:
    /// the caller owns the copy; the intermediate buffers are wiped here.
    /// - Throws: ``KeyError`` `.backendFailure`.
    public func externalRepresentation() throws -> Data {
        guard holder == nil else { throw heldElsewhereError("it cannot be exported") }
        if type == .rsa {
            var out: UnsafeMutablePointer<UInt8>?
            let length = isPrivate ? i2d_PrivateKey(pkey, &out) : i2d_PublicKey(pkey, &out)
            guard length > 0, let out else { throw KeyError.openSSL(.backendFailure, "i2d of the RSA key") }
            defer { copenssl_clear_free(out, Int(length)) }
            return Data(bytes: out, count: Int(length))
        }
        let curve = self.curve!  // !: every EC key has a curve (checked in init)
        let width = curve.fieldBytes
        // The private scalar is assembled in wiped storage; the Data handed back is the caller's to keep.
        var buffer = SecretBytes(zeroed: 1 + (isPrivate ? 3 : 2) * width)
        try buffer.withUnsafeMutableBytes { out in
            try publicPoint(into: out, curve: curve)
            if isPrivate {
                let scalar = out.baseAddress!.assumingMemoryBound(to: UInt8.self) + 1 + 2 * width  // !: count > 0
                guard copenssl_pkey_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, scalar, width) == 1 else {
                    throw KeyError.openSSL(.backendFailure, "reading the private scalar")
                }
            }
        }
        return buffer.withUnsafeBytes { Data($0) }
    }

    /// Writes the uncompressed public point into the start of `buffer`.
    private func publicPoint(into buffer: UnsafeMutableRawBufferPointer, curve: EllipticCurve) throws {
        let pointLength = 1 + 2 * curve.fieldBytes
        var written = 0
        let ok = EVP_PKEY_get_octet_string_param(
            pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), pointLength, &written)
        guard ok == 1, written == pointLength, buffer[0] == 0x04 else {
            throw KeyError.openSSL(.backendFailure, "reading the public point")
        }
    }

    /// The public half of this key (itself when already public).
    /// - Throws: ``KeyError`` `.backendFailure`.
    public func publicKey() throws -> AsymmetricKey {
        guard isPrivate else { return self }
        if type == .rsa {
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_PublicKey(pkey, &out)
            guard length > 0, let out else { throw KeyError.openSSL(.backendFailure, "i2d_PublicKey") }
            defer { copenssl_free(out) }
            return try AsymmetricKey(externalRepresentation: Data(bytes: out, count: Int(length)), type: .rsa, isPrivate: false)
        }
        let curve = self.curve!  // !: every EC key has a curve (checked in init)
        var point = [UInt8](repeating: 0, count: 1 + 2 * curve.fieldBytes)
        try point.withUnsafeMutableBytes { try publicPoint(into: $0, curve: curve) }
        return try AsymmetricKey(externalRepresentation: Data(point), type: .ellipticCurve, isPrivate: false)
    }

    /// Apple's `SecKeyGetBlockSize`: the modulus in bytes (RSA) or a field element in bytes (EC).
    public var blockSize: Int { (sizeInBits + 7) / 8 }
}

extension AsymmetricKey {
    /// SHA-1 of the public key's external representation: Apple's application label (`kSecAttrApplicationLabel`),
    /// which pairs a private key with its certificate's public-key hash.
    /// - Throws: ``KeyError`` `.backendFailure`.
    public func publicKeySHA1() throws -> Data {
        let external = try publicKey().externalRepresentation()
        var output = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let ok = external.withUnsafeBytes { raw in EVP_Digest(raw.baseAddress, raw.count, &output, &length, EVP_sha1(), nil) }
        guard ok == 1 else { throw KeyError.openSSL(.backendFailure, "EVP_Digest") }
        return Data(output)
    }
}
