import CryptoContract
import Foundation
@testable import KernelBackend
import SoftwareBackend
import Testing
import TestVectors

/// The kernel backend on a machine with AF_ALG: published vectors, libkcapi's known traps, and a cross-check
/// against libkcapi's own command-line tools.
@Suite("Kernel backend (AF_ALG)", .enabled(if: AFALGGate.shouldRun, Comment(rawValue: AFALGGate.skipReason)))
struct KernelAFALGTests {
    let kernel = KernelBackend()
    let software = SoftwareBackend()

    @Test("AF_ALG is there and the engine algorithms bind")
    func probe() {
        #expect(KernelBackend.isAvailable, "\(KernelBackend.unavailableReason ?? "")")
        for operation in [CryptoOperation.cipher(.aes128, .ecb), .cipher(.aes256, .cbc), .digest(.sha1), .hmac(.sha1)] {
            #expect(kernel.supports(operation), "\(operation)")
        }
    }

    @Test("AES (NIST CAVP AESVS, RFC 3686)", arguments: [CipherMode.ecb, .cbc, .ctr])
    func aes(mode: CipherMode) throws {
        let cases = try CipherVectors.aes(mode)
        #expect(cases.count >= 9)
        #expect(VectorRunner.run(cases, on: kernel) == [])
    }

    @Test("SHA-1 and SHA-2 (NIST CAVP SHAVS)", arguments: [DigestAlgorithm.sha1, .sha224, .sha256, .sha384, .sha512])
    func digests(algorithm: DigestAlgorithm) throws {
        let cases = try DigestVectors.cases(algorithm)
        #expect(cases.count > 60)
        #expect(VectorRunner.run(cases, on: kernel) == [])
    }

    @Test("HMAC (RFC 2202, RFC 4231)", arguments: [DigestAlgorithm.sha1, .sha224, .sha256, .sha384, .sha512])
    func hmac(algorithm: DigestAlgorithm) throws {
        let cases = try HMACVectors.cases(algorithm)
        #expect(cases.count >= 6)
        #expect(VectorRunner.run(cases, on: kernel) == [])
    }

    /// libkcapi 1.4.0 reuses the IV per 64 KiB of a one-shot CBC call: the backend must chunk and carry.
    @Test("CBC and CTR across 64 KiB boundaries equal software", arguments: [65536 + 16, 3 * 65536, 1 << 20])
    func largeInputs(size: Int) throws {
        let key = Array(UInt8(0)..<32)
        let iv = [UInt8](repeating: 0xa5, count: 16)
        let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        for spec in [CipherSpec(.aes256, .cbc), CipherSpec(.aes128, .cbc, padding: .pkcs7), CipherSpec(.aes256, .ctr)] {
            let fromKernel = try kernel.crypt(.encrypt, spec, key: Array(key.prefix(spec.algorithm.keySizes.lowerBound)), iv: iv, data)
            let fromSoftware = try software.crypt(.encrypt, spec, key: Array(key.prefix(spec.algorithm.keySizes.lowerBound)), iv: iv, data)
            #expect(fromKernel == fromSoftware, "\(spec) at \(size) bytes")
            let back = try kernel.crypt(.decrypt, spec, key: Array(key.prefix(spec.algorithm.keySizes.lowerBound)), iv: iv, fromKernel)
            #expect(back == data, "\(spec) decrypt at \(size) bytes")
        }
        // Streaming over the same boundaries, in pieces that straddle them.
        let spec = CipherSpec(.aes128, .cbc)
        let stream = try kernel.makeCipherStream(.encrypt, spec, key: Array(key.prefix(16)), iv: iv)
        var streamed: [UInt8] = []
        for piece in data.chunked(40_000) { streamed += try stream.update(piece) }
        streamed += try stream.finish()
        #expect(streamed == (try software.crypt(.encrypt, spec, key: Array(key.prefix(16)), iv: iv, data)))
        #expect(try kernel.digest(.sha1, data) == software.digest(.sha1, data))
    }

