internal import COpenSSL
public import CryptoContract

/// OpenSSL's algorithm objects, fetched once per process and kept for its life.
///
/// Fetching is the expensive part of an EVP call (about 0.15–0.2 µs each, measured here), so every call
/// looks its object up in these tables by a dense index instead. The `legacy` provider is loaded once for
/// DES, CAST5, RC2, RC4, Blowfish and MD4, next to `default`.
@usableFromInline final class OpenSSLAlgorithms: @unchecked Sendable {
    // @unchecked: every stored property is written once in init and only read afterwards; OpenSSL's fetched
    // objects are immutable and documented as safe to share between threads.

    static let shared = OpenSSLAlgorithms()

    /// `nil` where OpenSSL has no such cipher (the generic modes take over, see ``GenericModeCipher``).
    @usableFromInline let ciphers: [OpaquePointer?]
    private let digests: [OpaquePointer?]
    let hmac: OpaquePointer?
    /// AES-128/192/256-GCM.
    private let gcms: [OpaquePointer?]
    /// The default and legacy providers, loaded for the process's life.
    private let providers: [OpaquePointer?]

    private init() {
        // OSSL_PROVIDER_load: "returns a pointer to the provider object, or NULL on error"; once loaded a
        // provider stays for the process. Loading `legacy` disables the implicit `default`, so load both.
        // The handles are kept (in this value, which lives for the process) so that a leak checker sees them.
        providers = [OSSL_PROVIDER_load(nil, "default"), OSSL_PROVIDER_load(nil, "legacy")]  // legacy: else those ciphers stay nil
        ERR_clear_error()

        var ciphers = [OpaquePointer?](repeating: nil, count: CipherAlgorithm.indexCount * CipherMode.indexCount)
        for algorithm in CipherAlgorithm.allCases {
            for mode in CipherMode.allCases {
                guard let name = Self.openSSLName(algorithm, mode) else { continue }
                ciphers[Self.index(algorithm, mode)] = EVP_CIPHER_fetch(nil, name, nil)
            }
        }
        self.ciphers = ciphers
        digests = DigestAlgorithm.allCases.map { algorithm in
            Self.openSSLName(algorithm).flatMap { EVP_MD_fetch(nil, $0, nil) }
        }
        hmac = EVP_MAC_fetch(nil, "HMAC", nil)
        gcms = [String](["AES-128-GCM", "AES-192-GCM", "AES-256-GCM"]).map { EVP_CIPHER_fetch(nil, $0, nil) }
        ERR_clear_error()
    }

    /// Inlinable, as the one-shot that looks it up: across modules it was a call of its own on every routed cipher call.
    @inlinable func cipher(_ algorithm: CipherAlgorithm, _ mode: CipherMode) -> OpaquePointer? {
        ciphers[Self.index(algorithm, mode)]
    }

    func digest(_ algorithm: DigestAlgorithm) -> OpaquePointer? { digests[algorithm.index] }

    func gcm(keySize: Int) -> OpaquePointer? {
        switch keySize {
        case 16: gcms[0]
        case 24: gcms[1]
        case 32: gcms[2]
        default: nil
        }
    }

    @inlinable static func index(_ algorithm: CipherAlgorithm, _ mode: CipherMode) -> Int {
        algorithm.index * CipherMode.indexCount + mode.index
    }

    /// OpenSSL's name for a cipher, `nil` where OpenSSL has none.
    static func openSSLName(_ algorithm: CipherAlgorithm, _ mode: CipherMode) -> String? {
        let base: String
        switch algorithm {
        case .aes128: base = "AES-128"
        case .aes192: base = "AES-192"
        case .aes256: base = "AES-256"
        case .des: base = "DES"
        case .tripleDES: base = "DES-EDE3"
        case .cast5: base = "CAST5"
        case .rc2: base = "RC2"
        case .blowfish: base = "BF"
        case .rc4: return mode == .stream ? "RC4" : nil
        }
        switch mode {
        case .ecb: return base + "-ECB"
        case .cbc: return base + "-CBC"
        case .cfb: return base + "-CFB"
        case .ofb: return base + "-OFB"
        case .cfb8: return algorithm.isAES || algorithm == .des || algorithm == .tripleDES ? base + "-CFB8" : nil
        case .ctr: return algorithm.isAES ? base + "-CTR" : nil
        case .stream: return nil
        }
    }

    static func openSSLName(_ algorithm: DigestAlgorithm) -> String? {
        switch algorithm {
        case .md2: nil  // not in OpenSSL 3: see MD2.swift
        case .md4: "MD4"
        case .md5: "MD5"
        case .sha1: "SHA1"
        case .sha224: "SHA224"
        case .sha256: "SHA256"
        case .sha384: "SHA384"
        case .sha512: "SHA512"
        }
    }
}

extension CipherAlgorithm {
    /// Whether OpenSSL's cipher has a fixed key length (else it is set per call).
    var hasFixedKeyLength: Bool { keySizes.count == 1 }
}
