public import CryptoContract

/// One known answer for a cipher: encrypting `plaintext` gives `ciphertext`, and back. For RC4's RFC 6229
/// records the answer is the keystream at `offset` (the plaintext is that many zeros longer).
public struct CipherCase: Sendable, CustomStringConvertible {
    public let spec: CipherSpec
    public let key: [UInt8]
    public let iv: [UInt8]?
    public let plaintext: [UInt8]
    public let ciphertext: [UInt8]
    public let offset: Int
    public let origin: String
    public var description: String { "\(spec) \(origin)" }
}

public struct DigestCase: Sendable, CustomStringConvertible {
    public let algorithm: DigestAlgorithm
    public let message: [UInt8]
    public let digest: [UInt8]
    public let origin: String
    public var description: String { "\(algorithm) \(origin)" }
}

public struct HMACCase: Sendable, CustomStringConvertible {
    public let algorithm: DigestAlgorithm
    public let key: [UInt8]
    public let message: [UInt8]
    /// May be a truncation of the full MAC (RFC 4231 §4.6): compare a prefix.
    public let mac: [UInt8]
    public let origin: String
    public var description: String { "hmac-\(algorithm) \(origin)" }
}

/// The published vectors for each algorithm of the contract, as typed cases.
public enum CipherVectors {
    /// NIST CAVP AESAVS (ECB, CBC, CFB128, CFB8, OFB) and RFC 3686 (CTR), all three key sizes.
    public static func aes(_ mode: CipherMode) throws -> [CipherCase] {
        let (folder, prefix): (String, String)
        switch mode {
        case .ecb: (folder, prefix) = ("ECB", "ECB")
        case .cbc: (folder, prefix) = ("CBC", "CBC")
        case .cfb: (folder, prefix) = ("CFB", "CFB128")
        case .cfb8: (folder, prefix) = ("CFB", "CFB8")
        case .ofb: (folder, prefix) = ("OFB", "OFB")
        case .ctr:
            return try [128, 192, 256].flatMap { bits in
                try cases("ciphers/AES/CTR/aes-\(bits)-ctr.txt", algorithm: { key in CipherAlgorithm.aes(keySize: key.count) }, mode: .ctr)
            }
        case .stream: return []
        }
        var all: [CipherCase] = []
        for kind in ["GFSbox", "KeySbox", "MMT", "VarKey", "VarTxt"] {
            for bits in [128, 192, 256] {
                all += try cases("ciphers/AES/\(folder)/\(prefix)\(kind)\(bits).rsp", algorithm: { CipherAlgorithm.aes(keySize: $0.count) }, mode: mode)
            }
        }
        return all
    }

    /// NIST CAVP TDESVS: every keying option, as three-key 3DES.
    public static func tripleDES(_ mode: CipherMode) throws -> [CipherCase] {
        try tdesFiles(mode, knownAnswerOnly: false).flatMap { file in
            try loadVectors(file).compactMap { record in
                let key: [UInt8]
                if let single = record.bytes("KEYS") {
                    key = single + single + single
                } else if let k1 = record.bytes("KEY1"), let k2 = record.bytes("KEY2"), let k3 = record.bytes("KEY3") {
                    key = k1 + k2 + k3
                } else {
                    return nil
                }
                return make(record, CipherSpec(.tripleDES, mode), key: key)
            }
        }
    }

    /// Single DES from the TDESVS known-answer files, whose three keys are equal (keying option 3), so
    /// 3DES-EDE reduces to DES with that key.
    public static func des(_ mode: CipherMode) throws -> [CipherCase] {
        try tdesFiles(mode, knownAnswerOnly: true).flatMap { file in
            try loadVectors(file).compactMap { record in
                record.bytes("KEYS").flatMap { make(record, CipherSpec(.des, mode), key: $0) }
            }
        }
    }

