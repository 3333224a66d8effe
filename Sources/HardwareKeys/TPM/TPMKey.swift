public import Certificates
internal import CTPM
public import Foundation

/// A private key held in a TPM, as Apple's Secure Enclave holds one: made there, used there, never given out. What is
/// kept of it elsewhere (``blob``: the keychain item's data) is the TPM's public area and its private area encrypted
/// under the TPM's storage key, which only that TPM opens.
///
/// A P-256 key (``generate(in:)``) is what `SecKeyCreateRandomKey` makes for `kSecAttrTokenIDSecureEnclave`: ECDSA
/// and ECDH in the TPM. An RSA key (``generateRSA(bits:in:)``) is for what needs RSA, SCEP enrollment above all,
/// whose CA answers encrypted to the requester's RSA key: the TPM does the raw private operation, and the padding
/// (PKCS#1 v1.5, PSS, OAEP) is done around it here, as OpenSSL does for any key.
public struct TPMKey: PrivateKeyOperations {
    /// The `kSecAttrTokenID` of these keys: Apple's `kSecAttrTokenIDSecureEnclave`.
    public static let tokenID = "com.apple.setoken"

    let areas: TPMKeyAreas
    let tpm: TrustedPlatformModule
    /// The key's public half.
    public let publicKey: AsymmetricKey

    /// Makes a P-256 key in `tpm`.
    /// - Throws: ``HardwareKeyError`` `.unavailable` (no TPM), `.deviceFailure`.
    public static func generate(in tpm: TrustedPlatformModule = .shared) throws -> TPMKey {
        try TPMKey(try tpm.createP256(), tpm: tpm)
    }

    /// Makes an RSA key of `bits` (2048, 3072 or 4096: TPMs offer 2048, some 3072) in `tpm`, exponent 65537.
    /// - Throws: ``KeyError`` `.unsupportedKeySize` for another size; ``HardwareKeyError`` `.unavailable` (no TPM),
    ///   `.deviceFailure` (a size the TPM does not offer among them).
    public static func generateRSA(bits: Int, in tpm: TrustedPlatformModule = .shared) throws -> TPMKey {
        guard [2048, 3072, 4096].contains(bits) else {
            throw KeyError(.unsupportedKeySize, "a TPM's RSA keys are 2048, 3072 or 4096 bits, not \(bits)")
        }
        return try TPMKey(try tpm.createRSA(bits: bits), tpm: tpm)
    }

    /// The key a ``blob`` stands for, used in `tpm` (which must be the TPM that made it: another one fails each
    /// operation with `.deviceFailure`).
    /// - Throws: ``HardwareKeyError`` `.invalidKeyData` for bytes that are not such a blob.
    public init(blob: Data, tpm: TrustedPlatformModule = .shared) throws {
        // version 1 | public size (2, big-endian) | public area | private size (2) | private area
        let bytes = [UInt8](blob)
        func area(at offset: Int) -> (area: [UInt8], end: Int)? {
            guard offset + 2 <= bytes.count else { return nil }
            let size = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard size > 0, offset + 2 + size <= bytes.count else { return nil }
            return (Array(bytes[(offset + 2)..<(offset + 2 + size)]), offset + 2 + size)
        }
        guard bytes.first == 1, let (publicArea, next) = area(at: 1), let (privateArea, end) = area(at: next), end == bytes.count else {
            throw HardwareKeyError(.invalidKeyData, "the data is not a TPM key blob")
        }
        try self.init(TPMKeyAreas(publicArea: publicArea, privateArea: privateArea), tpm: tpm)
    }

