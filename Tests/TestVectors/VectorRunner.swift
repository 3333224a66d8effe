public import CryptoContract

/// Runs typed vectors against a backend and returns what went wrong, one line per failure (the test target
/// turns them into expectations). Each case runs one-shot in both directions and streamed in odd-sized chunks.
public enum VectorRunner {
    /// Chunk sizes for the streamed runs: prime, so chunks straddle block boundaries in every way.
    static let chunkSizes = [1, 7, 13, 61]

    public static func run(_ cases: [CipherCase], on backend: any CryptoBackend) -> [String] {
        var failures: [String] = []
        for vector in cases {
            do {
                let plaintext = [UInt8](repeating: 0, count: vector.offset) + vector.plaintext
                let encrypted = try backend.crypt(.encrypt, vector.spec, key: vector.key, iv: vector.iv, plaintext)
                if Array(encrypted.suffix(vector.ciphertext.count)) != vector.ciphertext {
                    failures.append("\(vector): encrypt gave \(encrypted.suffix(vector.ciphertext.count).hex)")
                    continue
                }
                let decrypted = try backend.crypt(.decrypt, vector.spec, key: vector.key, iv: vector.iv, encrypted)
                if decrypted != plaintext { failures.append("\(vector): decrypt gave \(decrypted.hex)") }
                for chunk in chunkSizes where chunk < plaintext.count {
                    let streamed = try stream(.encrypt, vector, plaintext, chunk: chunk, on: backend)
                    if streamed != encrypted { failures.append("\(vector): encrypt in \(chunk)-byte chunks gave \(streamed.hex)") }
                    let back = try stream(.decrypt, vector, encrypted, chunk: chunk, on: backend)
                    if back != plaintext { failures.append("\(vector): decrypt in \(chunk)-byte chunks gave \(back.hex)") }
                }
            } catch {
                failures.append("\(vector): threw \(error)")
            }
        }
        return failures
    }

    public static func run(_ cases: [DigestCase], on backend: any CryptoBackend) -> [String] {
        cases.flatMap { vector in
            hashing(vector, vector.message, expected: vector.digest) {
                try backend.digest(vector.algorithm, vector.message)
            } stream: {
                try backend.makeDigestStream(vector.algorithm)
            }
        }
    }

    public static func run(_ cases: [HMACCase], on backend: any CryptoBackend) -> [String] {
        cases.flatMap { vector in
            hashing(vector, vector.message, expected: vector.mac) {
                try backend.hmac(vector.algorithm, key: vector.key, vector.message)
            } stream: {
                try backend.makeHMACStream(vector.algorithm, key: vector.key)
            }
        }
    }

    /// One digest or HMAC vector: one-shot, then streamed in each chunk size. `expected` may be a truncation.
    private static func hashing(
        _ vector: some CustomStringConvertible, _ message: [UInt8], expected: [UInt8], oneShot: () throws -> [UInt8],
        stream makeStream: () throws -> any DigestStream
    ) -> [String] {
        var failures: [String] = []
        do {
            let result = try oneShot()
            if Array(result.prefix(expected.count)) != expected { failures.append("\(vector): gave \(result.hex)") }
            for chunk in chunkSizes where chunk < message.count {
                let stream = try makeStream()
                for piece in message.chunked(chunk) { try stream.update(piece) }
                let streamed = try stream.finish()
                if streamed != result { failures.append("\(vector): in \(chunk)-byte chunks gave \(streamed.hex)") }
            }
        } catch {
            failures.append("\(vector): threw \(error)")
        }
        return failures
    }

    /// Runs `input` through a stream in `chunk`-byte pieces, checking the stream's own output-length promise.
    public static func stream(
        _ direction: CipherDirection, _ vector: CipherCase, _ input: [UInt8], chunk: Int, on backend: any CryptoBackend
    ) throws -> [UInt8] {
        let stream = try backend.makeCipherStream(direction, vector.spec, key: vector.key, iv: vector.iv)
        var output: [UInt8] = []
        for piece in input.chunked(chunk) { output += try stream.update(piece) }
        return output + (try stream.finish())
    }
}

extension Array where Element == UInt8 {
    /// Consecutive pieces of at most `size` bytes.
    public func chunked(_ size: Int) -> [[UInt8]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
