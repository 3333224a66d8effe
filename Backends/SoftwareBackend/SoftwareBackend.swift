internal import COpenSSL
public import COpenSSLShims  // public: the one-shot bodies the dispatcher inlines call it (no client sees its names without importing it)
public import SecurityBase
public import CryptoContract

/// The software backend: OpenSSL 3 libcrypto for every algorithm of the contract (the `legacy` provider for
/// the obsolete ones), MD2 from RFC 1319, and CTR/CFB8 built on ECB where OpenSSL lacks them.
///
/// Algorithm objects are fetched once per process; one-shot calls reuse their thread's contexts
/// (``ThreadContexts``), so they allocate nothing beyond their output.
public struct SoftwareBackend: CryptoBackend {
    /// Computed, not stored: the value is then one reference, passed in a register; with the kind's string stored
    /// too, every call (the dispatcher's to software among them) copied three words of it onto the stack.
    public var kind: BackendKind { .software }

    @usableFromInline let algorithms = OpenSSLAlgorithms.shared

    public init() {}

    public func supports(_ operation: CryptoOperation) -> Bool {
        switch operation {
        case .cipher(let algorithm, let mode):
            guard CipherSpec(algorithm, mode).isValidCombination else { return false }
            return algorithms.cipher(algorithm, mode) != nil
                || ((mode == .ctr || mode == .cfb8) && algorithms.cipher(algorithm, .ecb) != nil)
        case .digest(let algorithm):
            return algorithm == .md2 || algorithms.digest(algorithm) != nil
        case .hmac(let algorithm):
            return Self.offersHMAC(algorithm)
        }
    }

    /// Whether HMAC over `algorithm` is here: a digest CommonHMAC offers, and OpenSSL's MAC and digest.
    static func offersHMAC(_ algorithm: DigestAlgorithm) -> Bool {
        let algorithms = OpenSSLAlgorithms.shared
        return algorithm.supportsHMAC && algorithms.hmac != nil && algorithms.digest(algorithm) != nil
    }

    // MARK: Ciphers

