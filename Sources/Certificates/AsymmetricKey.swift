public import Foundation
internal import COpenSSL
internal import COpenSSLShims
import CryptoContract

/// An RSA or EC key, public or private. Owns its `EVP_PKEY`; freeing it clears the private parts (OpenSSL
/// frees private BIGNUMs with `BN_clear_free`).
///
/// External representations are Apple's: RSA private is PKCS#1 `RSAPrivateKey` DER, RSA public is PKCS#1
/// `RSAPublicKey` DER, EC public is X9.63 `04 || X || Y`, EC private is `04 || X || Y || K`.
///
/// A private key may be held by another process (the keychain service): this object then owns only the public
/// half and signs and decrypts through the holder's ``PrivateKeyOperations``; it cannot be exported
/// (``isHeldElsewhere``), and what OpenSSL signs or decrypts with it (TLS, requests, SCEP) reaches the holder too.
public final class AsymmetricKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never changed after init; every operation makes its own EVP_PKEY_CTX, and
    // OpenSSL 3 allows a key to be used by several threads at once when nobody modifies it.
    private let pkey: OpaquePointer
    public let type: KeyType
    public let isPrivate: Bool
    /// Modulus bits (RSA) or curve bits (EC).
    public let sizeInBits: Int
    /// The curve of an EC key.
    public let curve: EllipticCurve?
    /// Who signs and decrypts for a private key held by another process; nil when this process holds the key.
    private let holder: (any PrivateKeyOperations)?
    /// For a key held elsewhere: the `EVP_PKEY` lent to OpenSSL, whose private operations call the holder
    /// (`copenssl_held_key`).
    private let heldPKEY: OpaquePointer?

    /// Adopts `pkey`, which this object frees.
    init(
        takingOwnership pkey: OpaquePointer, isPrivate: Bool, holder: (any PrivateKeyOperations)? = nil, heldPKEY: OpaquePointer? = nil
    ) throws {
        self.pkey = pkey
        self.isPrivate = isPrivate
        self.holder = holder
        self.heldPKEY = heldPKEY
        sizeInBits = Int(EVP_PKEY_get_bits(pkey))
        if EVP_PKEY_is_a(pkey, "RSA") == 1 {
            type = .rsa
            curve = nil
        } else if EVP_PKEY_is_a(pkey, "EC") == 1, let curve = EllipticCurve(bits: sizeInBits) {
            type = .ellipticCurve
            self.curve = curve
        } else {
            // Not adopted after all: a class whose initializer throws before every property is set is never
            // deinitialized, so the key is freed here.
            EVP_PKEY_free(pkey)
            EVP_PKEY_free(heldPKEY)
            throw KeyError(.invalidKeyData, "neither an RSA key nor an EC key on P-256, P-384 or P-521")
        }
    }

    deinit {
        EVP_PKEY_free(pkey)
        EVP_PKEY_free(heldPKEY)
    }

    /// A private key held by another process: `publicKey` is its public half, `holder` signs and decrypts with it.
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` when `publicKey` is itself private.
    public convenience init(publicKey: AsymmetricKey, heldBy holder: any PrivateKeyOperations) throws {
        guard !publicKey.isPrivate else { throw KeyError(.unsupportedAlgorithm, "a held key is made from a public key") }
        let box = Unmanaged.passRetained(HolderBox(holder)).toOpaque()
        guard let held = copenssl_held_key(publicKey.pkey, HolderBox.operation, box, HolderBox.release) else {
            throw KeyError.openSSL(.backendFailure, "a held key for OpenSSL")
        }
        EVP_PKEY_up_ref(publicKey.pkey)
        try self.init(takingOwnership: publicKey.pkey, isPrivate: true, holder: holder, heldPKEY: held)
    }

    /// Whether this is a private key held by another process (see the type's description).
    public var isHeldElsewhere: Bool { holder != nil }

    /// The error for what a key held elsewhere cannot do here.
    package static func heldElsewhereError(_ what: String) -> KeyError {
        KeyError(.heldElsewhere, "the private key is held by another process (the keychain service): \(what)")
    }

    /// Lends the `EVP_PKEY` to `body` (requests, PKCS#12 export, SCEP messages, TLS), which must neither free nor
    /// change it. A key held elsewhere lends the key whose private operations call its holder; it has no private
    /// numbers to export.
    package func withUnsafePKEY<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(heldPKEY ?? pkey)
    }

    // MARK: Generation

    /// Generates an RSA key pair with public exponent 65537.
    /// - Parameter bits: the modulus size, 1024...4096 in whole bytes.
    /// - Returns: the private key.
    /// - Throws: ``KeyError`` `.unsupportedKeySize`, or `.backendFailure`.
    public static func generateRSA(bits: Int) throws -> AsymmetricKey {
        guard (1024...4096).contains(bits), bits % 8 == 0 else {
            throw KeyError(.unsupportedKeySize, "RSA keys are 1024 to 4096 bits in whole bytes, not \(bits)")
        }
        return try generate("RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) }
    }

    /// Generates an EC key pair on `curve`.
    /// - Returns: the private key.
    /// - Throws: ``KeyError`` `.backendFailure`.
    public static func generateEC(curve: EllipticCurve) throws -> AsymmetricKey {
        try generate("EC") { EVP_PKEY_CTX_set_group_name($0, curve.groupName) }
    }

    private static func generate(_ name: String, _ configure: (OpaquePointer) -> Int32) throws -> AsymmetricKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, name, nil) else {
            throw KeyError.openSSL(.backendFailure, "EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1, configure(context) == 1 else {
            throw KeyError.openSSL(.backendFailure, "key generation set-up")
        }
        var pkey: OpaquePointer?
        guard EVP_PKEY_generate(context, &pkey) == 1, let pkey else {
            throw KeyError.openSSL(.backendFailure, "EVP_PKEY_generate")
        }
        return try AsymmetricKey(takingOwnership: pkey, isPrivate: true)
    }

    // MARK: External representation

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
        guard holder == nil else { throw Self.heldElsewhereError("it cannot be exported") }
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

    // MARK: Operations

    /// Whether this key can run `algorithm` (signing needs a private key; verifying works with either).
    public func supports(_ algorithm: SignatureAlgorithm, signing: Bool) -> Bool {
        algorithm.keyType == type && (!signing || isPrivate)
    }

    /// Whether this key can run `algorithm` (decrypting needs a private key).
    public func supports(_ algorithm: EncryptionAlgorithm, encrypting: Bool) -> Bool {
        type == .rsa && (encrypting || isPrivate)
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
        if let holder { return try holder.signature(for: data, algorithm: algorithm) }
        let input = try toBeSigned(data, algorithm)
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
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
        if let holder { return try holder.decrypt(data, algorithm: algorithm) }
        return try data.withUnsafeBytes { try crypt($0, algorithm, encrypting: false) }
    }

    private func crypt(_ input: UnsafeRawBufferPointer, _ algorithm: EncryptionAlgorithm, encrypting: Bool) throws -> Data {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
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

/// The private-key operations of a key another process holds (``AsymmetricKey/init(publicKey:heldBy:)``): the
/// keychain service signs and decrypts with keys that never leave it.
public protocol PrivateKeyOperations: Sendable {
    /// The signature of `data` (a message or a digest, as the algorithm says).
    func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data
    /// The plaintext of `data`.
    func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data
}

/// The holder of a held key as OpenSSL's callbacks reach it: retained by the key OpenSSL keeps, released when that
/// key is freed.
private final class HolderBox {
    let holder: any PrivateKeyOperations
    init(_ holder: any PrivateKeyOperations) { self.holder = holder }

    static let release: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
        guard let context else { return }
        Unmanaged<HolderBox>.fromOpaque(context).release()
    }

    /// `copenssl_held_operation`: the private operation OpenSSL asks for, done by the holder.
    static let operation: @convention(c) (
        UnsafeMutableRawPointer?, Int32, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?
    ) -> Int32 = { context, request, input, inputLength, output, outputLength in
        guard let context, let input, let output, let outputLength else { return 0 }
        let holder = Unmanaged<HolderBox>.fromOpaque(context).takeUnretainedValue().holder
        let bytes = Data(bytes: input, count: inputLength)
        let result: Data
        do {
            switch UInt32(request) {
            case COPENSSL_HELD_RSA_RAW_SIGN.rawValue: result = try holder.signature(for: bytes, algorithm: .rsaRaw)
            case COPENSSL_HELD_RSA_RAW_DECRYPT.rawValue: result = try holder.decrypt(bytes, algorithm: .rsaRaw)
            case COPENSSL_HELD_ECDSA_SIGN.rawValue: result = try holder.signature(for: bytes, algorithm: .ecdsaX962(nil, hashing: false))
            default: return 0
            }
        } catch {
            return 0
        }
        guard result.count <= outputLength.pointee else { return 0 }
        result.copyBytes(to: output, count: result.count)
        outputLength.pointee = result.count
        return 1
    }
}

extension AsymmetricKey {
    /// Elliptic-curve Diffie–Hellman (SEC 1 §3.3.1): the x-coordinate of this private key times `peer`'s public
    /// point. The curves here (P-256/384/521) have cofactor 1, so the cofactor variant gives the same bytes.
    /// - Parameter peer: the other side's public key (a private key's public half is used), on the same curve.
    /// - Returns: the shared secret, as long as the curve's field.
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` (not two EC keys, a public key here, or one held by another
    ///   process), `.invalidKeyData` (another curve), `.backendFailure` when OpenSSL fails.
    public func sharedSecret(with peer: AsymmetricKey) throws -> Data {
        guard type == .ellipticCurve, peer.type == .ellipticCurve, isPrivate, !isHeldElsewhere else {
            throw KeyError(.unsupportedAlgorithm, "ECDH needs an EC private key held here and an EC public key")
        }
        guard curve == peer.curve else { throw KeyError(.invalidKeyData, "the two keys are on different curves") }
        let other = try peer.publicKey()
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

extension AsymmetricKey {
    /// The public key as an X.509 SubjectPublicKeyInfo (DER), as `openssl pkey -pubout -outform DER` writes it.
    public func subjectPublicKeyInfo() throws -> Data {
        try encoded("SubjectPublicKeyInfo") { i2d_PUBKEY(pkey, $0) }
    }

    /// The private key in OpenSSL's traditional DER (PKCS#1 `RSAPrivateKey`, SEC 1 `ECPrivateKey`), as
    /// `openssl rsa`/`openssl ec -outform DER` write it.
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` for a public key or one held by another process.
    public func traditionalPrivateKey() throws -> Data {
        guard isPrivate, !isHeldElsewhere else { throw KeyError(.unsupportedAlgorithm, "only a private key held here can be written out") }
        return try encoded("private key") { i2d_PrivateKey(pkey, $0) }
    }

    /// The DER an OpenSSL `i2d_…` call writes: its length first (a nil output), then the bytes.
    private func encoded(_ what: String, _ write: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws -> Data {
        ERR_clear_error()
        let length = write(nil)
        guard length > 0 else { throw KeyError.openSSL(.backendFailure, "encoding the \(what)") }
        var bytes = Data(count: Int(length))
        let written = bytes.withUnsafeMutableBytes { raw -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)  // !: length > 0
            return write(&cursor)
        }
        guard written == length else { throw KeyError.openSSL(.backendFailure, "encoding the \(what)") }
        return bytes
    }
}
