import Foundation
internal import COpenSSL
internal import COpenSSLShims

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
    let pkey: OpaquePointer
    public let type: KeyType
    public let isPrivate: Bool
    /// Modulus bits (RSA) or curve bits (EC).
    public let sizeInBits: Int
    /// The curve of an EC key.
    public let curve: EllipticCurve?
    /// Who signs and decrypts for a private key held by another process; nil when this process holds the key.
    let holder: (any PrivateKeyOperations)?
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

    /// A private key held elsewhere (another process, a TPM): `publicKey` is its public half, `holder` signs and
    /// decrypts with it.
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

    /// Whether this is a private key held elsewhere (see the type's description).
    public var isHeldElsewhere: Bool { holder != nil }

    /// Who holds a key held elsewhere; nil for a key held here.
    public var heldBy: (any PrivateKeyOperations)? { holder }

    /// The error for what a key held elsewhere cannot do here.
    package func heldElsewhereError(_ what: String) -> KeyError {
        KeyError(.heldElsewhere, "the private key is held by \(holder?.holderDescription ?? "another process"): \(what)")
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