    public func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        return try validatedOneShotCrypt(direction, spec, key: key, iv: iv, input: input, output: output)
    }

    /// ``crypt(_:_:key:iv:input:output:)``'s body once `spec.validate(keyCount:ivCount:)` has passed, inlined there
    /// and into the dispatcher's software paths (package-wide, not public), as
    /// ``oneShotDigest(_:input:output:succeeding:)``; the dispatcher validates before it routes.
    @inlinable @inline(__always)
    package func validatedOneShotCrypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        let needed = try spec.oneShotOutputLength(direction, inputCount: input.count)
        try CryptoError.checkOutput(output, holds: needed)
        guard let cipher = algorithms.cipher(spec.algorithm, spec.mode) else {
            let stream = try makeCipherStream(direction, spec, key: key, iv: iv)
            return try stream.update(input, into: output)
        }
        var written = 0
        do {
            let context = try keyedCipherContext(cipher, spec, direction, key: key, iv: iv)
            defer { forgetCipherKey(context, spec) }
            written = try EVPCipher.update(context, input, output)
            written += try finishCipher(
                context, spec, direction, UnsafeMutableRawBufferPointer(rebasing: output[written...]))
            return written
        } catch {
            // A failed call leaves no partial plaintext or ciphertext behind.
            secureWipe(UnsafeMutableRawBufferPointer(rebasing: output[..<written]))
            throw error
        }
    }

    public func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?
    ) throws -> any CipherStream {
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        if let cipher = algorithms.cipher(spec.algorithm, spec.mode) {
            return try OpenSSLCipherStream(direction, spec, cipher: cipher, key: key, iv: iv)
        }
        guard spec.mode == .ctr || spec.mode == .cfb8, let ecb = algorithms.cipher(spec.algorithm, .ecb), let iv else {
            throw CryptoError(.unsupported, "the software backend has no \(spec)")
        }
        return try GenericModeCipher(direction, spec, ecbCipher: ecb, key: key, iv: iv)
    }

    // MARK: Digests

    public func digest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
        throws
    {
        try oneShotDigest(algorithm, input: input, output: output) {}
    }

    /// ``digest(_:input:output:)``'s body, inlined there and into the dispatcher's software paths (package-wide, not
    /// public): a routed call reaches OpenSSL from the dispatcher's frame, not through a second one. `succeeding`
    /// runs once the call is sure to succeed: just before the low-level C call, which cannot fail once its output
    /// size is checked, or after the EVP path returned. The dispatcher counts there, so that nothing of its own has to
    /// live across the C call.
    @inlinable @inline(__always)
    package func oneShotDigest(
        _ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer,
        succeeding: () -> Void
    ) throws {
        let hash = algorithm.lowLevelHash
        let size = copenssl_oneshot_size(hash)
        // Decided before the call, so no argument has to live across it: deciding after it, on the C call's status,
        // kept four words and the error register in the frame.
        guard size != 0, output.count >= size else {
            try Self.digestThroughEVP(algorithm, input: input, output: output)
            return succeeding()
        }
        succeeding()
        copenssl_digest_oneshot(hash, input.bindMemory(to: UInt8.self).baseAddress, input.count, output.bindMemory(to: UInt8.self).baseAddress)
    }

    /// What the low-level one-shot cannot take: an output too small (thrown here), else MD2 (ours) and the digests
    /// OpenSSL has no low-level call for (MD4), on the thread's EVP context. Static and out of line: the one-shot
    /// inlined into the dispatcher then passes no backend value and loads none.
    @usableFromInline @inline(never)
    static func digestThroughEVP(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
        throws
    {
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        if algorithm == .md2 {
            var md2 = MD2()
            md2.update(input)
            md2.finish(into: output)
            return
        }
        guard let md = OpenSSLAlgorithms.shared.digest(algorithm) else {
            throw CryptoError(.unsupported, "OpenSSL offers no \(algorithm) here")
        }
        guard let context = ThreadContexts.digest(algorithm) else { throw CryptoError(.outOfMemory, "EVP_MD_CTX_new failed") }
        guard EVP_DigestInit_ex2(context, md, nil) == 1,
            input.count == 0 || EVP_DigestUpdate(context, input.baseAddress, input.count) == 1,
            EVP_DigestFinal_ex(context, output.bindMemory(to: UInt8.self).baseAddress, nil) == 1
        else { throw CryptoError.openSSL("EVP digest \(algorithm)") }
    }

    public func makeDigestStream(_ algorithm: DigestAlgorithm) throws -> any DigestStream {
        if algorithm == .md2 { return MD2Stream() }
        guard let md = algorithms.digest(algorithm) else {
            throw CryptoError(.unsupported, "OpenSSL offers no \(algorithm) here")
        }
        return try OpenSSLDigestStream(algorithm, md: md)
    }

    // MARK: HMAC

    public func hmac(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        try oneShotHMAC(algorithm, key: key, input: input, output: output) {}
    }

    /// ``hmac(_:key:input:output:)``'s body, inlined there and into the dispatcher's software paths, as
    /// ``oneShotDigest(_:input:output:succeeding:)``, `succeeding` too.
    @inlinable @inline(__always)
    package func oneShotHMAC(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer, succeeding: () -> Void
    ) throws {
        let hash = algorithm.lowLevelHash
        let size = copenssl_oneshot_size(hash)
        guard size != 0, output.count >= size else {
            try Self.hmacThroughEVP(algorithm, key: key, input: input, output: output)
            return succeeding()
        }
        succeeding()
        copenssl_hmac_oneshot(
            hash, key.bindMemory(to: UInt8.self).baseAddress, key.count, input.bindMemory(to: UInt8.self).baseAddress,
            input.count, output.bindMemory(to: UInt8.self).baseAddress)
    }

    /// What the low-level one-shot cannot take, as ``digestThroughEVP(_:input:output:)``: an output too small, else HMAC
    /// over a digest OpenSSL has no low-level call for (MD4), on the thread's EVP MAC context.
    @usableFromInline @inline(never)
    static func hmacThroughEVP(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        guard offersHMAC(algorithm) else { throw CryptoError(.unsupported, "no HMAC over \(algorithm)") }
        guard let context = ThreadContexts.hmac(algorithm) else { throw CryptoError(.outOfMemory, "EVP_MAC_CTX_new failed") }
        var length = 0
        // The context is the thread's: its key is replaced by the empty one when the call ends.
        defer { _ = copenssl_hmac_init(context, nil, 0) }
        guard copenssl_hmac_init(context, key.bindMemory(to: UInt8.self).baseAddress, key.count) == 1,
            input.count == 0
                || EVP_MAC_update(context, input.bindMemory(to: UInt8.self).baseAddress, input.count) == 1,
            EVP_MAC_final(context, output.bindMemory(to: UInt8.self).baseAddress, &length, output.count) == 1
        else { throw CryptoError.openSSL("HMAC-\(algorithm)") }
    }

    public func makeHMACKey(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any HMACKey {
        guard supports(.hmac(algorithm)) else { throw CryptoError(.unsupported, "no HMAC over \(algorithm)") }
        let hash = algorithm.lowLevelHash
        if copenssl_oneshot_size(hash) != 0 {
            guard let made = copenssl_hmac_key_new(hash, key.bindMemory(to: UInt8.self).baseAddress, key.count) else {
                throw CryptoError(.outOfMemory, "no memory for an HMAC key")
            }
            return LowLevelHMACKey(algorithm, made)
        }
        return OneShotHMACKey(algorithm, key: key, backend: self)  // MD4: the legacy provider's, no low-level path
    }

    public func makeHMACStream(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any DigestStream {
        guard supports(.hmac(algorithm)), let context = Self.makeHMACContext(algorithm) else {
            throw CryptoError(.unsupported, "no HMAC over \(algorithm)")
        }
        return try OpenSSLHMACStream(algorithm, context: context, key: key)
    }
}

extension SoftwareBackend {
    /// What the calling thread's context for `spec` and `direction` holds as its key schedule between calls: `block`
    /// (whole blocks) run through it as the last one-shot call left it, nil when the thread has none (tests: no
    /// caller's key may be there).
    package static func heldScheduleOutput(_ spec: CipherSpec, _ direction: CipherDirection, block: [UInt8]) -> [UInt8]? {
        guard let cipher = OpenSSLAlgorithms.shared.cipher(spec.algorithm, spec.mode) else { return nil }
        var output = [UInt8](repeating: 0, count: block.count)
        let found = copenssl_keyed_cipher_probe(EVP_CIPHER_get_nid(cipher), direction == .encrypt ? 1 : 0, block, block.count, &output)
        return found == 1 ? output : nil
    }

    /// An HMAC context with its digest chosen, or `nil` if OpenSSL lacks either.
    static func makeHMACContext(_ algorithm: DigestAlgorithm) -> OpaquePointer? {
        guard let mac = OpenSSLAlgorithms.shared.hmac, let name = OpenSSLAlgorithms.openSSLName(algorithm),
            let context = EVP_MAC_CTX_new(mac)
        else { return nil }
        guard copenssl_hmac_set_digest(context, name) == 1 else {
            EVP_MAC_CTX_free(context)
            ERR_clear_error()
            return nil
        }
        return context
    }
}

extension DigestAlgorithm {
    /// The hash's number in `COpenSSLShims` (`copenssl_hash`), whose low-level one-shot runs the same assembly as
    /// EVP's without its dispatch, most of the cost of a short message; MD2 (ours) and MD4 (the legacy provider's)
    /// have none (`copenssl_oneshot_size` is 0). The C numbering follows this enum's cases, so this is each case's own
    /// number: no switch per call.
    @usableFromInline
    var lowLevelHash: Int32 {
        switch self {
        case .md2: Int32(COPENSSL_MD2.rawValue)
        case .md4: Int32(COPENSSL_MD4.rawValue)
        case .md5: Int32(COPENSSL_MD5.rawValue)
        case .sha1: Int32(COPENSSL_SHA1.rawValue)
        case .sha224: Int32(COPENSSL_SHA224.rawValue)
        case .sha256: Int32(COPENSSL_SHA256.rawValue)
        case .sha384: Int32(COPENSSL_SHA384.rawValue)
        case .sha512: Int32(COPENSSL_SHA512.rawValue)
        }
    }
}

/// An HMAC key as its inner and outer states (`copenssl_hmac_key`), made once and only read afterwards: no lock,
/// two compressions plus the message's per MAC. Owns the C object, which wipes itself when freed.
final class LowLevelHMACKey: HMACKey, @unchecked Sendable {
    // @unchecked: the C object is never written after creation; copenssl_hmac_key_run copies its states.
    let algorithm: DigestAlgorithm
    private let key: OpaquePointer

    init(_ algorithm: DigestAlgorithm, _ key: OpaquePointer) {
        self.algorithm = algorithm
        self.key = key
    }

    deinit { copenssl_hmac_key_free(key) }

    func authenticate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws {
        try CryptoError.checkOutput(output, holds: algorithm.outputSize)
        copenssl_hmac_key_run(key, input.bindMemory(to: UInt8.self).baseAddress, input.count, output.bindMemory(to: UInt8.self).baseAddress)
    }
}

/// A context of this thread keyed for the call, handed to ``forgetCipherKey(_:_:)`` when the call ends. Where the
/// cipher's key schedule is fixed once made (every fixed-length-key block cipher: AES, DES, 3DES), it is the thread's
/// context for that cipher and direction (`copenssl_keyed_cipher`), the key expanded in place. Others are keyed afresh.
///
/// A free function, as ``finishCipher(_:_:_:_:)``: as a static method its metatype was a dead argument, so the
/// optimizer made a copy without it for this module and left the original as a forwarding thunk, which is what the
/// dispatcher's inlined one-shot called (one more call, its stack arguments pushed again).
@usableFromInline func keyedCipherContext(
    _ cipher: OpaquePointer, _ spec: CipherSpec, _ direction: CipherDirection, key: UnsafeRawBufferPointer,
    iv: UnsafeRawBufferPointer?
) throws -> OpaquePointer {
    guard spec.algorithm.hasFixedKeyLength, spec.mode != .stream else {
        guard let context = ThreadContexts.cipher() else { throw CryptoError(.outOfMemory, "EVP_CIPHER_CTX_new failed") }
        try EVPCipher.initialise(context, cipher, spec, direction, key: key, iv: iv)
        return context
    }
    let ivBytes = spec.ivSize > 0 ? iv?.bindMemory(to: UInt8.self).baseAddress : nil
    guard
        let context = copenssl_keyed_cipher(
            cipher, direction == .encrypt ? 1 : 0, key.bindMemory(to: UInt8.self).baseAddress, key.count, ivBytes,
            spec.effectivePadding == .pkcs7 ? 1 : 0)
    else { throw CryptoError.openSSL("EVP_CipherInit_ex2(\(spec))") }
    return context
}

/// Overwrites the key schedule ``keyedCipherContext(_:_:_:key:iv:)`` made: a one-shot caller's key does not outlive
/// its call (a caller of `CCCrypt` wipes its key and expects the library to hold none).
@usableFromInline func forgetCipherKey(_ context: OpaquePointer, _ spec: CipherSpec) {
    if spec.algorithm.hasFixedKeyLength, spec.mode != .stream {
        copenssl_keyed_cipher_forget(context)
    } else {
        ThreadContexts.discardCipher()  // freed, which cleanses it; the thread's next call makes another
    }
}