    /// Schneier's Blowfish vectors (ECB, CBC, CFB64, OFB64).
    public static func blowfish(_ mode: CipherMode) throws -> [CipherCase] {
        let name = ["ecb": "ecb", "cbc": "cbc", "cfb": "cfb", "ofb": "ofb"][mode.rawValue]
        guard let name else { return [] }
        // Schneier's set includes 4- to 7-byte keys, below CommonCrypto's kCCKeySizeMinBlowfish (8): those
        // are outside the contract (and rejected, which the bad-input tests check).
        return try cases("ciphers/Blowfish/bf-\(name).txt", algorithm: { _ in .blowfish }, mode: mode)
            .filter { CipherAlgorithm.blowfish.keySizes.contains($0.key.count) }
    }

    /// RFC 2144 (ECB) and pyca's cross-checked CAST5 vectors (CBC, CFB, OFB, CTR).
    public static func cast5(_ mode: CipherMode) throws -> [CipherCase] {
        let name = ["ecb": "ecb", "cbc": "cbc", "cfb": "cfb", "ofb": "ofb", "ctr": "ctr"][mode.rawValue]
        guard let name else { return [] }
        return try cases("ciphers/CAST5/cast5-\(name).txt", algorithm: { _ in .cast5 }, mode: mode)
    }

    /// RC2: pyca's CBC vector and, for ECB, RFC 2268 §5's vectors whose effective key bits equal the key
    /// length (the only RC2 variant CommonCrypto offers).
    public static func rc2(_ mode: CipherMode) throws -> [CipherCase] {
        switch mode {
        case .cbc:
            return try cases("ciphers/RC2/rc2-cbc.txt", algorithm: { _ in .rc2 }, mode: .cbc)
        case .ecb:
            let rfc2268: [(String, String, String)] = [
                ("ffffffffffffffff", "ffffffffffffffff", "278b27e42e2f0d49"),
                ("88bca90e90875a7f0f79c384627bafb2", "0000000000000000", "2269552ab0f85ca6"),
            ]
            return rfc2268.enumerated().map { index, vector in
                CipherCase(
                    spec: CipherSpec(.rc2, .ecb), key: hexBytes(vector.0), iv: nil, plaintext: hexBytes(vector.1),
                    ciphertext: hexBytes(vector.2), offset: 0, origin: "RFC 2268 §5 #\(index)")
            }
        default:
            return []
        }
    }

    /// RFC 6229 keystreams (40- to 256-bit keys, offsets up to 4096) and pyca's RC4 vectors.
    public static func rc4() throws -> [CipherCase] {
        try ["arc4.txt", "rfc-6229-40.txt", "rfc-6229-56.txt", "rfc-6229-64.txt", "rfc-6229-80.txt",
             "rfc-6229-128.txt", "rfc-6229-192.txt", "rfc-6229-256.txt"].flatMap { file in
            try cases("ciphers/ARC4/\(file)", algorithm: { _ in .rc4 }, mode: .stream)
        }
    }

    private static func tdesFiles(_ mode: CipherMode, knownAnswerOnly: Bool) -> [String] {
        let (folder, prefix): (String, String)
        switch mode {
        case .ecb: (folder, prefix) = ("ECB", "TECB")
        case .cbc: (folder, prefix) = ("CBC", "TCBC")
        case .cfb: (folder, prefix) = ("CFB", "TCFB64")
        case .cfb8: (folder, prefix) = ("CFB", "TCFB8")
        case .ofb: (folder, prefix) = ("OFB", "TOFB")
        default: return []
        }
        let kinds = ["invperm", "permop", "subtab", "varkey", "vartext"] + (knownAnswerOnly ? [] : ["MMT1", "MMT2", "MMT3"])
        return kinds.map { "ciphers/3DES/\(folder)/\(prefix)\($0).rsp" }
    }

    private static func cases(
        _ file: String, algorithm: ([UInt8]) -> CipherAlgorithm?, mode: CipherMode
    ) throws -> [CipherCase] {
        try loadVectors(file).compactMap { record in
            guard let key = record.bytes("KEY"), let algorithm = algorithm(key) else { return nil }
            return make(record, CipherSpec(algorithm, mode), key: key)
        }
    }

