import CryptoContract
import SoftwareBackend
import Testing
import TestVectors

/// AES-GCM on the software backend against NIST CAVP GCMVS.
@Suite("Software backend: AES-GCM (NIST CAVP GCMVS)")
struct SoftwareAEADTests {
    let backend = SoftwareBackend()

    @Test("encryption: ciphertext and tag for every key, nonce, AAD and tag length")
    func encrypt() throws {
        let cases = try AEADCase.nist(decrypt: false)
        #expect(cases.count > 1000)
        var failures: [String] = []
        for vector in cases {
            guard let plaintext = vector.plaintext else { continue }
            let sealed = try backend.seal(.aesGCM, key: vector.key, nonce: vector.nonce, aad: vector.aad, plaintext, tagLength: vector.tag.count)
            if sealed.ciphertext != vector.ciphertext || sealed.tag != vector.tag { failures.append("\(vector)") }
        }
        #expect(failures == [])
    }

    @Test("decryption: the plaintext, or an integrity error with nothing left behind")
    func decrypt() throws {
        let cases = try AEADCase.nist(decrypt: true)
        #expect(cases.contains { $0.plaintext == nil })
        var failures: [String] = []
        for vector in cases {
            do {
                let plaintext = try backend.open(.aesGCM, key: vector.key, nonce: vector.nonce, aad: vector.aad, vector.ciphertext, tag: vector.tag)
                if plaintext != vector.plaintext { failures.append("\(vector): accepted or wrong") }
            } catch let error as CryptoError where error.code == .integrity && vector.plaintext == nil {
                continue
            } catch {
                failures.append("\(vector): \(error)")
            }
        }
        #expect(failures == [])
    }

    @Test("bad input: key, nonce and tag sizes, a tampered tag")
    func badInput() throws {
        let key = [UInt8](repeating: 1, count: 32), nonce = [UInt8](repeating: 2, count: 12)
        #expect(throws: CryptoError(.invalidKeySize, "")) { try backend.seal(.aesGCM, key: [1, 2], nonce: nonce, [1]) }
        #expect(throws: CryptoError(.invalidIVSize, "")) { try backend.seal(.aesGCM, key: key, nonce: [], [1]) }
        #expect(throws: CryptoError(.invalidParameter, "")) { try backend.seal(.aesGCM, key: key, nonce: nonce, [1], tagLength: 17) }
        let sealed = try backend.seal(.aesGCM, key: key, nonce: nonce, aad: [9], Array("secret".utf8))
        var tag = sealed.tag
        tag[0] ^= 1
        #expect(throws: CryptoError(.integrity, "")) { try backend.open(.aesGCM, key: key, nonce: nonce, aad: [9], sealed.ciphertext, tag: tag) }
        #expect(throws: CryptoError(.integrity, "")) { try backend.open(.aesGCM, key: key, nonce: nonce, aad: [8], sealed.ciphertext, tag: sealed.tag) }
        #expect(try backend.open(.aesGCM, key: key, nonce: nonce, aad: [9], sealed.ciphertext, tag: sealed.tag) == Array("secret".utf8))
    }

    @Test("a keyed context: the NIST vectors with 96-bit nonces, one context per key, sealing and opening in turn")
    func keyed() throws {
        var keys: [[UInt8]: any AEADKey] = [:]
        func key(_ bytes: [UInt8]) throws -> any AEADKey {
            if let key = keys[bytes] { return key }
            let key = try bytes.withUnsafeBytes { try backend.makeAEADKey(.aesGCM, key: $0) }
            keys[bytes] = key
            return key
        }
        var failures: [String] = []
        var checked = 0
        for vector in try AEADCase.nist(decrypt: false) + AEADCase.nist(decrypt: true) where vector.nonce.count == 12 {
            let context = try key(vector.key)
            if let plaintext = vector.plaintext {
                let sealed = try context.seal(nonce: vector.nonce, aad: vector.aad, plaintext, tagLength: vector.tag.count)
                if sealed.ciphertext != vector.ciphertext || sealed.tag != vector.tag { failures.append("seal \(vector)") }
            }
            do {
                let opened = try context.open(nonce: vector.nonce, aad: vector.aad, vector.ciphertext, tag: vector.tag)
                if opened != vector.plaintext { failures.append("open \(vector): accepted or wrong") }
            } catch let error as CryptoError where error.code == .integrity && vector.plaintext == nil {
            } catch {
                failures.append("open \(vector): \(error)")
            }
            checked += 1
        }
        #expect(checked > 1000 && failures == [])
    }

    @Test("a keyed context: bad sizes are refused, a failed open leaves nothing and the next call works, threads share it")
    func keyedBadInputAndThreads() async throws {
        let key = [UInt8](repeating: 1, count: 32), nonce = [UInt8](repeating: 2, count: 12)
        #expect(throws: CryptoError(.invalidKeySize, "")) { _ = try [UInt8](repeating: 0, count: 20).withUnsafeBytes { try backend.makeAEADKey(.aesGCM, key: $0) } }
        let context = try key.withUnsafeBytes { try backend.makeAEADKey(.aesGCM, key: $0) }
        #expect(throws: CryptoError(.invalidIVSize, "")) { _ = try context.seal(nonce: [1, 2, 3], aad: [], [1]) }
        #expect(throws: CryptoError(.invalidParameter, "")) { _ = try context.seal(nonce: nonce, aad: [], [1], tagLength: 17) }
        let sealed = try context.seal(nonce: nonce, aad: [9], Array("secret".utf8))
        // The keyed context agrees with the one-shot call both ways.
        #expect(try backend.open(.aesGCM, key: key, nonce: nonce, aad: [9], sealed.ciphertext, tag: sealed.tag) == Array("secret".utf8))
        var tag = sealed.tag
        tag[0] ^= 1
        var output = [UInt8](repeating: 0xAA, count: sealed.ciphertext.count)
        #expect(throws: CryptoError(.integrity, "")) {
            try nonce.withUnsafeBytes { nonce in
                try [UInt8]([9]).withUnsafeBytes { aad in
                    try sealed.ciphertext.withUnsafeBytes { input in
                        try tag.withUnsafeBytes { tag in
                            try output.withUnsafeMutableBytes { try context.open(nonce: nonce, aad: aad, input: input, tag: tag, output: $0) }
                        }
                    }
                }
            }
        }
        #expect(output.allSatisfy { $0 == 0 })
        #expect(try context.open(nonce: nonce, aad: [9], sealed.ciphertext, tag: sealed.tag) == Array("secret".utf8))
        // Several tasks at once on one context, each with its own nonces: every result opens with the one-shot call.
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<200 {
                        let nonce = [UInt8](repeating: UInt8(task), count: 11) + [UInt8(round)]
                        let message = Array("task \(task) round \(round)".utf8)
                        let sealed = try context.seal(nonce: nonce, aad: [UInt8(task)], message)
                        guard try SoftwareBackend().open(.aesGCM, key: key, nonce: nonce, aad: [UInt8(task)], sealed.ciphertext, tag: sealed.tag) == message
                        else { return false }
                    }
                    return true
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 8))
    }
}
