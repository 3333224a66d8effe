import SecurityBase
public import CryptoContract
import CryptoDispatcher
public import Foundation

/// A symmetric cipher configuration — algorithm, mode, padding — that encrypts and decrypts `Data`,
/// through the dispatcher (AES goes to the kernel above the threshold measured for this machine).
///
/// ```swift
/// let cipher = Cipher(.aes256, .cbc, padding: .pkcs7)
/// let sealed = try cipher.encrypt(message, key: key, iv: iv)
/// ```
public struct Cipher: Sendable, Hashable {
    public let spec: CipherSpec

    public init(_ algorithm: CipherAlgorithm, _ mode: CipherMode, padding: CipherPadding = .none) {
        spec = CipherSpec(algorithm, mode, padding: padding)
    }

    /// Encrypts `data`.
    /// - Parameters:
    ///   - key: a key of a size the algorithm takes.
    ///   - iv: one block for the modes that take an IV (`nil` there is an error); ignored by ECB and RC4.
    /// - Throws: ``CryptoError`` (`.invalidKeySize`, `.invalidIVSize`, `.alignment`, …).
    public func encrypt(_ data: some DataProtocol, key: some DataProtocol, iv: (any DataProtocol)? = nil) throws -> Data {
        try run(.encrypt, data, key: key, iv: iv)
    }

    /// Decrypts `data`.
    /// - Throws: ``CryptoError``; `.decode` for bad padding.
    public func decrypt(_ data: some DataProtocol, key: some DataProtocol, iv: (any DataProtocol)? = nil) throws -> Data {
        try run(.decrypt, data, key: key, iv: iv)
    }

    /// A streaming encryptor or decryptor.
    public func stream(_ direction: CipherDirection, key: some DataProtocol, iv: (any DataProtocol)? = nil) throws
        -> CipherStreamer
    {
        let iv = iv.map { Array($0) }
        return CipherStreamer(try Dispatcher.shared.makeCipherStream(direction, spec, key: SecretBytes(key), iv: iv))
    }

    private func run(_ direction: CipherDirection, _ data: some DataProtocol, key: some DataProtocol, iv: (any DataProtocol)?)
        throws -> Data
    {
        Data(try Dispatcher.shared.crypt(direction, spec, key: SecretBytes(key), iv: iv.map { Array($0) }, Array(data)))
    }
}

/// A cipher fed in pieces; one owner at a time.
public final class CipherStreamer {
    private let stream: any CipherStream

    init(_ stream: any CipherStream) { self.stream = stream }

    /// Processes more input; block modes may hold back a partial block.
    public func update(_ data: some DataProtocol) throws -> Data { Data(try stream.update(Array(data))) }

    /// Ends the stream (pads, or checks and strips padding).
    public func finish() throws -> Data { Data(try stream.finish()) }
}
