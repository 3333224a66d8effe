internal import COpenSSL

/// The kind of an asymmetric key.
public struct KeyType: Hashable, Sendable, CustomStringConvertible {
    fileprivate let name: String
    /// RSA (PKCS#1).
    public static let rsa = KeyType(name: "RSA")
    /// Elliptic curve over a NIST prime field (P-256, P-384, P-521).
    public static let ellipticCurve = KeyType(name: "EC")
    public var description: String { name }
}

/// A NIST prime curve.
public struct EllipticCurve: Hashable, Sendable, CustomStringConvertible {
    /// OpenSSL's group name.
    let groupName: String
    /// The curve's size in bits (Apple's `kSecAttrKeySizeInBits`).
    public let bits: Int
    /// Bytes of one field element: the width of X, Y and the private scalar in Apple's external representation.
    public var fieldBytes: Int { (bits + 7) / 8 }

    public static let p256 = EllipticCurve(groupName: "P-256", bits: 256)
    public static let p384 = EllipticCurve(groupName: "P-384", bits: 384)
    public static let p521 = EllipticCurve(groupName: "P-521", bits: 521)
    public static let all: [EllipticCurve] = [.p256, .p384, .p521]

    /// The curve of a size in bits, or nil.
    public init?(bits: Int) {
        guard let curve = Self.all.first(where: { $0.bits == bits }) else { return nil }
        self = curve
    }

    private init(groupName: String, bits: Int) {
        self.groupName = groupName
        self.bits = bits
    }

    public var description: String { groupName }
}

/// A digest used by a signature or OAEP.
public struct KeyDigest: Hashable, Sendable, CustomStringConvertible {
    /// Apple's spelling in algorithm names ("SHA256").
    public let name: String
    /// Output size in bytes.
    public let size: Int

    public static let sha1 = KeyDigest(name: "SHA1", size: 20)
    public static let sha224 = KeyDigest(name: "SHA224", size: 28)
    public static let sha256 = KeyDigest(name: "SHA256", size: 32)
    public static let sha384 = KeyDigest(name: "SHA384", size: 48)
    public static let sha512 = KeyDigest(name: "SHA512", size: 64)
    public static let all: [KeyDigest] = [.sha1, .sha224, .sha256, .sha384, .sha512]

    /// OpenSSL's static digest (no provider fetch; these never fail).
    var md: OpaquePointer {
        switch size {
        case 20: EVP_sha1()
        case 28: EVP_sha224()
        case 32: EVP_sha256()
        case 48: EVP_sha384()
        default: EVP_sha512()
        }
    }

    public var description: String { name }
}

/// A signature scheme: what padding or encoding, which digest, and whether the input is the message (hashed
/// first) or already its digest.
public struct SignatureAlgorithm: Hashable, Sendable, CustomStringConvertible {
    /// The signature scheme, for a holder that runs it itself (a token).
    public enum Scheme: Hashable, Sendable { case rsaRaw, rsaPKCS1v15, rsaPSS, ecdsaX962, ecdsaRFC4754 }
    public let scheme: Scheme
    /// The digest; nil for raw schemes and for digest input of unspecified length.
    public let digest: KeyDigest?
    /// True when the input is the message, hashed with ``digest`` first.
    public let hashesInput: Bool
    /// The PSS salt length; nil means the digest's size (Apple's choice).
    public let saltLength: Int?

    init(scheme: Scheme, digest: KeyDigest?, hashesInput: Bool, saltLength: Int? = nil) {
        self.scheme = scheme
        self.digest = digest
        self.hashesInput = hashesInput
        self.saltLength = saltLength
    }