    /// An engine works on several requests at once, so the backend cuts ECB, CTR and CBC decryption (whose pieces
    /// depend on the input alone) into pieces run at once on their own handles. Whatever the driver, the bytes
    /// must be software's and the chaining value the one a sequential run leaves, in place or not.
    @Test("pieces run at once (ECB, CTR, CBC decryption) equal software and leave the sequential chain", arguments: [2, 3])
    func concurrentPieces(pieces: Int) throws {
        let pool = KernelRuntime.shared.pool
        let cases: [(CipherSpec, CipherDirection, Int)] = [
            (CipherSpec(.aes128, .ecb), .encrypt, 3 * 65536 + 48), (CipherSpec(.aes256, .ctr), .encrypt, 200_003),
            (CipherSpec(.aes128, .cbc), .decrypt, 2 * 65536 + 32), (CipherSpec(.aes192, .cbc), .decrypt, 48),
            (CipherSpec(.aes128, .ctr), .decrypt, 37),
        ]
        for (spec, direction, size) in cases {
            let key = (0..<spec.algorithm.keySizes.lowerBound).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
            // A CTR counter that carries across bytes as it advances.
            let iv = spec.mode == .ecb ? [] : [UInt8](repeating: 0xff, count: 15) + [0xf0]
            let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            let expected = try software.crypt(direction, spec, key: key, iv: spec.mode == .ecb ? nil : iv, data)
            let name = try #require(KernelAlgorithmNames.cipher(spec.algorithm, spec.mode))
            for inPlace in [false, true] {
                var buffer = inPlace ? data : [UInt8](repeating: 0, count: size)
                var source = data
                var chain = spec.mode == .ecb ? [UInt8](repeating: 0, count: 16) : iv
                var sequentialChain = chain
                var sequential = [UInt8](repeating: 0, count: size)
                try key.withUnsafeBytes { key in
                    try pool.with(.cipher, name, key: key) { handle in
                        try buffer.withUnsafeMutableBytes { output in
                            try source.withUnsafeMutableBytes { source in
                                try chain.withUnsafeMutableBytes { chain in
                                    try ChunkedCipher.runConcurrently(
                                        pieces: pieces, spec, direction,
                                        handles: { body in try pool.with(.cipher, name, key: key, body) },
                                        input: UnsafeRawBufferPointer(inPlace ? output : source), output: output, chain: chain)
                                }
                            }
                        }
                        try sequential.withUnsafeMutableBytes { output in
                            try data.withUnsafeBytes { input in
                                try sequentialChain.withUnsafeMutableBytes { chain in
                                    try ChunkedCipher.run(handle, spec, direction, input: input, output: output, chain: chain)
                                }
                            }
                        }
                    }
                }
                #expect(buffer == expected, "\(spec) \(direction) \(size) bytes in \(pieces) pieces, in place: \(inPlace)")
                #expect(sequential == expected)
                #expect(chain == sequentialChain, "\(spec) \(direction): the chaining value left for what follows")
            }
        }
    }

    /// libkcapi handles are not thread-safe: the backend must never let two threads share one.
    @Test("many threads at once give correct results")
    func concurrency() async throws {
        let software = self.software
        let kernel = self.kernel
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for round in 0..<50 {
                        let key = [UInt8](repeating: UInt8(worker), count: 16)
                        let data = [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 64 + 16 * worker)
                        let iv = [UInt8](repeating: UInt8(round & 0xff), count: 16)
                        let spec = CipherSpec(.aes128, .cbc)
                        let k = try kernel.crypt(.encrypt, spec, key: key, iv: iv, data)
                        let s = try software.crypt(.encrypt, spec, key: key, iv: iv, data)
                        guard k == s else { throw CryptoError(.backendFailure, "worker \(worker) round \(round) differs") }
                        guard try kernel.hmac(.sha1, key: key, data) == software.hmac(.sha1, key: key, data) else {
                            throw CryptoError(.backendFailure, "HMAC worker \(worker) round \(round) differs")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A kcapi handle cannot change key after its first use; a new key must get its own handle.
    @Test("a new key on a reused algorithm works")
    func newKeys() throws {
        let data = [UInt8](repeating: 0x42, count: 4096)
        let iv = [UInt8](repeating: 0, count: 16)
        for key in [[UInt8](repeating: 1, count: 16), [UInt8](repeating: 2, count: 16), [UInt8](repeating: 1, count: 16)] {
            #expect(
                try kernel.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key, iv: iv, data)
                    == software.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key, iv: iv, data))
            #expect(try kernel.hmac(.sha256, key: key, data) == software.hmac(.sha256, key: key, data))
        }
    }

