public import Foundation
internal import COpenSSL
import SecurityBase

extension AsymmetricKey {
    /// Whether this key can run `algorithm` (decrypting needs a private key).
    public func supports(_ algorithm: EncryptionAlgorithm, encrypting: Bool) -> Bool {
        type == .rsa && (encrypting || isPrivate)
    }

    /// Encrypts `data` with the public half of this key.
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` (an EC key), `.invalidInput` (too long for the modulus,
    ///   or raw input not below it).
    public func encrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        guard type == .rsa else { throw KeyError(.unsupportedAlgorithm, "EC keys do not encrypt with \(algorithm)") }
        let maximum = algorithm.maximumPlaintextSize(modulusBytes: blockSize)
        guard data.count <= maximum else {
            throw KeyError(.invalidInput, "\(algorithm) encrypts at most \(max(maximum, 0)) bytes with this key, not \(data.count)")
        }
        guard algorithm.scheme == .raw else { return try data.withUnsafeBytes { try crypt($0, algorithm, encrypting: true) } }
        // Raw RSA encrypts the modulus-sized block: the padded copy of the plaintext is made in wiped storage.
        var input = SecretBytes(zeroed: blockSize - data.count)
        data.withUnsafeBytes { input.append(contentsOf: $0) }
        return try input.withUnsafeBytes { try crypt($0, algorithm, encrypting: true) }
    }

    /// Decrypts `data` with this private key.
    /// - Returns: the plaintext (for raw RSA, the whole modulus-sized block).
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` (an EC or public key), `.invalidInput` (not one modulus
    ///   long), `.decryptionFailed` (bad padding).
    public func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        guard type == .rsa else { throw KeyError(.unsupportedAlgorithm, "EC keys do not decrypt with \(algorithm)") }
        guard isPrivate else { throw KeyError(.unsupportedAlgorithm, "a public key cannot decrypt") }
        guard data.count == blockSize else {
            throw KeyError(.invalidInput, "the ciphertext is \(data.count) bytes, not the modulus's \(blockSize)")
        }
        if let holder, holder.performsRSAPadding || algorithm.scheme == .raw { return try holder.decrypt(data, algorithm: algorithm) }
        return try data.withUnsafeBytes { try crypt($0, algorithm, encrypting: false) }
    }

    private func crypt(_ input: UnsafeRawBufferPointer, _ algorithm: EncryptionAlgorithm, encrypting: Bool) throws -> Data {
        // A held key whose holder does the raw operation only is unpadded here: its private operation reaches it.
        let key = encrypting ? nil : withUnsafePKEY { $0 }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key ?? pkey, nil) else {
            throw KeyError.openSSL(.backendFailure, "EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(context) }
        let padding: Int32 =
            switch algorithm.scheme {
            case .raw: RSA_NO_PADDING
            case .pkcs1: RSA_PKCS1_PADDING
            case .oaep: RSA_PKCS1_OAEP_PADDING
            }
        var ready = (encrypting ? EVP_PKEY_encrypt_init(context) : EVP_PKEY_decrypt_init(context)) == 1
        ready = ready && EVP_PKEY_CTX_set_rsa_padding(context, padding) == 1
        if ready, algorithm.scheme == .oaep, let digest = algorithm.digest {
            ready = EVP_PKEY_CTX_set_rsa_oaep_md(context, digest.md) == 1 && EVP_PKEY_CTX_set_rsa_mgf1_md(context, digest.md) == 1
        }
        guard ready else { throw KeyError.openSSL(.backendFailure, "\(algorithm) set-up") }
        let start = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        guard encrypting else {
            // A decryption's buffer holds plaintext: wiped storage, copied out once.
            var output = SecretBytes(zeroed: blockSize)
            var length = output.count
            let ok = output.withUnsafeMutableBytes { out in
                EVP_PKEY_decrypt(context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, start, input.count)
            }
            guard ok == 1 else { throw KeyError.openSSL(.decryptionFailed, "\(algorithm) decryption failed") }
            return output.withUnsafeBytes { Data($0.prefix(length)) }
        }
        // A ciphertext is no secret: written straight into the Data returned.
        var output = Data(count: blockSize)
        var length = output.count
        let ok = output.withUnsafeMutableBytes { out in
            EVP_PKEY_encrypt(context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, start, input.count)
        }
        guard ok == 1 else { throw KeyError.openSSL(.invalidInput, "\(algorithm) encryption failed") }
        output.count = length
        return output
    }
}
