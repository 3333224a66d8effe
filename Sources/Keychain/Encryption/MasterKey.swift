import SecurityBase
import CryptoContract
import DurableFiles
import Entropy
import Foundation

/// Who holds the keychain's 256-bit master key. The key file is the default; the protocol lets other holders
/// (a TPM, a desktop secret service, a key derived from a login password) come later.
public protocol MasterKeyHolder: Sendable {
    /// Calls `body` with the master key (32 bytes). The bytes must not escape `body`.
    func withMasterKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R
}

/// The master key in a file of its own (32 random bytes, mode 0600), outside the database, so a copy of the
/// database alone reveals no secret. Created with the project's entropy source on first use; held in memory
/// wiped on release.
public final class KeyFileMasterKey: MasterKeyHolder {
    public static let keySize = 32
    private let key: SecretBytes
    public let path: String

    /// Loads the key at `path`, creating it (0600, fsynced, linked into place whole) when the file does not exist.
    /// - Throws: ``KeychainError`` `.masterKey` for a file of the wrong size or readable by group or others,
    ///   `.io` when it cannot be created or read.
    public init(path: String) throws {
        self.path = path
        if !FileManager.default.fileExists(atPath: path) { try Self.create(path) }
        key = try Self.load(path)
    }

    /// A holder for a key already in memory (tests, backups, other holders).
    public init(bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count == Self.keySize else {
            throw KeychainError(.masterKey, "a master key has \(Self.keySize) bytes, got \(bytes.count)")
        }
        key = SecretBytes(copying: bytes)
        path = ""
    }

    public func withMasterKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try key.withUnsafeBytes(body)
    }

    private static func create(_ path: String) throws {
        var bytes = SecretBytes(zeroed: keySize)
        try bytes.withUnsafeMutableBytes { try EntropySource.fill($0) }
        // Written whole to a file of this process's own, then linked into place: link(2) never replaces a file,
        // so of two processes racing to create the key one wins and the other reads the winner's key, and no
        // process can read the file before its 32 bytes are in it. The directory is synced too, or a crash could
        // lose the key file after a keychain already encrypted items under it.
        do {
            _ = try bytes.withUnsafeBytes { bytes in
                try DurableFile.write(bytes, to: path, mode: 0o600, placement: .createOnly)
            }
        } catch let error as DurableFileError {
            throw KeychainError(.io, "cannot create the master key file (\(error.step.rawValue))", errno: error.errno)
        }
    }

    private static func load(_ path: String) throws -> SecretBytes {
        var status = stat()
        guard stat(path, &status) == 0 else { throw KeychainError(.io, "cannot stat the master key file", errno: errno) }
        guard status.st_mode & 0o077 == 0 else {
            throw KeychainError(.masterKey, "the master key file is readable by group or others (mode \(String(status.st_mode & 0o777, radix: 8)))")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw KeychainError(.io, "cannot open the master key file", errno: errno) }
        defer { close(fd) }
        // One byte more than a key: a longer file is refused rather than cut.
        var buffer = SecretBytes(zeroed: keySize + 1)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count == keySize else {
            throw KeychainError(.masterKey, "the master key file must hold exactly \(keySize) bytes")
        }
        return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<keySize])) }
    }
}
