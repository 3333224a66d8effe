public import SecurityBase
/// An error from a crypto backend or the dispatcher.
///
/// Equal by ``code``: the ``reason`` and native details are for people, the code is for programs. New codes
/// can be added without breaking callers, because ``Code`` is a struct, not an enum.
public struct CryptoError: CodedError {
    /// What was wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Hashable, Sendable {
            case invalidKeySize, invalidIVSize, alignment, bufferTooSmall, decode, unsupported
            case callSequence, notAvailable, backendFailure, entropyFailure, invalidParameter, outOfMemory, overflow
            case integrity
        }
        fileprivate let base: Base

        /// The key length is not one the algorithm takes.
        public static let invalidKeySize = Code(base: .invalidKeySize)
        /// The IV is missing or not one block long.
        public static let invalidIVSize = Code(base: .invalidIVSize)
        /// Input is not a whole number of blocks where the mode needs that.
        public static let alignment = Code(base: .alignment)
        /// The output buffer cannot hold the result (``CryptoError/requiredSize`` says how much it needs).
        public static let bufferTooSmall = Code(base: .bufferTooSmall)
        /// Decryption found bad padding.
        public static let decode = Code(base: .decode)
        /// The backend does not offer this algorithm, mode or combination.
        public static let unsupported = Code(base: .unsupported)
        /// A streaming object was used after it finished.
        public static let callSequence = Code(base: .callSequence)
        /// The backend is not there on this machine (no AF_ALG, algorithm not in the kernel): callers may fall back.
        public static let notAvailable = Code(base: .notAvailable)
        /// The underlying library failed for another reason (``CryptoError/nativeCode`` holds its code).
        public static let backendFailure = Code(base: .backendFailure)
        /// The entropy source failed.
        public static let entropyFailure = Code(base: .entropyFailure)
        /// A parameter is out of range.
        public static let invalidParameter = Code(base: .invalidParameter)
        /// The C library could not allocate a context.
        public static let outOfMemory = Code(base: .outOfMemory)
        /// A length computation would overflow.
        public static let overflow = Code(base: .overflow)
        /// Authenticated data failed its check (a wrapped key whose integrity value does not match).
        public static let integrity = Code(base: .integrity)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// A human explanation. Never contains key material or data.
    public let reason: String
    public let location: ErrorLocation
    /// For ``Code/bufferTooSmall``: the output size the call needs.
    public let requiredSize: Int?
    /// The native error: a positive `errno` from the kernel or libkcapi, or OpenSSL's packed error code.
    public let nativeCode: Int?

    public init(_ code: Code, _ reason: String, requiredSize: Int? = nil, nativeCode: Int? = nil, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
        self.requiredSize = requiredSize
        self.nativeCode = nativeCode
    }

    /// Checks that `output` can take `needed` bytes.
    @inlinable @inline(__always)
    public static func checkOutput(_ output: UnsafeMutableRawBufferPointer, holds needed: Int) throws {
        if output.count < needed { throw outputTooSmall(output.count, needed: needed) }
    }

    /// ``checkOutput(_:holds:)``'s error, out of line: its message would otherwise widen every caller's frame.
    @usableFromInline
    static func outputTooSmall(_ count: Int, needed: Int) -> CryptoError {
        CryptoError(.bufferTooSmall, "output buffer holds \(count) bytes, \(needed) needed", requiredSize: needed)
    }
}
