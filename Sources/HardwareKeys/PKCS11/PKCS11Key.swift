public import Certificates
internal import CPKCS11
public import Foundation
public import SecurityBase

/// A private key on a PKCS#11 token: it signs, decrypts and agrees there, after the token's PIN, and never leaves.
/// Named by its CKA_ID, which its certificate and public key share.
public struct PKCS11Key: PrivateKeyOperations {
    public let token: PKCS11Token
    public let id: [UInt8]
    public let label: String
    public let publicKey: AsymmetricKey
    /// The PIN each operation logs in with (Apple's smart-card keys keep the authentication context of the query
    /// that returned them); nil: operations that need it fail with `.interactionNotAllowed`.
    let pin: SecretBytes?

    init(token: PKCS11Token, id: [UInt8], label: String, publicKey: AsymmetricKey, pin: SecretBytes?) {
        self.token = token
        self.id = id
        self.label = label
        self.publicKey = publicKey
        self.pin = pin
    }

    /// The same key, its operations logging in with `pin`.
    public func with(pin: SecretBytes?) -> PKCS11Key {
        PKCS11Key(token: token, id: id, label: label, publicKey: publicKey, pin: pin)
    }

    /// The private key as this package's other APIs take one (TLS, certificate requests, `SecKey`): its private
    /// operations reach the token; export fails.
    public func privateKey() throws -> AsymmetricKey {
        try AsymmetricKey(publicKey: publicKey, heldBy: self)
    }

    public var holderDescription: String { "the token \(token.label)" }

    /// Signs on the token: ECDSA (CKM_ECDSA over the digest), RSA PKCS#1 v1.5 (CKM_RSA_PKCS over the DigestInfo),
    /// PSS (CKM_RSA_PKCS_PSS), raw RSA (CKM_RSA_X_509).
    /// - Throws: ``KeyError`` for an algorithm of the other key type or input of the wrong size; ``HardwareKeyError``.
    public func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        let input = [UInt8](try publicKey.signingInput(data, algorithm: algorithm))
        return try withPrivateKey("signature") { session, key in
            var output = [UInt8](repeating: 0, count: 1024)
            var size = output.count
            switch algorithm.scheme {
            case .ecdsaX962, .ecdsaRFC4754:
                try session.check("signature") { cp11_run($0, $1, $2, key, PKCS11.ecdsa, nil, 0, 0, input, input.count, &output, &size) }
                let half = size / 2
                return try publicKey.ecdsaSignature(r: Array(output[..<half]), s: Array(output[half..<size]), algorithm: algorithm)
            case .rsaRaw:
                try session.check("signature") { cp11_run($0, $1, $2, key, PKCS11.rsaX509, nil, 0, 0, input, input.count, &output, &size) }
            case .rsaPKCS1v15:
                let encoded = try algorithm.digest.map { try DigestInfo.prefix($0) + input } ?? input
                try session.check("signature") {
                    cp11_run($0, $1, $2, key, PKCS11.rsaPKCS, nil, 0, 0, encoded, encoded.count, &output, &size)
                }
            case .rsaPSS:
                guard let digest = algorithm.digest, let hash = PKCS11.hash(digest.name) else {
                    throw KeyError(.unsupportedAlgorithm, "PSS needs a digest")
                }
                let salt = UInt(max(0, algorithm.saltLength ?? digest.size))
                try session.check("signature") {
                    cp11_rsa_pss($0, $1, $2, key, hash.mechanism, hash.mgf, salt, input, input.count, &output, &size)
                }
            }
            return Data(output.prefix(size))
        }
    }

    /// Decrypts on the token: RSA PKCS#1 v1.5, OAEP (the token must offer the digest: many offer SHA-1 only), raw.
    public func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        guard publicKey.type == .rsa else { throw KeyError(.unsupportedAlgorithm, "\(algorithm) needs an RSA key") }
        let input = [UInt8](data)
        return try withPrivateKey("decryption") { session, key in
            var output = [UInt8](repeating: 0, count: 1024)
            var size = output.count
            switch algorithm.scheme {
            case .raw:
                try session.check("decryption") { cp11_run($0, $1, $2, key, PKCS11.rsaX509, nil, 0, 1, input, input.count, &output, &size) }
            case .pkcs1:
                try session.check("decryption") { cp11_run($0, $1, $2, key, PKCS11.rsaPKCS, nil, 0, 1, input, input.count, &output, &size) }
            case .oaep:
                guard let digest = algorithm.digest, let hash = PKCS11.hash(digest.name) else {
                    throw KeyError(.unsupportedAlgorithm, "OAEP needs a digest")
                }
                try session.check("decryption") {
                    cp11_rsa_oaep_decrypt($0, $1, $2, key, hash.mechanism, hash.mgf, input, input.count, &output, &size)
                }
            }
            defer { output.withUnsafeMutableBytes { secureWipe($0) } }
            return Data(output.prefix(size))
        }
    }

    /// ECDH on the token (CKM_ECDH1_DERIVE, no KDF) with `peer`, a public key on the key's curve.
    public func sharedSecret(with peer: AsymmetricKey) throws -> Data {
        guard publicKey.type == .ellipticCurve, peer.type == .ellipticCurve, peer.curve == publicKey.curve else {
            throw KeyError(.invalidKeyData, "the token's key agrees with a public key on its own curve only")
        }
        let point = [UInt8](try peer.publicKey().externalRepresentation())
        return try withPrivateKey("key exchange") { session, key in
            var secret = [UInt8](repeating: 0, count: 256)
            var size = secret.count
            try session.check("key exchange") { cp11_ecdh($0, $1, $2, key, point, point.count, &secret, &size) }
            defer { secret.withUnsafeMutableBytes { secureWipe($0) } }
            return Data(secret.prefix(size))
        }
    }

    /// Runs `body` with the private key object, in a session logged in with the PIN.
    private func withPrivateKey<T>(_ what: String, _ body: (PKCS11Token.Session, UInt) throws -> T) throws -> T {
        let pin = pin ?? SecretBytes([])
        return try token.withSession(pin: pin) { session in
            guard let key = try session.find(PKCS11.privateKey, id: id).first else {
                throw HardwareKeyError(.invalidKeyData, "the token \(token.label) has no private key for \(label.isEmpty ? "this key" : label)")
            }
            return try body(session, key)
        }
    }
}

/// PKCS#1 v1.5's DigestInfo prefixes (RFC 8017, section 9.2, note 1): what CKM_RSA_PKCS signs before the digest.
enum DigestInfo {
    static func prefix(_ digest: KeyDigest) throws -> [UInt8] {
        switch digest.name {
        case "SHA1": [0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14]
        case "SHA224": [0x30, 0x2d, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x04, 0x05, 0x00, 0x04, 0x1c]
        case "SHA256": [0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20]
        case "SHA384": [0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30]
        case "SHA512": [0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40]
        default: throw KeyError(.unsupportedAlgorithm, "PKCS#1 v1.5 with \(digest) has no DigestInfo here")
        }
    }
}
