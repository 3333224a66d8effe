import CryptoContract
import Foundation
import SoftwareBackend
import Testing

/// The one-shot fast paths: a thread's cache of keyed cipher contexts, and digests and HMACs on the
/// low-level hash calls. Each answer is checked against a stream of the same backend, which keys a fresh EVP
/// context of its own (no cache, no low-level path): the orders of calls that could confuse a cache — a key
/// again after others evicted it, the same key in the other direction, padding switched on one key, a failed
/// call, other threads — must give the stream's bytes.
@Suite("Software backend: one-shot caches and low-level paths")
struct OneShotCacheTests {
    let backend = SoftwareBackend()

    /// Deterministic bytes, different per seed.
    static func bytes(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ 1) &* 151 &+ seed &* 31 &+ ($0 >> 3)) }
    }

    /// The stream's answer: a context keyed for this call alone.
    func streamed(_ direction: CipherDirection, _ spec: CipherSpec, key: [UInt8], iv: [UInt8]?, _ input: [UInt8]) throws
        -> [UInt8]
    {
        let stream = try backend.makeCipherStream(direction, spec, key: key, iv: iv)
        return try stream.update(input) + stream.finish()
    }

    static let cachedSpecs: [CipherSpec] = [
        CipherSpec(.aes128, .cbc), CipherSpec(.aes128, .cbc, padding: .pkcs7), CipherSpec(.aes192, .ecb),
        CipherSpec(.aes256, .cbc), CipherSpec(.aes256, .ctr), CipherSpec(.aes128, .cfb), CipherSpec(.aes128, .ofb),
        CipherSpec(.aes256, .cfb8), CipherSpec(.des, .cbc), CipherSpec(.tripleDES, .cbc, padding: .pkcs7),
        CipherSpec(.tripleDES, .ecb),
    ]

    @Test("a pattern of keys, IVs, directions and paddings that revisits, evicts and re-keys gives the stream's bytes")
    func keyPatterns() throws {
        // Six keys per spec (more than the cache holds), visited in an order that hits, misses, evicts and comes
        // back; each call's IV and message differ.
        let order = [0, 0, 1, 0, 2, 3, 4, 5, 0, 1, 5, 5, 2, 0, 3, 1, 4, 4, 0]
        var call = 0
        for spec in Self.cachedSpecs {
            let keySize = spec.algorithm.keySizes.lowerBound
            let keys = (0..<6).map { Self.bytes(keySize, seed: $0 &* 7 &+ 3) }
            for index in order {
                call += 1
                let iv = spec.ivSize > 0 ? Self.bytes(spec.ivSize, seed: call) : nil
                let block = spec.algorithm.blockSize
                let length = spec.effectivePadding == .pkcs7 || !spec.mode.isBlockMode ? call % 70 : block * (1 + call % 5)
                let plaintext = Self.bytes(length, seed: call &* 3)
                let ciphertext = try backend.crypt(.encrypt, spec, key: keys[index], iv: iv, plaintext)
                #expect(ciphertext == (try streamed(.encrypt, spec, key: keys[index], iv: iv, plaintext)), "\(spec) key \(index) call \(call)")
                // The same key the other way at once: a decryption schedule of its own.
                #expect(try backend.crypt(.decrypt, spec, key: keys[index], iv: iv, ciphertext) == plaintext, "\(spec) key \(index) call \(call)")
            }
        }
    }

    @Test("padding switched on and off with one key follows each call's spec")
    func paddingSwitch() throws {
        let key = Self.bytes(16, seed: 1)
        let iv = Self.bytes(16, seed: 2)
        let plaintext = Self.bytes(32, seed: 3)
        let padded = CipherSpec(.aes128, .cbc, padding: .pkcs7)
        let plain = CipherSpec(.aes128, .cbc)
        for spec in [padded, plain, plain, padded, padded, plain] {
            let ciphertext = try backend.crypt(.encrypt, spec, key: key, iv: iv, plaintext)
            #expect(ciphertext.count == (spec == padded ? 48 : 32))
            #expect(ciphertext == (try streamed(.encrypt, spec, key: key, iv: iv, plaintext)))
            #expect(try backend.crypt(.decrypt, spec, key: key, iv: iv, ciphertext) == plaintext)
        }
        // A padded ciphertext decrypted without padding keeps the padding block, as the stream does.
        let ciphertext = try backend.crypt(.encrypt, padded, key: key, iv: iv, plaintext)
        #expect(try backend.crypt(.decrypt, plain, key: key, iv: iv, ciphertext) == (try streamed(.decrypt, plain, key: key, iv: iv, ciphertext)))
    }

    @Test("a failed call leaves the cached key usable and the next answer right")
    func afterFailure() throws {
        let spec = CipherSpec(.aes256, .cbc, padding: .pkcs7)
        let key = Self.bytes(32, seed: 9)
        let iv = Self.bytes(16, seed: 10)
        let plaintext = Self.bytes(40, seed: 11)
        let ciphertext = try backend.crypt(.encrypt, spec, key: key, iv: iv, plaintext)
        var corrupt = ciphertext
        corrupt[corrupt.count - 1] ^= 0x55
        #expect(throws: CryptoError(.decode, "")) { try backend.crypt(.decrypt, spec, key: key, iv: iv, corrupt) }
        #expect(throws: CryptoError(.alignment, "")) { try backend.crypt(.decrypt, spec, key: key, iv: iv, Array(ciphertext.prefix(20))) }
        #expect(try backend.crypt(.decrypt, spec, key: key, iv: iv, ciphertext) == plaintext)
        #expect(try backend.crypt(.encrypt, spec, key: key, iv: iv, plaintext) == ciphertext)
    }

    /// A caller of CCCrypt or CCHmac wipes its key and expects the library to hold none: the thread's context must not
    /// keep a key schedule past the call.
    @Test("no key outlives its call: the thread's context then encrypts as the all-zero key does, not as the caller's", arguments: [
        CipherSpec(.aes128, .ecb), CipherSpec(.aes256, .ecb), CipherSpec(.aes192, .ecb),
    ])
    func noKeyOutlivesTheCall(_ spec: CipherSpec) throws {
        let key = Self.bytes(spec.algorithm.keySizes.lowerBound, seed: 41)
        let zero = [UInt8](repeating: 0, count: key.count)
        let block = Self.bytes(16, seed: 42)
        let underKey = try backend.crypt(.encrypt, spec, key: key, iv: nil, block)
        #expect(underKey == (try streamed(.encrypt, spec, key: key, iv: nil, block)))
        // What the thread's context holds now: the call's key would give `underKey` (the check can fail).
        let held = try #require(SoftwareBackend.heldScheduleOutput(spec, .encrypt, block: block), "the thread keeps a context")
        #expect(held != underKey, "the caller's key schedule is still held")
        #expect(held == (try streamed(.encrypt, spec, key: zero, iv: nil, block)), "the all-zero key's schedule is held")
        // A failed call forgets its key too.
        #expect(throws: CryptoError.self) { try backend.crypt(.encrypt, spec, key: key, iv: nil, Array(block.prefix(5))) }
        #expect(SoftwareBackend.heldScheduleOutput(spec, .encrypt, block: block) != underKey)
        // And the next call with the same key gives the same answer.
        #expect(try backend.crypt(.encrypt, spec, key: key, iv: nil, block) == underKey)
    }

    @Test("threads keep caches of their own: the same keys on eight threads give the stream's bytes")
    func threads() async throws {
        let spec = CipherSpec(.aes128, .cbc)
        let keys = (0..<6).map { Self.bytes(16, seed: $0) }
        let iv = Self.bytes(16, seed: 99)
        let plaintext = Self.bytes(64, seed: 98)
        let expected = try keys.map { try streamed(.encrypt, spec, key: $0, iv: iv, plaintext) }
        let backend = self.backend
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    // A thread of its own (the cooperative pool would share threads between tasks).
                    await withCheckedContinuation { continuation in
                        Thread.detachNewThread {
                            var wrong = 0
                            for round in 0..<400 {
                                let index = (round &* (worker + 1)) % keys.count
                                let answer = try? backend.crypt(.encrypt, spec, key: keys[index], iv: iv, plaintext)
                                if answer != expected[index] { wrong += 1 }
                            }
                            continuation.resume(returning: wrong)
                        }
                    }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test("digests on the low-level calls equal EVP's streams at every length around the block sizes", arguments: DigestAlgorithm.allCases)
    func digests(algorithm: DigestAlgorithm) throws {
        for length in [0, 1, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129, 1000] {
            let message = Self.bytes(length, seed: length)
            let stream = try backend.makeDigestStream(algorithm)
            try stream.update(message)
            #expect(try backend.digest(algorithm, message) == (try stream.finish()), "\(algorithm) \(length)")
        }
    }

    @Test("the one-shot's own padding reads no byte past the message: every length to 200, ending where memory ends, equals EVP's stream", arguments: DigestAlgorithm.allCases)
    func digestsAtTheEdgeOfMemory(algorithm: DigestAlgorithm) throws {
        // Two pages, the second inaccessible: a read past the message's last byte faults.
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard let pages = mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), pages != MAP_FAILED else {
            Issue.record("mmap failed")
            return
        }
        defer { munmap(pages, 2 * page) }
        #expect(mprotect(pages + page, page, PROT_NONE) == 0)
        for length in 0...200 {
            let message = Self.bytes(length, seed: length &* 7)
            let start = pages + page - length
            message.withUnsafeBytes { UnsafeMutableRawBufferPointer(start: start, count: length).copyMemory(from: $0) }
            let stream = try backend.makeDigestStream(algorithm)
            try stream.update(message)
            var digest = [UInt8](repeating: 0, count: algorithm.outputSize)
            try digest.withUnsafeMutableBytes {
                try backend.digest(algorithm, input: UnsafeRawBufferPointer(start: start, count: length), output: $0)
            }
            #expect(digest == (try stream.finish()), "\(algorithm) \(length)")
        }
    }

    @Test("every digest and HMAC checks its output's size: a byte short is refused untouched, an exact or larger one gets the digest and no more", arguments: DigestAlgorithm.allCases)
    func outputSizes(algorithm: DigestAlgorithm) throws {
        // The low-level one-shots check the size against copenssl_oneshot_size's table (0 for MD2 and MD4, which
        // take the EVP path and check there): a wrong entry would refuse a right buffer or write past a short one.
        let message = Self.bytes(77, seed: 9)
        let key = Self.bytes(20, seed: 4)
        let digestStream = try backend.makeDigestStream(algorithm)
        try digestStream.update(message)
        // Each one-shot with the stream's answer, run into a buffer of the size under test.
        typealias OneShot = (name: String, bytes: [UInt8], run: (UnsafeMutableRawBufferPointer) throws -> Void)
        var oneShots: [OneShot] = [
            ("digest", try digestStream.finish(), { output in
                try message.withUnsafeBytes { try backend.digest(algorithm, input: $0, output: output) }
            })
        ]
        if algorithm.supportsHMAC {
            let hmacStream = try backend.makeHMACStream(algorithm, key: key)
            try hmacStream.update(message)
            oneShots.append(("hmac", try hmacStream.finish(), { output in
                try message.withUnsafeBytes { input in
                    try key.withUnsafeBytes { try backend.hmac(algorithm, key: $0, input: input, output: output) }
                }
            }))
        }
        for (name, bytes, oneShot) in oneShots {
            func run(into output: inout [UInt8]) throws { try output.withUnsafeMutableBytes { try oneShot($0) } }
            var short = [UInt8](repeating: 0xee, count: algorithm.outputSize - 1)
            do {
                try run(into: &short)
                Issue.record("\(name) \(algorithm): a short buffer was taken")
            } catch let error as CryptoError {
                #expect(error.code == .bufferTooSmall && error.requiredSize == algorithm.outputSize, "\(name) \(algorithm)")
            }
            #expect(short.allSatisfy { $0 == 0xee }, "\(name) \(algorithm)")
            var exact = [UInt8](repeating: 0, count: algorithm.outputSize)
            try run(into: &exact)
            #expect(exact == bytes, "\(name) \(algorithm)")
            var larger = [UInt8](repeating: 0xee, count: algorithm.outputSize + 9)
            try run(into: &larger)
            #expect(Array(larger.prefix(algorithm.outputSize)) == bytes, "\(name) \(algorithm)")
            #expect(larger.suffix(9).allSatisfy { $0 == 0xee }, "\(name) \(algorithm)")
        }
    }

    @Test("HMAC on the low-level calls equals EVP's HMAC for keys empty, short, of a block, longer, and evicted", arguments: DigestAlgorithm.allCases.filter(\.supportsHMAC))
    func hmacs(algorithm: DigestAlgorithm) throws {
        let block = algorithm == .sha384 || algorithm == .sha512 ? 128 : 64
        let keyLengths = [0, 1, 16, 20, block - 1, block, block + 1, 200]
        // Every key twice, the second pass after the others evicted it (more keys than the cache holds).
        for pass in 0..<2 {
            for keyLength in keyLengths {
                let key = Self.bytes(keyLength, seed: keyLength &+ 5)
                let message = Self.bytes(pass == 0 ? 13 : 300, seed: keyLength)
                let stream = try backend.makeHMACStream(algorithm, key: key)
                try stream.update(message)
                #expect(try backend.hmac(algorithm, key: key, message) == (try stream.finish()), "\(algorithm) key \(keyLength)")
            }
        }
    }

    @Test("a keyed HMAC (makeHMACKey) equals EVP's HMAC for every hash and key length, also from eight threads at once", arguments: DigestAlgorithm.allCases.filter(\.supportsHMAC))
    func hmacKeys(algorithm: DigestAlgorithm) async throws {
        for keyLength in [0, 1, 20, 64, 65, 128, 129, 300] {
            let keyBytes = Self.bytes(keyLength, seed: keyLength &+ 11)
            let key = try keyBytes.withUnsafeBytes { try backend.makeHMACKey(algorithm, key: $0) }
            #expect(key.algorithm == algorithm)
            for length in [0, 1, 63, 64, 200] {
                let message = Self.bytes(length, seed: length)
                let stream = try backend.makeHMACStream(algorithm, key: keyBytes)
                try stream.update(message)
                #expect(try key.authenticate(message) == (try stream.finish()), "\(algorithm) key \(keyLength) message \(length)")
            }
        }
        // One key, many threads: the states are only read.
        let keyBytes = Self.bytes(32, seed: 77)
        let key = try keyBytes.withUnsafeBytes { try backend.makeHMACKey(algorithm, key: $0) }
        let messages = (0..<16).map { Self.bytes(40 + $0, seed: $0) }
        let expected = try messages.map { try backend.hmac(algorithm, key: keyBytes, $0) }
        let wrong = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<200 {
                        let index = (round &+ worker) % messages.count
                        if (try? key.authenticate(messages[index])) != expected[index] { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
        #expect(throws: CryptoError(.bufferTooSmall, "")) {
            var short = [UInt8](repeating: 0, count: algorithm.outputSize - 1)
            try messages[0].withUnsafeBytes { input in try short.withUnsafeMutableBytes { try key.authenticate(input, into: $0) } }
        }
    }

    @Test("AES-GCM one-shots with 12-byte and other nonces in turn on one thread give the answers each gives alone")
    func gcmNonceLengths() throws {
        let key = Self.bytes(32, seed: 1)
        let plaintext = Self.bytes(45, seed: 2)
        let aad = Self.bytes(20, seed: 3)
        let lengths = [12, 16, 12, 60, 1, 12, 12, 8, 12]
        // Alone: each on a thread of its own, so no earlier call's state is there.
        let alone = lengths.map { length in
            let nonce = Self.bytes(length, seed: length)
            let box = ResultBox()
            let thread = Thread {
                box.value = try? SoftwareBackend().seal(.aesGCM, key: key, nonce: nonce, aad: aad, plaintext)
                box.done.signal()
            }
            thread.start()
            box.done.wait()
            return box.value
        }
        for (index, length) in lengths.enumerated() {
            let nonce = Self.bytes(length, seed: length)
            let sealed = try backend.seal(.aesGCM, key: key, nonce: nonce, aad: aad, plaintext)
            #expect(sealed.ciphertext == alone[index]?.ciphertext && sealed.tag == alone[index]?.tag, "nonce of \(length) bytes, call \(index)")
            #expect(try backend.open(.aesGCM, key: key, nonce: nonce, aad: aad, sealed.ciphertext, tag: sealed.tag) == plaintext)
        }
    }

    @Test("RFC 4231 test case 6 (a key longer than the block) and RFC 2202's HMAC-SHA1 case 1 through the one-shot")
    func rfcSpotChecks() throws {
        let key6 = [UInt8](repeating: 0xaa, count: 131)
        let message6 = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        #expect(
            try backend.hmac(.sha256, key: key6, message6)
                == hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"))
        #expect(
            try backend.hmac(.sha1, key: [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8))
                == hex("b617318655057264e28bc0b6fb378c8ef146be00"))
    }

    private func hex(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = string.startIndex
        while index < string.endIndex {
            let next = string.index(index, offsetBy: 2)
            bytes.append(UInt8(string[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}

/// A result handed back from a thread of its own.
private final class ResultBox: @unchecked Sendable {
    // @unchecked: written by the thread before `done` is signalled, read after waiting for it.
    var value: (ciphertext: [UInt8], tag: [UInt8])?
    let done = DispatchSemaphore(value: 0)
}