    @Test("bad padding on decrypt is a decode error and leaves no plaintext")
    func badPadding() throws {
        let key = [UInt8](repeating: 9, count: 16)
        let iv = [UInt8](repeating: 0, count: 16)
        let spec = CipherSpec(.aes128, .cbc, padding: .pkcs7)
        var ciphertext = try kernel.crypt(.encrypt, spec, key: key, iv: iv, Array("attack at dawn".utf8))
        ciphertext[ciphertext.count - 1] ^= 0x01
        #expect(throws: CryptoError(.decode, "")) { try kernel.crypt(.decrypt, spec, key: key, iv: iv, ciphertext) }
        // Empty input with padding encrypts to one block of padding, like software.
        #expect(try kernel.crypt(.encrypt, spec, key: key, iv: iv, []) == software.crypt(.encrypt, spec, key: key, iv: iv, []))
    }

    @Test("cross-check with libkcapi's own tools (kcapi-dgst, kcapi-enc)")
    func crossCheckWithTools() throws {
        let data = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let dgst = try runTool("kcapi-dgst", ["-c", "sha1", "--hex"], input: data)
        #expect(String(decoding: dgst, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == (try kernel.digest(.sha1, data)).hex)
        let key = (0..<16).map { UInt8($0) }
        let iv = [UInt8](repeating: 0x33, count: 16)
        let block = Array(data.prefix(4096))
        let encrypted = try runTool(
            "kcapi-enc", ["-e", "-c", "cbc(aes)", "--keyfd", "3", "--iv", iv.hex], input: block, keyOnFD3: key)
        // kcapi-enc may append a padding block of its own; the first 4096 bytes are the CBC ciphertext.
        #expect(encrypted.count >= block.count)
        #expect(Array(encrypted.prefix(block.count)) == (try kernel.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key, iv: iv, block)))
    }