    /// Raw RSA: the private-key operation on the input (at most the modulus size), no padding.
    public static let rsaRaw = SignatureAlgorithm(scheme: .rsaRaw, digest: nil, hashesInput: false)
    /// PKCS#1 v1.5 type-1 padding around the input as given (no DigestInfo).
    public static let rsaPKCS1v15Raw = SignatureAlgorithm(scheme: .rsaPKCS1v15, digest: nil, hashesInput: false)
    /// PKCS#1 v1.5 with the DigestInfo of `digest`, over a digest or (`hashing`) over the message.
    public static func rsaPKCS1v15(_ digest: KeyDigest, hashing: Bool) -> SignatureAlgorithm {
        SignatureAlgorithm(scheme: .rsaPKCS1v15, digest: digest, hashesInput: hashing)
    }
    /// RSASSA-PSS with MGF1 over the same digest and a salt as long as the digest (Apple's choice).
    public static func rsaPSS(_ digest: KeyDigest, hashing: Bool) -> SignatureAlgorithm {
        SignatureAlgorithm(scheme: .rsaPSS, digest: digest, hashesInput: hashing)
    }
    /// RSASSA-PSS with MGF1 over the same digest and a salt of `saltLength` bytes (for other peers' signatures).
    public static func rsaPSS(_ digest: KeyDigest, hashing: Bool, saltLength: Int) -> SignatureAlgorithm {
        SignatureAlgorithm(scheme: .rsaPSS, digest: digest, hashesInput: hashing, saltLength: saltLength)
    }
    /// ECDSA with the DER (X9.62) signature encoding. A nil digest signs input of any length as the digest.
    public static func ecdsaX962(_ digest: KeyDigest?, hashing: Bool) -> SignatureAlgorithm {
        SignatureAlgorithm(scheme: .ecdsaX962, digest: digest, hashesInput: hashing && digest != nil)
    }
    /// ECDSA with the fixed-width r||s (RFC 4754) signature encoding.
    public static func ecdsaRFC4754(_ digest: KeyDigest?, hashing: Bool) -> SignatureAlgorithm {
        SignatureAlgorithm(scheme: .ecdsaRFC4754, digest: digest, hashesInput: hashing && digest != nil)
    }

    /// The key type the scheme belongs to.
    public var keyType: KeyType {
        switch scheme {
        case .rsaRaw, .rsaPKCS1v15, .rsaPSS: .rsa
        case .ecdsaX962, .ecdsaRFC4754: .ellipticCurve
        }
    }

    public var description: String { "\(scheme)\(digest.map { "-\($0)" } ?? "")\(hashesInput ? "-message" : "")" }
}

/// An RSA encryption scheme.
public struct EncryptionAlgorithm: Hashable, Sendable, CustomStringConvertible {
    /// The padding scheme, for a holder that runs it itself (a token).
    public enum Scheme: Hashable, Sendable { case raw, pkcs1, oaep }
    public let scheme: Scheme
    /// The OAEP digest (also MGF1's), nil otherwise.
    public let digest: KeyDigest?

    /// Raw RSA: input at most the modulus size, numerically below the modulus, left-padded with zeros.
    public static let rsaRaw = EncryptionAlgorithm(scheme: .raw, digest: nil)
    /// PKCS#1 v1.5 type-2 padding: input at most the modulus size minus 11.
    public static let rsaPKCS1 = EncryptionAlgorithm(scheme: .pkcs1, digest: nil)
    /// OAEP with MGF1 over `digest` and an empty label: input at most the modulus size minus 2·hLen − 2.
    public static func rsaOAEP(_ digest: KeyDigest) -> EncryptionAlgorithm { EncryptionAlgorithm(scheme: .oaep, digest: digest) }

    /// The longest plaintext for a modulus of `modulusBytes`.
    public func maximumPlaintextSize(modulusBytes: Int) -> Int {
        switch scheme {
        case .raw: modulusBytes
        case .pkcs1: modulusBytes - 11
        case .oaep: modulusBytes - 2 * (digest?.size ?? 20) - 2
        }
    }

    public var description: String { "\(scheme)\(digest.map { "-\($0)" } ?? "")" }
}
