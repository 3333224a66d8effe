public import SecurityBase
// The array forms of the backend and stream calls: for tests, tools and callers where a copy costs nothing. Each
// takes its key as an array or as SecretBytes (what the Swift API and the services use, so no array copy of a key
// is made); both overloads share one body over `KeyBytes`.

/// Bytes a key is read from in place: an array or ``SecretBytes``.
public protocol KeyBytes {
    var count: Int { get }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: KeyBytes where Element == UInt8 {}
extension SecretBytes: KeyBytes {}

extension CryptoBackend {
    /// Encrypts or decrypts `input` in one call.
    public func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: [UInt8], iv: [UInt8]? = nil, _ input: [UInt8]
    ) throws -> [UInt8] {
        try crypt(direction, spec, keyBytes: key, iv: iv, input)
    }

    public func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: SecretBytes, iv: [UInt8]? = nil, _ input: [UInt8]
    ) throws -> [UInt8] {
        try crypt(direction, spec, keyBytes: key, iv: iv, input)
    }

    public func digest(_ algorithm: DigestAlgorithm, _ input: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        try input.withUnsafeBytes { input in
            try output.withUnsafeMutableBytes { try digest(algorithm, input: input, output: $0) }
        }
        return output
    }

    public func hmac(_ algorithm: DigestAlgorithm, key: [UInt8], _ input: [UInt8]) throws -> [UInt8] {
        try hmac(algorithm, keyBytes: key, input)
    }

    public func hmac(_ algorithm: DigestAlgorithm, key: SecretBytes, _ input: [UInt8]) throws -> [UInt8] {
        try hmac(algorithm, keyBytes: key, input)
    }

    public func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: [UInt8], iv: [UInt8]? = nil
    ) throws -> any CipherStream {
        try makeCipherStream(direction, spec, keyBytes: key, iv: iv)
    }

    public func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: SecretBytes, iv: [UInt8]? = nil
    ) throws -> any CipherStream {
        try makeCipherStream(direction, spec, keyBytes: key, iv: iv)
    }

    public func makeHMACStream(_ algorithm: DigestAlgorithm, key: [UInt8]) throws -> any DigestStream {
        try key.withUnsafeBytes { try makeHMACStream(algorithm, key: $0) }
    }

    public func makeHMACStream(_ algorithm: DigestAlgorithm, key: SecretBytes) throws -> any DigestStream {
        try key.withUnsafeBytes { try makeHMACStream(algorithm, key: $0) }
    }

    private func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, keyBytes key: some KeyBytes, iv: [UInt8]?, _ input: [UInt8]
    ) throws -> [UInt8] {
        // Key and IV errors come before length errors, as in the raw call.
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        let capacity = try spec.oneShotOutputLength(direction, inputCount: input.count)
        var output = [UInt8](repeating: 0, count: capacity)
        let written = try key.withUnsafeBytes { key in
            try input.withUnsafeBytes { input in
                try output.withUnsafeMutableBytes { output in
                    try iv.withUnsafeBufferOrNil { iv in
                        try crypt(direction, spec, key: key, iv: iv, input: input, output: output)
                    }
                }
            }
        }
        output.removeLast(capacity - written)
        return output
    }

    private func hmac(_ algorithm: DigestAlgorithm, keyBytes key: some KeyBytes, _ input: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        try key.withUnsafeBytes { key in
            try input.withUnsafeBytes { input in
                try output.withUnsafeMutableBytes { try hmac(algorithm, key: key, input: input, output: $0) }
            }
        }
        return output
    }

    private func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, keyBytes key: some KeyBytes, iv: [UInt8]?
    ) throws -> any CipherStream {
        try key.withUnsafeBytes { key in
            try iv.withUnsafeBufferOrNil { try makeCipherStream(direction, spec, key: key, iv: $0) }
        }
    }
}

extension CryptoBackend {
    /// `(ciphertext, tag)` of `plaintext`, with a tag of `tagLength` bytes.
    public func seal(
        _ algorithm: AEADAlgorithm, key: [UInt8], nonce: [UInt8], aad: [UInt8] = [], _ plaintext: [UInt8], tagLength: Int = 16
    ) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        try key.withUnsafeBytes { try seal(algorithm, key: $0, nonce: nonce, aad: aad, plaintext, tagLength: tagLength) }
    }

    /// As above, with a key the caller holds in place (a master key that must not be copied).
    public func seal(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: [UInt8], aad: [UInt8] = [], _ plaintext: [UInt8],
        tagLength: Int = 16
    ) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagLength)
        try nonce.withUnsafeBytes { nonce in
            try aad.withUnsafeBytes { aad in
                try plaintext.withUnsafeBytes { input in
                    try ciphertext.withUnsafeMutableBytes { output in
                        try tag.withUnsafeMutableBytes {
                            try seal(algorithm, key: key, nonce: nonce, aad: aad, input: input, output: output, tag: $0)
                        }
                    }
                }
            }
        }
        return (ciphertext, tag)
    }

    /// The plaintext of `ciphertext`, or ``CryptoError/Code/integrity`` when the tag does not verify.
    public func open(
        _ algorithm: AEADAlgorithm, key: [UInt8], nonce: [UInt8], aad: [UInt8] = [], _ ciphertext: [UInt8], tag: [UInt8]
    ) throws -> [UInt8] {
        try key.withUnsafeBytes { try open(algorithm, key: $0, nonce: nonce, aad: aad, ciphertext, tag: tag) }
    }

    /// As above, with a key the caller holds in place.
    public func open(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: [UInt8], aad: [UInt8] = [], _ ciphertext: [UInt8],
        tag: [UInt8]
    ) throws -> [UInt8] {
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        try nonce.withUnsafeBytes { nonce in
            try aad.withUnsafeBytes { aad in
                try ciphertext.withUnsafeBytes { input in
                    try tag.withUnsafeBytes { tag in
                        try plaintext.withUnsafeMutableBytes {
                            try open(algorithm, key: key, nonce: nonce, aad: aad, input: input, tag: tag, output: $0)
                        }
                    }
                }
            }
        }
        return plaintext
    }
}

extension Optional where Wrapped == [UInt8] {
    /// Calls `body` with the bytes, or with `nil` when there are none (an optional IV, say).
    public func withUnsafeBufferOrNil<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        switch self {
        case .some(let bytes): try bytes.withUnsafeBytes { try body($0) }
        case .none: try body(nil)
        }
    }
}
