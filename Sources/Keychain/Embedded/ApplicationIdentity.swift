import CryptoDispatcher
import Foundation
import KeychainModel
import Synchronization

/// Applications as an access control list names them, identified by hashing their executables with the dispatcher.
extension ItemAccess.Application {
    /// The application whose executable is at `path`, identified by that file's SHA-256 now.
    /// - Throws: ``KeychainError`` `.parameter` when the file cannot be read.
    public init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw KeychainError(.parameter, "the application cannot be read", errno: errno) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw KeychainError(.parameter, "an application is a regular file")
        }
        self.init(path: path, sha256: try Self.sha256(readingFrom: fd))
    }

    /// This process's application: its executable (`/proc/self/exe`), read once.
    public static var current: ItemAccess.Application {
        get throws {
            if let known = currentApplication.withLock({ $0 }) { return known }
            let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/proc/self/exe"
            let fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw KeychainError(.io, "this process's executable cannot be read", errno: errno) }
            defer { close(fd) }
            let application = ItemAccess.Application(path: path, sha256: try sha256(readingFrom: fd))
            currentApplication.withLock { $0 = application }
            return application
        }
    }
    private static let currentApplication = Mutex<ItemAccess.Application?>(nil)

    /// The SHA-256 (lower-case hex) of what `fd` reads to its end.
    package static func sha256(readingFrom fd: Int32) throws -> String {
        let stream = try Dispatcher.shared.makeDigestStream(.sha256)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw KeychainError(.io, "an executable cannot be read", errno: errno) }
            if count == 0 { break }
            try buffer.withUnsafeBytes { try stream.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        try digest.withUnsafeMutableBytes { try stream.finish(into: $0) }
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}
