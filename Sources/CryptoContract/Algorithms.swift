/// A symmetric cipher the backends know.
///
/// AES is three kinds, one per key size, as the kernel and OpenSSL name it; the others take a range of
/// key sizes (``keySizes``), the ranges CommonCrypto accepts.
public enum CipherAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case aes128 = "aes-128"
    case aes192 = "aes-192"
    case aes256 = "aes-256"
    case des = "des"
    case tripleDES = "3des"
    case cast5 = "cast5"
    case rc4 = "rc4"
    case rc2 = "rc2"
    case blowfish = "blowfish"

    /// The AES kind for a key of `keySize` bytes, or `nil` when AES has no such key size.
    public static func aes(keySize: Int) -> CipherAlgorithm? {
        switch keySize {
        case 16: .aes128
        case 24: .aes192
        case 32: .aes256
        default: nil
        }
    }

    /// Block size in bytes; 1 for the stream cipher RC4.
    public var blockSize: Int {
        switch self {
        case .aes128, .aes192, .aes256: 16
        case .des, .tripleDES, .cast5, .rc2, .blowfish: 8
        case .rc4: 1
        }
    }

    /// Accepted key sizes in bytes (CommonCrypto's `kCCKeySizeMin…`/`kCCKeySizeMax…`).
    public var keySizes: ClosedRange<Int> {
        switch self {
        case .aes128: 16...16
        case .aes192: 24...24
        case .aes256: 32...32
        case .des: 8...8
        case .tripleDES: 24...24
        case .cast5: 5...16
        case .rc4: 1...512
        case .rc2: 1...128
        case .blowfish: 8...56
        }
    }

    public var isAES: Bool { self == .aes128 || self == .aes192 || self == .aes256 }

    public var description: String { rawValue }
}

/// A mode of operation. ``stream`` is the cipher's own keystream (RC4, CommonCrypto's `kCCModeRC4`).
public enum CipherMode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ecb, cbc, ctr, cfb, cfb8, ofb, stream

    /// Whether the mode works on whole blocks (and so may pad); the others are stream modes.
    public var isBlockMode: Bool { self == .ecb || self == .cbc }

    public var description: String { rawValue }
}

/// Padding of the last block in ECB and CBC; stream modes ignore it.
public enum CipherPadding: String, Sendable, Hashable, CaseIterable {
    case none
    case pkcs7
}

public enum CipherDirection: String, Sendable, Hashable, CaseIterable {
    case encrypt, decrypt
}

/// What a cipher call does: algorithm, mode and padding.
public struct CipherSpec: Sendable, Hashable, CustomStringConvertible {
    public var algorithm: CipherAlgorithm
    public var mode: CipherMode
    public var padding: CipherPadding

    public init(_ algorithm: CipherAlgorithm, _ mode: CipherMode, padding: CipherPadding = .none) {
        self.algorithm = algorithm
        self.mode = mode
        self.padding = padding
    }

    /// Whether the algorithm can run in this mode at all (RC4 only as `.stream`, block ciphers never).
    public var isValidCombination: Bool {
        (algorithm == .rc4) == (mode == .stream)
    }

    /// Padding that applies: PKCS#7 only in ECB and CBC.
    public var effectivePadding: CipherPadding { mode.isBlockMode ? padding : .none }

    /// IV size in bytes: none for ECB and RC4, one block otherwise.
    public var ivSize: Int { mode == .ecb || mode == .stream ? 0 : algorithm.blockSize }

    public var description: String {
        "\(algorithm)-\(mode)" + (effectivePadding == .pkcs7 ? "-pkcs7" : "")
    }

    /// Checks key and IV against the spec; the one place both backends validate their input.
    /// - Parameters:
    ///   - keyCount: the key's length in bytes.
    ///   - ivCount: the IV's length in bytes, `nil` when none was given. Modes without an IV ignore it.
    /// - Throws: ``CryptoError`` `.unsupported`, `.invalidKeySize` or `.invalidIVSize`.
    public func validate(keyCount: Int, ivCount: Int?) throws {
        guard isValidCombination else {
            throw CryptoError(.unsupported, "\(algorithm) does not run in \(mode) mode")
        }
        guard algorithm.keySizes.contains(keyCount) else {
            throw CryptoError(
                .invalidKeySize,
                "\(algorithm) takes a key of \(algorithm.keySizes.lowerBound)...\(algorithm.keySizes.upperBound) bytes, got \(keyCount)")
        }
        if ivSize > 0, ivCount != ivSize {
            throw CryptoError(
                .invalidIVSize,
                "\(self) takes an IV of \(ivSize) bytes, got " + (ivCount.map { "\($0)" } ?? "none"))
        }
    }

    /// The exact output length of a one-shot call, after checking the input length.
    /// - Throws: ``CryptoError`` `.alignment` for a block mode without padding (or a padded decrypt) whose
    ///   input is not a whole number of blocks.
    public func oneShotOutputLength(_ direction: CipherDirection, inputCount: Int) throws -> Int {
        let block = algorithm.blockSize
        guard mode.isBlockMode else { return inputCount }
        switch (direction, effectivePadding) {
        case (.encrypt, .pkcs7):
            return (inputCount / block + 1) * block
        case (.decrypt, .pkcs7):
            guard inputCount > 0, inputCount % block == 0 else {
                throw CryptoError(
                    .alignment, "padded \(self) decryption needs a non-empty multiple of \(block) bytes, got \(inputCount)")
            }
            return inputCount
        case (_, .none):
            guard inputCount % block == 0 else {
                throw CryptoError(.alignment, "\(self) without padding needs a multiple of \(block) bytes, got \(inputCount)")
            }
            return inputCount
        }
    }
}

