import SecurityBase
public import CommonCrypto
import CryptoContract

// CommonCryptor.h on the dispatcher. Swift functions carry lower-case names so they never shadow the C
// declarations a client imports; @_cdecl gives each its C symbol.

/// What a CCCryptor call asks for, once the C arguments are checked.
struct CryptorRequest {
    let direction: CipherDirection
    let spec: CipherSpec
}

/// Checks the C arguments common to every cipher entry point and names the cipher.
/// - Returns: the request, or the Apple status to return.
func cryptorRequest(
    _ op: CCOperation, _ mode: CCMode, _ alg: CCAlgorithm, _ padding: CCPadding, key: UnsafeRawPointer?, keyLength: Int
) -> Result<CryptorRequest, CryptorFailure> {
    let direction: CipherDirection
    switch Int(op) {
    case kCCEncrypt: direction = .encrypt
    case kCCDecrypt: direction = .decrypt
    default: return .failure(CryptorFailure(.paramError))
    }
    let cipherMode: CipherMode
    switch Int(mode) {
    case kCCModeECB: cipherMode = .ecb
    case kCCModeCBC: cipherMode = .cbc
    case kCCModeCFB: cipherMode = .cfb
    case kCCModeCTR: cipherMode = .ctr
    case kCCModeOFB: cipherMode = .ofb
    case kCCModeRC4: cipherMode = .stream
    case kCCModeCFB8: cipherMode = .cfb8
    case kCCModeF8, kCCModeLRW, kCCModeXTS: return .failure(CryptorFailure(CCCryptorStatus(kCCUnimplemented)))
    default: return .failure(CryptorFailure(.paramError))
    }
    let algorithm: CipherAlgorithm
    switch Int(alg) {
    case kCCAlgorithmAES:
        guard let aes = CipherAlgorithm.aes(keySize: keyLength) else { return .failure(CryptorFailure(CCCryptorStatus(kCCKeySizeError))) }
        algorithm = aes
    case kCCAlgorithmDES: algorithm = .des
    case kCCAlgorithm3DES: algorithm = .tripleDES
    case kCCAlgorithmCAST: algorithm = .cast5
    case kCCAlgorithmRC4: algorithm = .rc4
    case kCCAlgorithmRC2: algorithm = .rc2
    case kCCAlgorithmBlowfish: algorithm = .blowfish
    default: return .failure(CryptorFailure(.paramError))
    }
    // RC4 runs only as kCCModeRC4, and kCCModeRC4 only with RC4.
    guard (algorithm == .rc4) == (cipherMode == .stream) else { return .failure(CryptorFailure(.paramError)) }
    let cipherPadding: CipherPadding
    switch Int(padding) {
    case ccNoPadding: cipherPadding = .none
    case ccPKCS7Padding: cipherPadding = .pkcs7
    default: return .failure(CryptorFailure(.paramError))
    }
    guard algorithm.keySizes.contains(keyLength) else { return .failure(CryptorFailure(CCCryptorStatus(kCCKeySizeError))) }
    // A NULL key is "not a valid key" whatever its stated length.
    guard key != nil else { return .failure(CryptorFailure(CCCryptorStatus(kCCInvalidKey))) }
    return .success(CryptorRequest(direction: direction, spec: CipherSpec(algorithm, cipherMode, padding: cipherPadding)))
}

struct CryptorFailure: CodedError {
    let status: CCCryptorStatus
    let location: ErrorLocation
    init(_ status: CCCryptorStatus, file: StaticString = #fileID, line: UInt = #line) {
        self.status = status
        location = ErrorLocation(fileID: file, line: line)
    }

    var code: CCCryptorStatus { status }
    var reason: String { "CommonCrypto status \(status)" }
}

/// The classic options word: ECB or CBC for block ciphers, RC4 as a stream; PKCS#7 padding or none.
func modeAndPadding(_ alg: CCAlgorithm, _ options: CCOptions) -> (CCMode, CCPadding) {
    let mode = Int(alg) == kCCAlgorithmRC4 ? kCCModeRC4 : (Int(options) & kCCOptionECBMode != 0 ? kCCModeECB : kCCModeCBC)
    let padding = Int(options) & kCCOptionPKCS7Padding != 0 ? ccPKCS7Padding : ccNoPadding
    return (CCMode(mode), CCPadding(padding))
}

/// The IV to use: the caller's (one block), or all zeros when NULL, as Apple documents.
func withIV<R>(_ iv: UnsafeRawPointer?, _ spec: CipherSpec, _ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
    guard spec.ivSize > 0 else { return try body(nil) }
    if let iv { return try body(UnsafeRawBufferPointer(start: iv, count: spec.ivSize)) }
    return try withUnsafeTemporaryAllocation(byteCount: spec.ivSize, alignment: 16) { zeros in
        zeros.initializeMemory(as: UInt8.self, repeating: 0)
        return try body(UnsafeRawBufferPointer(zeros))
    }
}