    private static func make(_ record: VectorRecord, _ spec: CipherSpec, key: [UInt8]) -> CipherCase? {
        guard let plaintext = record.bytes("PLAINTEXT"), let ciphertext = record.bytes("CIPHERTEXT") else { return nil }
        return CipherCase(
            spec: spec, key: key, iv: spec.ivSize > 0 ? record.bytes("IV") : nil, plaintext: plaintext,
            ciphertext: ciphertext, offset: Int(record["OFFSET"] ?? "0") ?? 0, origin: record.origin)
    }
}

public enum DigestVectors {
    /// NIST CAVP SHAVS (short and long messages) for SHA-1/SHA-2, RFC 1321 for MD5, and the test suites of
    /// RFC 1319 (MD2) and RFC 1320 (MD4), typed in from the RFCs.
    public static func cases(_ algorithm: DigestAlgorithm) throws -> [DigestCase] {
        switch algorithm {
        case .md2: return typed(.md2, rfc1319, "RFC 1319 A.5")
        case .md4: return typed(.md4, rfc1320, "RFC 1320 A.5")
        case .md5: return try nist(.md5, ["hashes/MD5/rfc-1321.txt"])
        case .sha1: return try nist(.sha1, ["hashes/SHA1/SHA1ShortMsg.rsp", "hashes/SHA1/SHA1LongMsg.rsp"])
        default:
            let name = algorithm.rawValue.uppercased()
            return try nist(algorithm, ["hashes/SHA2/\(name)ShortMsg.rsp", "hashes/SHA2/\(name)LongMsg.rsp"])
        }
    }

    private static let suite = [
        "", "a", "abc", "message digest", "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
    ]
    private static let rfc1319 = [
        "8350e5a3e24c153df2275c9f80692773", "32ec01ec4a6dac72c0ab96fb34c0b5d1", "da853b0d3f88d99b30283a69e6ded6bb",
        "ab4f496bfb2a530b219ff33031fe06b0", "4e8ddff3650292ab5a4108c3aa47940b", "da33def2a42df13975352846c30338cd",
        "d5976f79d83d3a0dc9806c3c66f3efd8",
    ]
    private static let rfc1320 = [
        "31d6cfe0d16ae931b73c59d7e0c089c0", "bde52cb31de33e46245e05fbdbd6fb24", "a448017aaf21d8525fc10ae87aa6729d",
        "d9130a8164549fe818874806e1c7014b", "d79e1c308aa5bbcdeea8ed63df412da9", "043f8582f241db351ce627e153e7f0e4",
        "e33b4ddc9c38f2199c3e7b164fcc0536",
    ]

    private static func typed(_ algorithm: DigestAlgorithm, _ digests: [String], _ origin: String) -> [DigestCase] {
        zip(suite, digests).enumerated().map { index, pair in
            DigestCase(algorithm: algorithm, message: Array(pair.0.utf8), digest: hexBytes(pair.1), origin: "\(origin) #\(index)")
        }
    }

    private static func nist(_ algorithm: DigestAlgorithm, _ files: [String]) throws -> [DigestCase] {
        try files.flatMap { file in
            try loadVectors(file).compactMap { record in
                guard let length = record["LEN"].flatMap({ Int($0) }), let msg = record.bytes("MSG"),
                    let digest = record.bytes("MD"), length % 8 == 0
                else { return nil }
                return DigestCase(algorithm: algorithm, message: Array(msg.prefix(length / 8)), digest: digest, origin: record.origin)
            }
        }
    }
}

public enum HMACVectors {
    /// RFC 2202 (HMAC-MD5, HMAC-SHA1) and RFC 4231 (HMAC-SHA-224/256/384/512).
    public static func cases(_ algorithm: DigestAlgorithm) throws -> [HMACCase] {
        let file: String
        switch algorithm {
        case .md5: file = "HMAC/rfc-2202-md5.txt"
        case .sha1: file = "HMAC/rfc-2202-sha1.txt"
        case .sha224, .sha256, .sha384, .sha512: file = "HMAC/rfc-4231-\(algorithm.rawValue).txt"
        default: return []
        }
        return try loadVectors(file).compactMap { record in
            guard let key = record.bytes("KEY"), let msg = record.bytes("MSG"), let mac = record.bytes("MD") else { return nil }
            return HMACCase(algorithm: algorithm, key: key, message: msg, mac: mac, origin: record.origin)
        }
    }
}

