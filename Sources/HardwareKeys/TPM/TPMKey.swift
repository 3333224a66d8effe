public import Certificates
internal import CTPM
public import Foundation

/// A P-256 private key held in a TPM, as Apple's Secure Enclave holds one: made there, used there (ECDSA, ECDH),
/// never given out. What is kept of it elsewhere (``blob``: the keychain item's data) is the TPM's public area and
/// its private area encrypted under the TPM's storage key, which only that TPM opens.
public struct TPMKey: PrivateKeyOperations {
    /// The `kSecAttrTokenID` of these keys: Apple's `kSecAttrTokenIDSecureEnclave`.
    public static let tokenID = "com.apple.setoken"

    let areas: TPMKeyAreas
    let tpm: TrustedPlatformModule
    /// The key's public half.
    public let publicKey: AsymmetricKey

    /// Makes a key in `tpm`.
    /// - Throws: ``HardwareKeyError`` `.unavailable` (no TPM), `.deviceFailure`.
    public static func generate(in tpm: TrustedPlatformModule = .shared) throws -> TPMKey {
        let (publicArea, privateArea, point) = try tpm.createP256()
        return try TPMKey(TPMKeyAreas(publicArea: publicArea, privateArea: privateArea), point: point, tpm: tpm)
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
        var point = [UInt8](repeating: 0, count: 65)
        guard ctpm_public_point(publicArea, publicArea.count, &point) == 0 else {
            throw HardwareKeyError(.invalidKeyData, "the blob's public area is not a P-256 key's")
        }
        try self.init(TPMKeyAreas(publicArea: publicArea, privateArea: privateArea), point: point, tpm: tpm)
    }

    private init(_ areas: TPMKeyAreas, point: [UInt8], tpm: TrustedPlatformModule) throws {
        self.areas = areas
        self.tpm = tpm
        do {
            publicKey = try AsymmetricKey(externalRepresentation: Data(point), type: .ellipticCurve, isPrivate: false)
        } catch {
            throw HardwareKeyError(.invalidKeyData, "the TPM key's public point is not on P-256")
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

    /// ECDSA in the TPM. The digest is fitted to the integer ECDSA signs on P-256 (a longer digest's leftmost
    /// 32 bytes, a shorter one left-padded), which the TPM then signs as a SHA-256 digest: the same signature.
    /// - Throws: ``KeyError`` for an algorithm other than ECDSA or input of the wrong size; ``HardwareKeyError``.
    public func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        guard algorithm.keyType == .ellipticCurve else { throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs an RSA key; the TPM's key is P-256") }
        let digest = [UInt8](try publicKey.signingInput(data, algorithm: algorithm))
        guard !digest.isEmpty else { throw KeyError(.invalidInput, "ECDSA signs a digest, not empty input") }
        let fitted = digest.count >= 32 ? Array(digest.prefix(32)) : [UInt8](repeating: 0, count: 32 - digest.count) + digest
        let (r, s) = try tpm.sign(fitted, with: areas)
        return try publicKey.ecdsaSignature(r: r, s: s, algorithm: algorithm)
    }

    /// RSA decryption: a TPM key here is a P-256 key (ECIES decrypts through ``sharedSecret(with:)``).
    public func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs an RSA key; the TPM's key is P-256")
    }

    /// ECDH in the TPM (TPM2_ECDH_ZGen) with `peer`, a P-256 public key.
    public func sharedSecret(with peer: AsymmetricKey) throws -> Data {
        guard peer.type == .ellipticCurve, peer.curve == .p256 else {
            throw KeyError(.invalidKeyData, "the TPM's key agrees with a P-256 public key only")
        }
        return Data(try tpm.sharedSecret(areas, peer: [UInt8](try peer.publicKey().externalRepresentation())))
    }
}
