import CommonCrypto
import CryptoContract
import TestVectors

// Helpers written the way an Apple-platform client writes CommonCrypto calls: the C API, buffers sized with
// the sizing idiom, UnsafeMutablePointer plumbing.

/// CommonCrypto's names for a contract cipher.
func commonCryptoNames(_ spec: CipherSpec) -> (algorithm: CCAlgorithm, mode: CCMode, padding: CCPadding) {
    let algorithm: Int
    switch spec.algorithm {
    case .aes128, .aes192, .aes256: algorithm = kCCAlgorithmAES
    case .des: algorithm = kCCAlgorithmDES
    case .tripleDES: algorithm = kCCAlgorithm3DES
    case .cast5: algorithm = kCCAlgorithmCAST
    case .rc4: algorithm = kCCAlgorithmRC4
    case .rc2: algorithm = kCCAlgorithmRC2
    case .blowfish: algorithm = kCCAlgorithmBlowfish
    }
    let mode: Int
    switch spec.mode {
    case .ecb: mode = kCCModeECB
    case .cbc: mode = kCCModeCBC
    case .ctr: mode = kCCModeCTR
    case .cfb: mode = kCCModeCFB
    case .cfb8: mode = kCCModeCFB8
    case .ofb: mode = kCCModeOFB
    case .stream: mode = kCCModeRC4
    }
    return (CCAlgorithm(algorithm), CCMode(mode), CCPadding(spec.padding == .pkcs7 ? ccPKCS7Padding : ccNoPadding))
}

/// CCCrypt as an app calls it: ask for the size, allocate, call again.
func ccCrypt(_ operation: Int, _ algorithm: CCAlgorithm, _ options: Int, key: [UInt8], iv: [UInt8]?, _ input: [UInt8])
    -> (status: CCCryptorStatus, output: [UInt8])
{
    var needed = 0
    let sizing = CCCrypt(
        CCOperation(operation), algorithm, CCOptions(options), key, key.count, iv, input, input.count, nil, 0, &needed)
    guard sizing == kCCBufferTooSmall || (sizing == kCCSuccess && needed == 0) else { return (sizing, []) }
    var output = [UInt8](repeating: 0, count: needed)
    var moved = 0
    let status = CCCrypt(
        CCOperation(operation), algorithm, CCOptions(options), key, key.count, iv, input, input.count, &output, output.count,
        &moved)
    return (status, Array(output.prefix(moved)))
}

/// A cryptor fed `input` in `chunk`-byte pieces, checking CCCryptorGetOutputLength before every call.
func ccStream(_ operation: Int, _ spec: CipherSpec, key: [UInt8], iv: [UInt8]?, _ input: [UInt8], chunk: Int) -> (
    status: CCCryptorStatus, output: [UInt8], lengthPromisesKept: Bool
) {
    let names = commonCryptoNames(spec)
    var cryptor: CCCryptorRef?
    let created = CCCryptorCreateWithMode(
        CCOperation(operation), names.mode, names.algorithm, names.padding, iv, key, key.count, nil, 0, 0,
        CCModeOptions(kCCModeOptionCTR_BE), &cryptor)
    guard created == kCCSuccess, let cryptor else { return (created, [], false) }
    defer { CCCryptorRelease(cryptor) }
    var output: [UInt8] = []
    var kept = true
    var offset = 0
    while offset < input.count {
        let piece = Array(input[offset..<min(offset + chunk, input.count)])
        let promised = CCCryptorGetOutputLength(cryptor, piece.count, false)
        var buffer = [UInt8](repeating: 0, count: promised)
        var moved = 0
        let status = CCCryptorUpdate(cryptor, piece, piece.count, &buffer, buffer.count, &moved)
        guard status == kCCSuccess else { return (status, output, kept) }
        kept = kept && moved == promised
        output += buffer.prefix(moved)
        offset += chunk
    }
    let promised = CCCryptorGetOutputLength(cryptor, 0, true)
    var buffer = [UInt8](repeating: 0, count: promised)
    var moved = 0
    let status = CCCryptorFinal(cryptor, &buffer, buffer.count, &moved)
    // Final's promise is exact when encrypting, an upper bound when decrypting with padding.
    kept = kept && (operation == kCCDecrypt && spec.padding == .pkcs7 ? moved <= promised : moved == promised)
    return (status, output + buffer.prefix(moved), kept)
}