    private func runTool(_ name: String, _ arguments: [String], input: [UInt8], keyOnFD3 key: [UInt8]? = nil) throws -> [UInt8] {
        guard let path = ["/usr/bin/\(name)", "/bin/\(name)"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            Issue.record("\(name) (Debian kcapi-tools) is not installed")
            return []
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kcapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let dataFile = directory.appendingPathComponent("in")
        try Data(input).write(to: dataFile)
        let outFile = directory.appendingPathComponent("out")
        // kcapi-enc wants files (-i/-o) and the key on a descriptor; kcapi-dgst reads stdin and prints.
        // Quoted: `cbc(aes)` is a syntax error to the shell otherwise.
        var command = "\(path) " + arguments.map { "'\($0)'" }.joined(separator: " ")
        if let key {
            let keyFile = directory.appendingPathComponent("key")
            try Data(key).write(to: keyFile)
            command += " -i \(dataFile.path) -o \(outFile.path) 3< \(keyFile.path) && cat \(outFile.path)"
        } else {
            command += " < \(dataFile.path)"
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let pipe = Pipe()
        let errors = Pipe()
        process.standardOutput = pipe
        process.standardError = errors
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(name) failed: \(message)")
        return Array(output)
    }

    /// Idle handles must not hold their key copies (ours and the kernel's) for the life of the thread.
    @Test("an idle handle is closed after the pool's idle lifetime, its key with it; a fresh one is opened instead")
    func idleLifetime() throws {
        // Two seconds, not a few milliseconds: the steps "within the lifetime" run in an emulated VM beside the other
        // suites, where 50 ms between a give-back and the next check-out once passed (the handle was closed early).
        let pool = HandlePool(idleLifetime: .seconds(2))
        let key = [UInt8](repeating: 7, count: 16)
        try key.withUnsafeBytes { key in
            let first = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            pool.giveBack(first)
            #expect(pool.idleCount == 1)
            let again = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            #expect(again === first, "within the lifetime the handle is reused")
            pool.giveBack(again)
            usleep(2_500_000)
            let later = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            #expect(later !== first, "past the lifetime the idle handle was closed")
            #expect(pool.idleCount == 0)
            pool.giveBack(later)
        }
    }

    /// A thread that makes no more calls cannot close its own idle handles: the lifetime must hold without it, or they
    /// and their keys stay for as long as the thread lives.
    @Test("an idle handle of a thread that makes no more calls is closed by the pool's timer, its key with it")
    func idleSweep() throws {
        let pool = HandlePool(idleLifetime: .seconds(1))
        let key = [UInt8](repeating: 5, count: 16)
        weak var idle: KcapiHandle?
        try key.withUnsafeBytes { key in
            let handle = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            idle = handle
            pool.giveBack(handle)
        }
        #expect(pool.idleCount == 1 && idle != nil, "kept for reuse")
        // No call on this thread from here: only the timer can close it (idleCount does not expire handles).
        let deadline = Date().addingTimeInterval(15)
        while idle != nil, Date() < deadline { usleep(100_000) }
        #expect(idle == nil, "the idle handle (its socket and key copy) outlived the lifetime")
        #expect(pool.idleCount == 0)
    }

    /// A forked child must not use the handles it inherited (their sockets, and the kernel state behind them, are
    /// the parent's). The pool drops every handle opened before the fork generation changed, idle or checked out.
    @Test("handles from before a fork are dropped, not reused")
    func forkGeneration() throws {
        let pool = HandlePool()
        let key = [UInt8](repeating: 9, count: 16)
        try key.withUnsafeBytes { key in
            let first = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            pool.giveBack(first)
            let again = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            #expect(again === first, "an idle handle of the same key is reused")
            HandlePool.forkGeneration.add(1, ordering: .relaxed)  // what the pthread_atfork child handler does
            let afterFork = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            #expect(afterFork !== first, "an idle handle from before the fork was reused")
            pool.giveBack(again)  // checked out before the fork: dropped
            pool.giveBack(afterFork)
            let last = try pool.checkOut(.cipher, "cbc(aes)", key: key)
            #expect(last === afterFork)
            #expect(last !== again)
        }
    }
}

/// The kernel backend where AF_ALG is missing (these machines): every call says "not available", so the
/// dispatcher can fall back. Runs everywhere; asserts the host's truth.
@Suite("Kernel backend without AF_ALG")
struct KernelUnavailableTests {
    @Test("calls report notAvailable and nothing is offered", .enabled(if: !KernelBackend.isAvailable))
    func unavailable() {
        let kernel = KernelBackend()
        #expect(KernelBackend.unavailableReason?.contains("AF_ALG") == true)
        for operation in CryptoOperation.all { #expect(!kernel.supports(operation), "\(operation)") }
        #expect(throws: CryptoError(.notAvailable, "")) { try kernel.digest(.sha1, [1, 2, 3]) }
        #expect(throws: CryptoError(.notAvailable, "")) {
            try kernel.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: [UInt8](repeating: 0, count: 16), iv: [UInt8](repeating: 0, count: 16), [UInt8](repeating: 0, count: 16))
        }
    }

    @Test("bad input is rejected before the kernel is asked")
    func validationFirst() {
        let kernel = KernelBackend()
        #expect(throws: CryptoError(.invalidKeySize, "")) {
            try kernel.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: [1, 2, 3], iv: [UInt8](repeating: 0, count: 16), [])
        }
        #expect(throws: CryptoError(.invalidIVSize, "")) {
            try kernel.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: [UInt8](repeating: 0, count: 16), iv: [1], [])
        }
    }

    @Test("the /proc/crypto registry tells CPU drivers from engines")
    func registry() {
        let text = """
            name         : cbc(aes)
            driver       : cbc-aes-aesni
            module       : aesni_intel
            priority     : 400
            selftest     : passed
            type         : skcipher

            name         : cbc(aes)
            driver       : cbc(aes-generic)
            module       : kernel
            priority     : 100
            selftest     : passed
            type         : skcipher

            name         : sha1
            driver       : mv-sha1
            module       : marvell_cesa
            priority     : 300
            selftest     : passed
            type         : ahash

            name         : ecb(aes)
            driver       : ecb-aes-broken
            priority     : 900
            selftest     : unknown
            type         : skcipher
            """
        let registry = KernelCryptoRegistry(parsing: text)
        #expect(registry.driver(for: "cbc(aes)") == "cbc-aes-aesni")
        #expect(registry.isServedByCPU("cbc(aes)") == true)
        #expect(registry.isServedByCPU("sha1") == false)
        #expect(registry.driver(for: "ecb(aes)") == nil)
        #expect(registry.isServedByCPU("sha256") == nil)
    }

    /// /proc/crypto is longer than a page on any kernel with a few drivers; the registry must see all of it (it read
    /// the first 4 KiB only, and lost the engine's driver listed near the end).
    @Test("the registry reads the whole of /proc/crypto")
    func registryReadsEverything() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/cat")
        process.arguments = ["/proc/crypto"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // The same text, but for the reference counts, which other tests' handles change between the two reads
        // (a full run once saw the files differ by one byte: "refcnt : 9" and "refcnt : 10").
        func stable(_ text: String) -> [Substring] { text.split(separator: "\n").filter { !$0.hasPrefix("refcnt") } }
        let read = try #require(ProcFile.read("/proc/crypto"))
        #expect(read.utf8.count > 4096, "longer than a page")
        #expect(stable(read) == stable(text))
        let registry = KernelCryptoRegistry.current()
        #expect(registry.entries == KernelCryptoRegistry(parsing: text).entries)
        #expect(!registry.entries.isEmpty)
    }

    /// The engine lanes' device, as /proc/crypto lists it (qemu's virtio-crypto-pci, Debian's virtio_crypto), beside
    /// the generic CPU code, and an Allwinner engine whose name carries Arm's `-ce` marker.
    @Test("virtio-crypto and other off-CPU drivers are engines")
    func registryEngines() {
        let text = """
            name         : cbc(aes)
            driver       : virtio_crypto_aes_cbc
            module       : virtio_crypto
            priority     : 150
            refcnt       : 1
            selftest     : passed
            internal     : no
            type         : skcipher
            async        : yes

            name         : cbc(aes)
            driver       : cbc(aes-generic)
            module       : kernel
            priority     : 100
            selftest     : passed
            type         : skcipher

            name         : ecb(aes)
            driver       : ecb-aes-sun8i-ce
            module       : sun8i_ce
            priority     : 400
            selftest     : passed
            type         : skcipher

            name         : sha256
            driver       : sha256-ce
            module       : sha2_ce
            priority     : 200
            selftest     : passed
            type         : shash
            """
        let registry = KernelCryptoRegistry(parsing: text)
        #expect(registry.driver(for: "cbc(aes)") == "virtio_crypto_aes_cbc")
        #expect(registry.isServedByCPU("cbc(aes)") == false)
        #expect(registry.isServedByCPU("ecb(aes)") == false)
        #expect(registry.isServedByCPU("sha256") == true)
    }
}