@_cdecl("CCCrypt")
public func ccCrypt(
    _ op: CCOperation, _ alg: CCAlgorithm, _ options: CCOptions, _ key: UnsafeRawPointer?, _ keyLength: Int,
    _ iv: UnsafeRawPointer?, _ dataIn: UnsafeRawPointer?, _ dataInLength: Int, _ dataOut: UnsafeMutableRawPointer?,
    _ dataOutAvailable: Int, _ dataOutMoved: UnsafeMutablePointer<Int>?
) -> CCCryptorStatus {
    dataOutMoved?.pointee = 0
    let (mode, padding) = modeAndPadding(alg, options)
    let request: CryptorRequest
    switch cryptorRequest(op, mode, alg, padding, key: key, keyLength: keyLength) {
    case .success(let value): request = value
    case .failure(let failure): return failure.status
    }
    guard let input = buffer(dataIn, dataInLength) else { return .paramError }
    let needed: Int
    if request.direction == .encrypt && request.spec.effectivePadding == .pkcs7 {
        let block = request.spec.algorithm.blockSize
        let (padded, overflow) = dataInLength.addingReportingOverflow(block - dataInLength % block)
        guard !overflow else { return CCCryptorStatus(kCCOverflow) }
        needed = padded
    } else {
        do { needed = try request.spec.oneShotOutputLength(request.direction, inputCount: dataInLength) } catch {
            return status(error)
        }
    }
    guard dataOutAvailable >= needed, let output = mutableBuffer(dataOut, dataOutAvailable) else {
        // Apple's sizing idiom: ask with no buffer, get the size back.
        dataOutMoved?.pointee = needed
        return CCCryptorStatus(kCCBufferTooSmall)
    }
    do {
        let written = try withIV(iv, request.spec) { iv in
            try Engine.current.crypt(
                request.direction, request.spec, key: UnsafeRawBufferPointer(start: key, count: keyLength), iv: iv,
                input: input, output: output)
        }
        dataOutMoved?.pointee = written
        return .success
    } catch {
        return status(error)
    }
}

/// A CCCryptorRef's object: the stream, and a flag for use after Final.
final class Cryptor {
    let stream: any CipherStream
    init(_ stream: any CipherStream) { self.stream = stream }

