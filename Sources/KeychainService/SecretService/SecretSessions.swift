internal import COpenSSL
import Foundation
import SecurityBase

/// A Secret Service session: how secrets travel between this service and one client. `plain` sends them as they
/// are (the bus is the user's own); `dh-ietf1024-sha256-aes128-cbc-pkcs7` agrees an AES-128 key by Diffie–Hellman
/// in the 1024-bit MODP group of RFC 2409 (generator 2), derived by HKDF-SHA256 (no salt, no info) from the shared
/// value as 128 big-endian bytes, and sends each secret AES-128-CBC encrypted with PKCS#7 padding under a fresh IV
/// (the secret's parameters), as libsecret and gnome-keyring do.
struct SecretSession {
    /// The bus name of the client that opened it: no other client may use it.
    let owner: String
    /// The AES key of a DH session; nil for `plain`.
    let key: SecretBytes?

    static let plain = "plain"
    static let diffieHellman = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    /// Opens a session of `algorithm` for `owner` with the client's `input`: the session and the output to send back
    /// (nothing for plain, the service's public value for DH).
    static func open(_ algorithm: String, input: BusValue?, owner: String) throws -> (SecretSession, BusValue) {
        switch algorithm {
        case plain:
            return (SecretSession(owner: owner, key: nil), .string(""))
        case diffieHellman:
            guard case .bytes(let clientPublic)? = input else {
                throw BusError(.invalidArguments, "\(diffieHellman) takes the client's public value as bytes")
            }
            let (key, ownPublic) = try agree(clientPublic)
            return (SecretSession(owner: owner, key: key), .bytes(ownPublic))
        default:
            throw BusError(.notSupported, "the session algorithm \(algorithm) is not offered: \(plain) or \(diffieHellman)")
        }
    }

    /// The secret `plain` as it goes to the client.
    func encode(_ plain: SecretBytes, session path: String, contentType: String) throws -> WireSecret {
        guard let key else {
            return WireSecret(session: path, parameters: [], value: plain.withUnsafeBytes { Array($0) }, contentType: contentType)
        }
        var iv = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&iv, 16) == 1 else { throw BusError(.failed, "no random bytes for the IV") }
        let value = try Self.crypt(plain.withUnsafeBytes { Array($0) }, key: key, iv: iv, encrypt: true)
        return WireSecret(session: path, parameters: iv, value: value.withUnsafeBytes { Array($0) }, contentType: contentType)
    }

    /// The plaintext of a secret the client sent.
    func decode(_ secret: WireSecret) throws -> SecretBytes {
        guard let key else { return SecretBytes(secret.value) }
        guard secret.parameters.count == 16 else { throw BusError(.invalidArguments, "a secret of this session carries a 16-byte IV") }
        return try Self.crypt(secret.value, key: key, iv: secret.parameters, encrypt: false)
    }

    // MARK: The key agreement

    private static let modulusBytes = 128

    /// The session key agreed with `clientPublic`, and the service's public value.
    private static func agree(_ clientPublic: [UInt8]) throws -> (SecretBytes, [UInt8]) {
        guard let context = BN_CTX_new() else { throw BusError(.failed, "no memory for the key agreement") }
        defer { BN_CTX_free(context) }
        guard let prime = BN_get_rfc2409_prime_1024(nil), let generator = BN_new(), let secret = BN_secure_new(),
            let ownPublic = BN_new(), let peer = BN_bin2bn(clientPublic, Int32(clientPublic.count), nil), let shared = BN_secure_new(),
            let limit = BN_dup(prime)
        else { throw BusError(.failed, "no memory for the key agreement") }
        defer {
            BN_free(prime)
            BN_free(generator)
            BN_clear_free(secret)
            BN_free(ownPublic)
            BN_free(peer)
            BN_clear_free(shared)
            BN_free(limit)
        }
        // The peer's value must lie in (1, p - 1): 0, 1 and p - 1 would force the shared value.
        guard BN_sub_word(limit, 1) == 1, BN_cmp(peer, BN_value_one()) > 0, BN_cmp(peer, limit) < 0 else {
            throw BusError(.invalidArguments, "the client's public value is not in the group")
        }
        guard BN_set_word(generator, 2) == 1, BN_priv_rand_range(secret, limit) == 1,
            BN_mod_exp(ownPublic, generator, secret, prime, context) == 1, BN_mod_exp(shared, peer, secret, prime, context) == 1
        else { throw BusError(.failed, "the key agreement failed") }
        var sharedBytes = SecretBytes(zeroed: modulusBytes)
        var publicBytes = [UInt8](repeating: 0, count: modulusBytes)
        guard sharedBytes.withUnsafeMutableBytes({ BN_bn2binpad(shared, $0.baseAddress, Int32(modulusBytes)) }) == Int32(modulusBytes),
            BN_bn2binpad(ownPublic, &publicBytes, Int32(modulusBytes)) == Int32(modulusBytes)
        else { throw BusError(.failed, "the key agreement failed") }
        // HKDF-SHA256 with no salt (32 zero bytes) and no info, one block: the key is its first 16 bytes.
        var pseudoRandom = SecretBytes(zeroed: 32)
        var block = SecretBytes(zeroed: 32)
        let salt = [UInt8](repeating: 0, count: 32)
        var one: UInt8 = 1
        let ok = pseudoRandom.withUnsafeMutableBytes { prk in
            sharedBytes.withUnsafeBytes { ikm in
                HMAC(EVP_sha256(), salt, 32, ikm.baseAddress, ikm.count, prk.baseAddress, nil) != nil
            }
        } && block.withUnsafeMutableBytes { out in
            pseudoRandom.withUnsafeBytes { prk in HMAC(EVP_sha256(), prk.baseAddress, 32, &one, 1, out.baseAddress, nil) != nil }
        }
        guard ok else { throw BusError(.failed, "the key derivation failed") }
        return (block.withUnsafeBytes { SecretBytes(UnsafeRawBufferPointer(rebasing: $0.prefix(16))) }, publicBytes)
    }

    /// AES-128-CBC with PKCS#7 padding.
    private static func crypt(_ input: [UInt8], key: SecretBytes, iv: [UInt8], encrypt: Bool) throws -> SecretBytes {
        guard let context = EVP_CIPHER_CTX_new() else { throw BusError(.failed, "no memory for the cipher") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = SecretBytes(zeroed: input.count + 16)
        var written: Int32 = 0
        var final: Int32 = 0
        let ok = key.withUnsafeBytes { key in
            output.withUnsafeMutableBytes { out -> Bool in
                let start = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return EVP_CipherInit_ex(context, EVP_aes_128_cbc(), nil, key.baseAddress?.assumingMemoryBound(to: UInt8.self), iv, encrypt ? 1 : 0) == 1
                    && EVP_CipherUpdate(context, start, &written, input, Int32(input.count)) == 1
                    && EVP_CipherFinal_ex(context, start + Int(written), &final) == 1
            }
        }
        guard ok else {
            ERR_clear_error()
            throw BusError(.invalidArguments, encrypt ? "the secret cannot be encrypted" : "the secret does not decrypt with the session's key")
        }
        return output.withUnsafeBytes { SecretBytes(UnsafeRawBufferPointer(rebasing: $0.prefix(Int(written + final)))) }
    }
}
