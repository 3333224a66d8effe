import CommonCrypto
import CryptoDispatcher
import Foundation

extension FuzzTarget {
    /// `CCCryptor` fed in generated pieces against the same cryptor fed at once, and against `CCCrypt` where the
    /// mode is ECB or CBC: the outputs and statuses must agree for generated lengths, paddings and
    /// chunkings.
    static let cryptor = FuzzTarget(
        name: "cryptor", summary: "CCCryptor chunked against one-shot, every block cipher, mode and padding",
        seeds: { [Data([0, 1, 1, 0, 7] + [UInt8](repeating: 0x41, count: 80)), Data([2, 3, 0, 1, 3] + [UInt8](repeating: 0x17, count: 70))] }
    ) { data in
        var input = FuzzInput(data)
        let ciphers: [(algorithm: Int, keySize: Int, blockSize: Int)] = [
            (kCCAlgorithmAES, kCCKeySizeAES128, kCCBlockSizeAES128), (kCCAlgorithmAES, kCCKeySizeAES256, kCCBlockSizeAES128),
            (kCCAlgorithm3DES, kCCKeySize3DES, kCCBlockSize3DES), (kCCAlgorithmBlowfish, 16, kCCBlockSizeBlowfish),
            (kCCAlgorithmCAST, 16, kCCBlockSizeCAST), (kCCAlgorithmDES, kCCKeySizeDES, kCCBlockSizeDES),
        ]
        let cipher = ciphers[Int(input.byte()) % ciphers.count]
        let modes = [kCCModeECB, kCCModeCBC, kCCModeCFB, kCCModeCTR, kCCModeOFB, kCCModeCFB8]
        let mode = modes[Int(input.byte()) % modes.count]
        let padded = (mode == kCCModeECB || mode == kCCModeCBC) && input.byte() & 1 == 1
        let operation = input.byte() & 1 == 0 ? kCCEncrypt : kCCDecrypt
        let chunking = Int(input.byte())
        let key = input.take(cipher.keySize)
        let iv = input.take(cipher.blockSize)
        let message = input.rest()
        guard key.count == cipher.keySize, iv.count == cipher.blockSize else { return }

        func run(pieces: [Int]) -> (CCCryptorStatus, Data) {
            var cryptor: CCCryptorRef?
            let created = key.withUnsafeBytes { key in
                iv.withUnsafeBytes { iv in
                    CCCryptorCreateWithMode(
                        CCOperation(operation), CCMode(mode), CCAlgorithm(cipher.algorithm), CCPadding(padded ? ccPKCS7Padding : ccNoPadding),
                        iv.baseAddress, key.baseAddress, key.count, nil, 0, 0, 0, &cryptor)
                }
            }
            guard created == kCCSuccess, let cryptor else { return (created, Data()) }
            defer { CCCryptorRelease(cryptor) }
            var output = Data()
            var offset = 0
            for length in pieces {
                let piece = message[message.startIndex + offset..<message.startIndex + offset + length]
                offset += length
                var out = [UInt8](repeating: 0, count: CCCryptorGetOutputLength(cryptor, length, false) + 32)
                var moved = 0
                let status = piece.withUnsafeBytes { CCCryptorUpdate(cryptor, $0.baseAddress, $0.count, &out, out.count, &moved) }
                guard status == kCCSuccess else { return (status, output) }
                output += out[..<moved]
            }
            var out = [UInt8](repeating: 0, count: CCCryptorGetOutputLength(cryptor, 0, true) + 32)
            var moved = 0
            let status = CCCryptorFinal(cryptor, &out, out.count, &moved)
            guard status == kCCSuccess else { return (status, output) }
            return (status, output + out[..<moved])
        }

        var pieces: [Int] = []
        var remaining = message.count
        var step = chunking
        while remaining > 0 && pieces.count < 4096 {
            // Pieces of 0 to 36 bytes (an empty update is a case too), the last one taking what is left.
            let length = pieces.count == 4095 ? remaining : min(remaining, Int(UInt(bitPattern: step) % 37))
            pieces.append(length)
            remaining -= length
            step = step &* 31 &+ 7
        }
        let (wholeStatus, whole) = run(pieces: message.isEmpty ? [] : [message.count])
        let (chunkedStatus, chunked) = run(pieces: pieces)
        precondition(wholeStatus == chunkedStatus, "chunked status \(chunkedStatus) differs from one-shot \(wholeStatus)")
        if wholeStatus == kCCSuccess { precondition(whole == chunked, "chunked output differs from one-shot output") }

        guard mode == kCCModeECB || mode == kCCModeCBC else { return }
        var options = CCOptions(padded ? kCCOptionPKCS7Padding : 0)
        if mode == kCCModeECB { options |= CCOptions(kCCOptionECBMode) }
        var out = [UInt8](repeating: 0, count: message.count + cipher.blockSize)
        var moved = 0
        let status = key.withUnsafeBytes { key in
            iv.withUnsafeBytes { iv in
                message.withUnsafeBytes { message in
                    CCCrypt(
                        CCOperation(operation), CCAlgorithm(cipher.algorithm), options, key.baseAddress, key.count, iv.baseAddress,
                        message.baseAddress, message.count, &out, out.count, &moved)
                }
            }
        }
        precondition(status == wholeStatus, "CCCrypt's status \(status) differs from the cryptor's \(wholeStatus)")
        if status == kCCSuccess { precondition(Data(out[..<moved]) == whole, "CCCrypt's output differs from the cryptor's") }
    }

    /// The dispatcher's saved profile (per kernel and CPU thresholds), as a process reads it at start.
    static let dispatchProfile = FuzzTarget(
        name: "dispatch-profile", summary: "DispatchProfile.load of a profile file",
        seeds: { [Data(#"{"version":1}"#.utf8)] }
    ) { data in
        withTemporaryFile(data) { path in _ = DispatchProfile.load(from: URL(fileURLWithPath: path)) }
    }
}
