public import Foundation
internal import COpenSSL
internal import COpenSSLShims

extension AsymmetricKey {
    /// Whether this key can run `algorithm` (signing needs a private key; verifying works with either).
    public func supports(_ algorithm: SignatureAlgorithm, signing: Bool) -> Bool {
        algorithm.keyType == type && (!signing || isPrivate)
    }

    /// For a holder that signs itself (``PrivateKeyOperations``: a TPM, a token), with this key its public half: what
    /// the scheme signs for `data`: the digest (hashed when the algorithm hashes its input, else checked for
    /// length), or for raw RSA the input left-padded to the modulus.
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` for a scheme of the other key type, `.invalidInput`.
    public func signingInput(_ data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        guard algorithm.keyType == type else { throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs a \(algorithm.keyType) key") }
        return try toBeSigned(data, algorithm)
    }

    /// For a holder that signs ECDSA itself: the signature of `r` and `s` (big-endian, each at most the curve's
    /// size) in the algorithm's encoding, DER (X9.62) or r||s (RFC 4754).
    public func ecdsaSignature(r: [UInt8], s: [UInt8], algorithm: SignatureAlgorithm) throws -> Data {
        guard r.count <= blockSize, s.count <= blockSize else { throw KeyError(.invalidInput, "r or s is wider than the curve") }
        let raw = [UInt8](repeating: 0, count: blockSize - r.count) + r + [UInt8](repeating: 0, count: blockSize - s.count) + s
        if algorithm.scheme == .ecdsaRFC4754 { return Data(raw) }
        guard let der = Self.derSignature(fromRaw: raw, width: blockSize) else { throw KeyError(.invalidInput, "r or s is zero") }
        return Data(der)
    }

    /// The input a signature algorithm signs: the message's digest when the algorithm hashes, else the input,
    /// whose length must then be the digest's.
    private func toBeSigned(_ data: Data, _ algorithm: SignatureAlgorithm) throws -> Data {
        if algorithm.hashesInput, let digest = algorithm.digest {
            var output = [UInt8](repeating: 0, count: digest.size)
            var length: UInt32 = 0
            let ok = data.withUnsafeBytes { raw in
                EVP_Digest(raw.baseAddress, raw.count, &output, &length, digest.md, nil)
            }
            guard ok == 1 else { throw KeyError.openSSL(.backendFailure, "EVP_Digest") }
            return Data(output)
        }
        if let digest = algorithm.digest, data.count != digest.size {
            throw KeyError(.invalidInput, "\(algorithm) signs a \(digest.size)-byte digest, not \(data.count) bytes")
        }
        if algorithm.scheme == .rsaRaw {
            guard data.count <= blockSize else {
                throw KeyError(.invalidInput, "raw RSA input is longer than the \(blockSize)-byte modulus")
            }
            return Data(repeating: 0, count: blockSize - data.count) + data
        }
        return data
    }

    /// Sets padding and digests on an initialised sign or verify context.
    private func configure(_ context: OpaquePointer, _ algorithm: SignatureAlgorithm) -> Bool {
        switch algorithm.scheme {
        case .rsaRaw:
            return EVP_PKEY_CTX_set_rsa_padding(context, RSA_NO_PADDING) == 1
        case .rsaPKCS1v15:
            guard EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1 else { return false }
            guard let digest = algorithm.digest else { return true }
            return EVP_PKEY_CTX_set_signature_md(context, digest.md) == 1
        case .rsaPSS:
            guard let digest = algorithm.digest else { return false }
            return EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) == 1
                && EVP_PKEY_CTX_set_signature_md(context, digest.md) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(context, digest.md) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(context, Int32(clamping: max(0, algorithm.saltLength ?? digest.size))) == 1
        case .ecdsaX962, .ecdsaRFC4754:
            // No digest is set: ECDSA signs the given digest, truncated to the order's size as X9.62 says.
            return true
        }
    }

    /// Signs `data`.
    /// - Parameters:
    ///   - data: the message (for hashing algorithms) or the digest.
    ///   - algorithm: the scheme.
    /// - Returns: the signature (DER for X9.62 ECDSA, r||s for RFC 4754, modulus-sized for RSA).
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` (a public key, or a scheme of the other key type),
    ///   `.invalidInput` (a digest of the wrong length, raw input too long or not below the modulus).
    public func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        guard algorithm.keyType == type else { throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs a \(algorithm.keyType) key") }
        guard isPrivate else { throw KeyError(.unsupportedAlgorithm, "a public key cannot sign") }
        if let holder, holder.performsRSAPadding || type != .rsa || algorithm.scheme == .rsaRaw {
            return try holder.signature(for: data, algorithm: algorithm)
        }
        let input = try toBeSigned(data, algorithm)
        // A held key whose holder does the raw operation only is padded here: its private operation reaches it.
        guard let context = withUnsafePKEY({ EVP_PKEY_CTX_new_from_pkey(nil, $0, nil) }) else {
            throw KeyError.openSSL(.backendFailure, "EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_sign_init(context) == 1, configure(context, algorithm) else {
            throw KeyError.openSSL(.backendFailure, "signature set-up")
        }
        // Written once into a buffer of the key's largest signature (EVP_PKEY_get_size), not sized by a first call,
        // on the stack; the `Data` made once, of the length written (an ECDSA signature's varies).
        return try withUnsafeTemporaryAllocation(byteCount: Int(max(EVP_PKEY_get_size(pkey), 1)), alignment: 1) { out in
            var length = out.count
            let signed = input.withUnsafeBytes { raw in
                EVP_PKEY_sign(
                    context, out.bindMemory(to: UInt8.self).baseAddress, &length, raw.bindMemory(to: UInt8.self).baseAddress,
                    raw.count)
            }
            guard signed == 1 else { throw KeyError.openSSL(.invalidInput, "\(algorithm) cannot sign this input") }
            let signature = UnsafeRawBufferPointer(rebasing: out[..<length])
            if algorithm.scheme == .ecdsaRFC4754 {
                return Data(try Self.rawSignature(fromDER: [UInt8](signature), width: blockSize))
            }
            return Data(signature)
        }
    }

    /// Checks `signature` over `data`.
    /// - Returns: false when the signature does not verify (including a malformed or wrong-length signature).
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` (a scheme of the other key type), `.invalidInput` (a digest
    ///   of the wrong length).
    public func isValidSignature(_ signature: Data, for data: Data, algorithm: SignatureAlgorithm) throws -> Bool {
        guard algorithm.keyType == type else { throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs a \(algorithm.keyType) key") }
        let input = try toBeSigned(data, algorithm)
        // The signature as given (not copied byte by byte into an array), but an RFC 4754 one, made DER.
        var encoded = signature
        if algorithm.scheme == .ecdsaRFC4754 {
            guard signature.count == 2 * blockSize, let der = Self.derSignature(fromRaw: [UInt8](signature), width: blockSize) else {
                return false
            }
            encoded = Data(der)
        }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
            throw KeyError.openSSL(.backendFailure, "EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(context) }
        defer { ERR_clear_error() }  // a failed verification queues errors; they say nothing the caller needs
        if algorithm.scheme == .rsaRaw {
            // Raw RSA verification: the public operation on the signature must give back the input.
            guard encoded.count == blockSize, EVP_PKEY_verify_recover_init(context) == 1, configure(context, algorithm) else {
                return false
            }
            var recovered = [UInt8](repeating: 0, count: blockSize)
            var length = blockSize
            let status = encoded.withUnsafeBytes { signature in
                EVP_PKEY_verify_recover(context, &recovered, &length, signature.bindMemory(to: UInt8.self).baseAddress, signature.count)
            }
            guard status == 1 else { return false }
            return Data(recovered.prefix(length)) == input
        }
        guard EVP_PKEY_verify_init(context) == 1, configure(context, algorithm) else {
            throw KeyError.openSSL(.backendFailure, "verification set-up")
        }
        return encoded.withUnsafeBytes { signature in
            input.withUnsafeBytes { raw in
                EVP_PKEY_verify(
                    context, signature.bindMemory(to: UInt8.self).baseAddress, signature.count,
                    raw.bindMemory(to: UInt8.self).baseAddress, raw.count) == 1
            }
        }
    }

    // MARK: ECDSA encodings

    /// r||s from a DER ECDSA-Sig-Value.
    static func rawSignature(fromDER der: [UInt8], width: Int) throws -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: 2 * width)
        guard copenssl_ecdsa_der_to_raw(der, der.count, &raw, width) == 1 else {
            throw KeyError.openSSL(.backendFailure, "re-encoding the ECDSA signature")
        }
        return raw
    }

    /// A DER ECDSA-Sig-Value from r||s, or nil.
    static func derSignature(fromRaw raw: [UInt8], width: Int) -> [UInt8]? {
        var out: UnsafeMutablePointer<UInt8>?
        let length = copenssl_ecdsa_raw_to_der(raw, width, &out)
        guard length > 0, let out else {
            ERR_clear_error()
            return nil
        }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }
}