    static func from(_ reference: CCCryptorRef?) -> Cryptor? {
        reference.map { Unmanaged<Cryptor>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

@_cdecl("CCCryptorCreateWithMode")
public func ccCryptorCreateWithMode(
    _ op: CCOperation, _ mode: CCMode, _ alg: CCAlgorithm, _ padding: CCPadding, _ iv: UnsafeRawPointer?,
    _ key: UnsafeRawPointer?, _ keyLength: Int, _ tweak: UnsafeRawPointer?, _ tweakLength: Int, _ numRounds: Int32,
    _ options: CCModeOptions, _ cryptorRef: UnsafeMutablePointer<CCCryptorRef?>?
) -> CCCryptorStatus {
    guard let cryptorRef else { return .paramError }
    cryptorRef.pointee = nil
    // Counters are big-endian; little-endian counters were withdrawn by Apple and are not offered.
    if Int(options) & kCCModeOptionCTR_LE != 0 { return CCCryptorStatus(kCCUnimplemented) }
    let request: CryptorRequest
    switch cryptorRequest(op, mode, alg, padding, key: key, keyLength: keyLength) {
    case .success(let value): request = value
    case .failure(let failure): return failure.status
    }
    do {
        let stream = try withIV(iv, request.spec) { iv in
            try Engine.current.makeCipherStream(
                request.direction, request.spec, key: UnsafeRawBufferPointer(start: key, count: keyLength), iv: iv)
        }
        cryptorRef.pointee = CCCryptorRef(Unmanaged.passRetained(Cryptor(stream)).toOpaque())
        return .success
    } catch {
        return status(error)
    }
}

@_cdecl("CCCryptorCreate")
public func ccCryptorCreate(
    _ op: CCOperation, _ alg: CCAlgorithm, _ options: CCOptions, _ key: UnsafeRawPointer?, _ keyLength: Int,
    _ iv: UnsafeRawPointer?, _ cryptorRef: UnsafeMutablePointer<CCCryptorRef?>?
) -> CCCryptorStatus {
    let (mode, padding) = modeAndPadding(alg, options)
    return ccCryptorCreateWithMode(op, mode, alg, padding, iv, key, keyLength, nil, 0, 0, 0, cryptorRef)
}

/// The memory Apple's cryptor needs per algorithm (`kCCContextSize…`).
func contextSize(_ alg: CCAlgorithm) -> Int {
    switch Int(alg) {
    case kCCAlgorithmAES: kCCContextSizeAES128
    case kCCAlgorithm3DES: kCCContextSize3DES
    case kCCAlgorithmRC4: kCCContextSizeRC4
    default: kCCContextSizeDES  // DES, CAST, RC2, Blowfish
    }
}

/// Apple places the cryptor in the caller's memory. Here the state is a Swift object (it owns OpenSSL or
/// kernel contexts), so the memory is checked for Apple's size but not used; CCCryptorRelease frees the
/// object as for any cryptor.
@_cdecl("CCCryptorCreateFromData")
public func ccCryptorCreateFromData(
    _ op: CCOperation, _ alg: CCAlgorithm, _ options: CCOptions, _ key: UnsafeRawPointer?, _ keyLength: Int,
    _ iv: UnsafeRawPointer?, _ data: UnsafeRawPointer?, _ dataLength: Int,
    _ cryptorRef: UnsafeMutablePointer<CCCryptorRef?>?, _ dataUsed: UnsafeMutablePointer<Int>?
) -> CCCryptorStatus {
    let needed = contextSize(alg)
    dataUsed?.pointee = needed
    guard data != nil, dataLength >= needed else {
        cryptorRef?.pointee = nil
        return CCCryptorStatus(kCCBufferTooSmall)
    }
    return ccCryptorCreate(op, alg, options, key, keyLength, iv, cryptorRef)
}

@_cdecl("CCCryptorRelease")
public func ccCryptorRelease(_ cryptorRef: CCCryptorRef?) -> CCCryptorStatus {
    guard let cryptorRef else { return .success }
    Unmanaged<Cryptor>.fromOpaque(UnsafeRawPointer(cryptorRef)).release()
    return .success
}

@_cdecl("CCCryptorUpdate")
public func ccCryptorUpdate(
    _ cryptorRef: CCCryptorRef?, _ dataIn: UnsafeRawPointer?, _ dataInLength: Int, _ dataOut: UnsafeMutableRawPointer?,
    _ dataOutAvailable: Int, _ dataOutMoved: UnsafeMutablePointer<Int>?
) -> CCCryptorStatus {
    dataOutMoved?.pointee = 0
    guard let cryptor = Cryptor.from(cryptorRef), let input = buffer(dataIn, dataInLength) else { return .paramError }
    let needed = cryptor.stream.outputLength(forInputCount: dataInLength, final: false)
    guard dataOutAvailable >= needed, let output = mutableBuffer(dataOut, dataOutAvailable) else {
        dataOutMoved?.pointee = needed
        return CCCryptorStatus(kCCBufferTooSmall)
    }
    do {
        dataOutMoved?.pointee = try cryptor.stream.update(input, into: output)
        return .success
    } catch {
        return status(error)
    }
}

@_cdecl("CCCryptorFinal")
public func ccCryptorFinal(
    _ cryptorRef: CCCryptorRef?, _ dataOut: UnsafeMutableRawPointer?, _ dataOutAvailable: Int,
    _ dataOutMoved: UnsafeMutablePointer<Int>?
) -> CCCryptorStatus {
    dataOutMoved?.pointee = 0
    guard let cryptor = Cryptor.from(cryptorRef) else { return .paramError }
    let needed = cryptor.stream.outputLength(forInputCount: 0, final: true)
    guard dataOutAvailable >= needed, let output = mutableBuffer(dataOut, dataOutAvailable) else {
        dataOutMoved?.pointee = needed
        return CCCryptorStatus(kCCBufferTooSmall)
    }
    do {
        dataOutMoved?.pointee = try cryptor.stream.finish(into: output)
        return .success
    } catch {
        return status(error)
    }
}

@_cdecl("CCCryptorGetOutputLength")
public func ccCryptorGetOutputLength(_ cryptorRef: CCCryptorRef?, _ inputLength: Int, _ final: Bool) -> Int {
    Cryptor.from(cryptorRef)?.stream.outputLength(forInputCount: inputLength, final: final) ?? 0
}

@_cdecl("CCCryptorReset")
public func ccCryptorReset(_ cryptorRef: CCCryptorRef?, _ iv: UnsafeRawPointer?) -> CCCryptorStatus {
    guard let cryptor = Cryptor.from(cryptorRef) else { return .paramError }
    do {
        try withIV(iv, cryptor.stream.spec) { try cryptor.stream.reset(iv: $0) }
        return .success
    } catch {
        return status(error)
    }
}