/// A message digest the backends know; HMAC runs over MD5 and the SHA family.
public enum DigestAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case md2, md4, md5, sha1, sha224, sha256, sha384, sha512

    /// Digest length in bytes.
    public var outputSize: Int {
        switch self {
        case .md2, .md4, .md5: 16
        case .sha1: 20
        case .sha224: 28
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    /// Input block size in bytes (the HMAC block).
    public var blockSize: Int {
        switch self {
        case .md2: 16
        case .md4, .md5, .sha1, .sha224, .sha256: 64
        case .sha384, .sha512: 128
        }
    }

    /// Whether HMAC over this digest is offered (CommonHMAC's set: MD5 and the SHA family).
    public var supportsHMAC: Bool { self != .md2 && self != .md4 }

    public var description: String { rawValue }
}

/// One operation a backend may or may not offer.
public enum CryptoOperation: Sendable, Hashable, CustomStringConvertible {
    case cipher(CipherAlgorithm, CipherMode)
    case digest(DigestAlgorithm)
    case hmac(DigestAlgorithm)

    public var description: String {
        switch self {
        case .cipher(let algorithm, let mode): "\(algorithm)-\(mode)"
        case .digest(let algorithm): algorithm.rawValue
        case .hmac(let algorithm): "hmac-\(algorithm)"
        }
    }

    /// Every operation of the contract.
    public static let all: [CryptoOperation] =
        CipherAlgorithm.allCases.flatMap { algorithm in
            CipherMode.allCases.filter { CipherSpec(algorithm, $0).isValidCombination }.map { .cipher(algorithm, $0) }
        } + DigestAlgorithm.allCases.map { .digest($0) }
        + DigestAlgorithm.allCases.filter(\.supportsHMAC).map { .hmac($0) }
}

// Dense indexes, for tables that backends and the dispatcher look up on every call (a switch, never a
// hash or an `allCases` array).

extension CipherAlgorithm {
    public static let indexCount = 9

    /// 0..<``indexCount``, stable.
    public var index: Int {
        switch self {
        case .aes128: 0
        case .aes192: 1
        case .aes256: 2
        case .des: 3
        case .tripleDES: 4
        case .cast5: 5
        case .rc4: 6
        case .rc2: 7
        case .blowfish: 8
        }
    }
}

extension CipherMode {
    public static let indexCount = 7

    /// 0..<``indexCount``, stable.
    public var index: Int {
        switch self {
        case .ecb: 0
        case .cbc: 1
        case .ctr: 2
        case .cfb: 3
        case .cfb8: 4
        case .ofb: 5
        case .stream: 6
        }
    }
}

extension DigestAlgorithm {
    public static let indexCount = 8

    /// 0..<``indexCount``, stable.
    public var index: Int {
        switch self {
        case .md2: 0
        case .md4: 1
        case .md5: 2
        case .sha1: 3
        case .sha224: 4
        case .sha256: 5
        case .sha384: 6
        case .sha512: 7
        }
    }
}

extension CryptoOperation {
    public static let indexCount = CipherAlgorithm.indexCount * CipherMode.indexCount + 2 * DigestAlgorithm.indexCount

    /// 0..<``indexCount``: ciphers first (algorithm-major), then digests, then HMACs.
    public var index: Int {
        switch self {
        case .cipher(let algorithm, let mode): algorithm.index * CipherMode.indexCount + mode.index
        case .digest(let algorithm): CipherAlgorithm.indexCount * CipherMode.indexCount + algorithm.index
        case .hmac(let algorithm):
            CipherAlgorithm.indexCount * CipherMode.indexCount + DigestAlgorithm.indexCount + algorithm.index
        }
    }
}

/// An authenticated cipher (AEAD). AES-GCM takes a 16-, 24- or 32-byte key, a nonce of any length (12 bytes
/// is the standard one), associated data, and a tag of 4 to 16 bytes (16 unless a protocol says otherwise).
public enum AEADAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case aesGCM = "aes-gcm"

    public static let tagSizes = 4...16

    /// Checks key, nonce and tag sizes; the one place backends validate AEAD input.
    public func validate(keyCount: Int, nonceCount: Int, tagCount: Int) throws {
        guard CipherAlgorithm.aes(keySize: keyCount) != nil else {
            throw CryptoError(.invalidKeySize, "\(self) takes a 16-, 24- or 32-byte key, got \(keyCount)")
        }
        guard nonceCount >= 1 else { throw CryptoError(.invalidIVSize, "\(self) needs a nonce") }
        guard Self.tagSizes.contains(tagCount) else {
            throw CryptoError(.invalidParameter, "\(self) tags have 4 to 16 bytes, got \(tagCount)")
        }
    }

    public var description: String { rawValue }
}