    private init(_ areas: TPMKeyAreas, tpm: TrustedPlatformModule) throws {
        self.areas = areas
        self.tpm = tpm
        var kind = ctpm_key_kind(0)
        var key = [UInt8](repeating: 0, count: 512)
        var size = key.count
        guard ctpm_public_key(areas.publicArea, areas.publicArea.count, &kind, &key, &size) == 0 else {
            throw HardwareKeyError(.invalidKeyData, "the TPM key's public area is neither a P-256 nor an RSA key's")
        }
        do {
            publicKey =
                kind == CTPM_KEY_RSA
                ? try AsymmetricKey(
                    externalRepresentation: Data(DER.rsaPublicKey(modulus: Array(key.prefix(size)), exponent: [0x01, 0x00, 0x01])),
                    type: .rsa, isPrivate: false)
                : try AsymmetricKey(externalRepresentation: Data(key.prefix(size)), type: .ellipticCurve, isPrivate: false)
        } catch {
            throw HardwareKeyError(.invalidKeyData, "the TPM key's public key does not decode")
        }
    }

    /// What the keychain keeps of the key (see the type's description).
    public var blob: Data {
        var bytes: [UInt8] = [1]
        for area in [areas.publicArea, areas.privateArea] {
            bytes += [UInt8(area.count >> 8), UInt8(area.count & 0xff)] + area
        }
        return Data(bytes)
    }

    /// The private key as this package's other APIs take one: signing and key exchange reach the TPM, also from
    /// OpenSSL (TLS, certificate requests); export fails.
    public func privateKey() throws -> AsymmetricKey {
        try AsymmetricKey(publicKey: publicKey, heldBy: self)
    }

    public var holderDescription: String { "the TPM" }

    /// The TPM does the raw RSA operation only: the key pads and unpads around it.
    public var performsRSAPadding: Bool { false }

    /// ECDSA in the TPM (P-256); for an RSA key, the raw private operation (the key pads for the other schemes).
    /// The digest is fitted to the integer ECDSA signs on P-256 (a longer digest's leftmost 32 bytes, a shorter one
    /// left-padded), which the TPM then signs as a SHA-256 digest: the same signature.
    /// - Throws: ``KeyError`` for an algorithm of the other key type or input of the wrong size; ``HardwareKeyError``.
    public func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        guard algorithm.keyType == publicKey.type else {
            throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs a \(algorithm.keyType) key; this TPM key is \(publicKey.type)")
        }
        let input = [UInt8](try publicKey.signingInput(data, algorithm: algorithm))
        if publicKey.type == .rsa {
            guard algorithm.scheme == .rsaRaw else { return try privateKey().signature(for: data, algorithm: algorithm) }
            return try tpm.rsaRaw(input, with: areas).withUnsafeBytes { Data($0) }
        }
        guard !input.isEmpty else { throw KeyError(.invalidInput, "ECDSA signs a digest, not empty input") }
        let fitted = input.count >= 32 ? Array(input.prefix(32)) : [UInt8](repeating: 0, count: 32 - input.count) + input
        let (r, s) = try tpm.sign(fitted, with: areas)
        return try publicKey.ecdsaSignature(r: r, s: s, algorithm: algorithm)
    }

    /// RSA decryption: the raw private operation in the TPM (the key unpads for the other schemes). A P-256 key
    /// decrypts ECIES through ``sharedSecret(with:)``.
    public func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        guard publicKey.type == .rsa else { throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs an RSA key; this TPM key is P-256") }
        guard algorithm.scheme == .raw else { return try privateKey().decrypt(data, algorithm: algorithm) }
        return try tpm.rsaRaw([UInt8](data), with: areas).withUnsafeBytes { Data($0) }
    }

    /// ECDH in the TPM (TPM2_ECDH_ZGen) with `peer`, a P-256 public key.
    public func sharedSecret(with peer: AsymmetricKey) throws -> Data {
        guard publicKey.type == .ellipticCurve else { throw KeyError(.unsupportedAlgorithm, "an RSA key does no key exchange") }
        guard peer.type == .ellipticCurve, peer.curve == .p256 else {
            throw KeyError(.invalidKeyData, "the TPM's key agrees with a P-256 public key only")
        }
        return Data(try tpm.sharedSecret(areas, peer: [UInt8](try peer.publicKey().externalRepresentation())))
    }
}