/// PBKDF2-HMAC-SHA1 from RFC 6070 (the 16 777 216-iteration case left out: seconds of work for no new path).
public struct PBKDF2Case: Sendable, CustomStringConvertible {
    public let password: [UInt8]
    public let salt: [UInt8]
    public let rounds: Int
    public let derived: [UInt8]
    public let origin: String
    public var description: String { "PBKDF2 \(origin)" }

    public static func rfc6070() throws -> [PBKDF2Case] {
        try loadVectors("KDF/rfc-6070-PBKDF2-SHA1.txt").compactMap { record in
            guard let password = record["PASSWORD"], let salt = record["SALT"],
                let rounds = record["ITERATIONS"].flatMap({ Int($0) }), rounds < 1_000_000, let derived = record.bytes("DERIVED_KEY")
            else { return nil }
            return PBKDF2Case(password: unescape(password), salt: unescape(salt), rounds: rounds, derived: derived, origin: record.origin)
        }
    }

    /// The file writes NUL as `\\0`.
    private static func unescape(_ text: String) -> [UInt8] {
        Array(text.replacingOccurrences(of: "\\0", with: "\u{0}").utf8)
    }
}

/// AES key wrap (SP 800-38F KW, which is RFC 3394 with the default IV), from NIST's CAVP files: wrap
/// (`AE`) and unwrap (`AD`, some of which must fail).
public struct KeyWrapCase: Sendable, CustomStringConvertible {
    public let kek: [UInt8]
    public let plaintext: [UInt8]?
    public let wrapped: [UInt8]
    /// An unwrap case whose integrity check must fail.
    public let mustFail: Bool
    public let origin: String
    public var description: String { "key wrap \(origin)" }

    public static func nist(_ kind: String) throws -> [KeyWrapCase] {
        try [128, 192, 256].flatMap { bits in
            try loadVectors("keywrap/kwtestvectors/KW_\(kind)_\(bits).txt").compactMap { record in
                guard let kek = record.bytes("K"), let wrapped = record.bytes("C") else { return nil }
                let plaintext = record.bytes("P")
                return KeyWrapCase(kek: kek, plaintext: plaintext, wrapped: wrapped, mustFail: record["FAIL"] != nil, origin: record.origin)
            }
        }
    }
}

/// AES-GCM from NIST CAVP (GCMVS): encryption with external IVs, and decryption including must-fail cases;
/// every key size, nonce length, AAD length and tag length in the files.
public struct AEADCase: Sendable, CustomStringConvertible {
    public let key: [UInt8]
    public let nonce: [UInt8]
    public let aad: [UInt8]
    /// `nil` for a decryption case that must fail.
    public let plaintext: [UInt8]?
    public let ciphertext: [UInt8]
    public let tag: [UInt8]
    public let origin: String
    public var description: String { "AES-GCM \(origin)" }

    public static func nist(decrypt: Bool) throws -> [AEADCase] {
        try [128, 192, 256].flatMap { bits in
            try loadVectors("ciphers/AES/GCM/gcm\(decrypt ? "Decrypt" : "EncryptExtIV")\(bits).rsp").compactMap { record in
                guard let key = record.bytes("KEY"), let nonce = record.bytes("IV"), let ciphertext = record.bytes("CT"),
                    let tag = record.bytes("TAG")
                else { return nil }
                let plaintext = record["FAIL"] != nil ? nil : record.bytes("PT")
                return AEADCase(
                    key: key, nonce: nonce, aad: record.bytes("AAD") ?? [], plaintext: plaintext, ciphertext: ciphertext,
                    tag: tag, origin: record.origin)
            }
        }
    }
}
