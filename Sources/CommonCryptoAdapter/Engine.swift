import CommonCrypto
import CryptoContract
import CryptoDispatcher
import Entropy

/// The engine behind the C API: the process-wide dispatcher. Tests bind another one for the duration of a
/// call (a task-local value, so parallel tests do not see each other's).
enum Engine {
    @TaskLocal static var current: any CryptoBackend = Dispatcher.shared
    /// The random source behind CCRandomGenerateBytes.
    @TaskLocal static var random: @Sendable (UnsafeMutableRawBufferPointer) throws -> Void = { try EntropySource.fill($0) }
}

/// Apple's status for an error of the engine.
func status(_ error: any Error) -> CCCryptorStatus {
    guard let error = error as? CryptoError else { return CCCryptorStatus(kCCUnspecifiedError) }
    switch error.code {
    case .invalidKeySize: return CCCryptorStatus(kCCKeySizeError)
    case .invalidIVSize, .invalidParameter: return CCCryptorStatus(kCCParamError)
    case .alignment: return CCCryptorStatus(kCCAlignmentError)
    case .bufferTooSmall: return CCCryptorStatus(kCCBufferTooSmall)
    case .decode, .integrity: return CCCryptorStatus(kCCDecodeError)
    case .unsupported, .notAvailable: return CCCryptorStatus(kCCUnimplemented)
    case .callSequence: return CCCryptorStatus(kCCCallSequenceError)
    case .outOfMemory: return CCCryptorStatus(kCCMemoryFailure)
    case .overflow: return CCCryptorStatus(kCCOverflow)
    case .entropyFailure: return CCCryptorStatus(kCCRNGFailure)
    default: return CCCryptorStatus(kCCUnspecifiedError)
    }
}

extension CCCryptorStatus {
    static let success = CCCryptorStatus(kCCSuccess)
    static let paramError = CCCryptorStatus(kCCParamError)
}

/// A raw buffer from a C pointer and length; `nil` when the pointer is NULL but the length is not zero.
func buffer(_ pointer: UnsafeRawPointer?, _ count: Int) -> UnsafeRawBufferPointer? {
    guard pointer != nil || count == 0 else { return nil }
    return UnsafeRawBufferPointer(start: pointer, count: count)
}

func mutableBuffer(_ pointer: UnsafeMutableRawPointer?, _ count: Int) -> UnsafeMutableRawBufferPointer? {
    guard pointer != nil || count == 0 else { return nil }
    return UnsafeMutableRawBufferPointer(start: pointer, count: count)
}
