public import SecurityBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
internal import CGetrandom

/// An error from the entropy source. Equal by code.
public struct EntropyError: CodedError {
    public typealias Code = ErrorCode<EntropyError>

    public let code: Code
    public let reason: String
    /// The `errno` of the failing call.
    public let errno: Int32
    public let location: ErrorLocation

    init(code: Code, reason: String, errno: Int32, file: StaticString = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.errno = errno
        location = ErrorLocation(fileID: file, line: line)
    }

    public var description: String { "EntropyError.\(code): \(reason) (errno \(errno))" }
}

extension ErrorCode where Domain == EntropyError {
    /// `getrandom(2)` failed (and no fallback applies); ``EntropyError/errno`` says why.
    public static let systemCallFailed = Self(name: "systemCallFailed")
    /// The `/dev/urandom` fallback could not be opened or read.
    public static let deviceFailed = Self(name: "deviceFailed")
}

/// Cryptographically secure random bytes from the kernel, SecRandom's source.
///
/// Uses `getrandom(2)` with no flags: it blocks only until the kernel's pool is first initialised, never
/// afterwards, needs no file descriptor and works in a chroot. Short reads (above 32 MiB, or on a signal)
/// are continued; `EINTR` is retried. Only where the kernel has no `getrandom` (`ENOSYS`, before Linux 3.17)
/// does it read `/dev/urandom`, through one descriptor shared by the process. It never returns a buffer
/// that is not completely filled: it throws instead.
public enum EntropySource {
    /// Fills `buffer` completely with random bytes.
    /// - Throws: ``EntropyError`` when the kernel refuses; the buffer's contents are then unspecified and
    ///   must not be used.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard var next = buffer.baseAddress, buffer.count > 0 else { return }
        var remaining = buffer.count
        while remaining > 0 {
            let got = systemGetrandom(next, remaining)
            if got > 0 {
                next += got
                remaining -= got
                continue
            }
            let error = got == 0 ? EIO : Glibc.errno
            switch error {
            case EINTR, EAGAIN: continue
            case ENOSYS: return try DeviceFallback.shared.fill(UnsafeMutableRawBufferPointer(start: next, count: remaining))
            default:
                throw EntropyError(code: .systemCallFailed, reason: "getrandom failed", errno: error)
            }
        }
    }

    /// `count` random bytes.
    public static func bytes(count: Int) throws -> [UInt8] {
        precondition(count >= 0, "a byte count is never negative")
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBytes { try fill($0) }
        return bytes
    }

    /// The system call; a seam for the tests, which bind it to simulate short reads, EINTR and ENOSYS.
    /// Task-local, so a simulation reaches only the task that binds it, never code running beside it.
    @TaskLocal static var systemGetrandom: @Sendable (UnsafeMutableRawPointer, Int) -> Int = { pointer, count in
        cgetrandom(pointer, count)
    }
}

/// The `/dev/urandom` fallback for kernels without `getrandom`: one descriptor for the whole process,
/// opened on first use with `O_CLOEXEC`.
final class DeviceFallback: Sendable {
    static let shared = DeviceFallback()
    private let descriptor = Mutex<Int32>(-1)

    /// The shared descriptor, -1 before first use (for the tests).
    var openDescriptor: Int32 { descriptor.withLock { $0 } }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        let fd = try descriptor.withLock { fd -> Int32 in
            if fd < 0 {
                repeat { fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC) } while fd < 0 && Glibc.errno == EINTR
                if fd < 0 {
                    throw EntropyError(code: .deviceFailed, reason: "cannot open /dev/urandom", errno: Glibc.errno)
                }
            }
            return fd
        }
        var next = buffer.baseAddress!  // !: callers pass a non-empty buffer
        var remaining = buffer.count
        while remaining > 0 {
            let got = read(fd, next, remaining)
            if got > 0 {
                next += got
                remaining -= got
            } else if got < 0 && Glibc.errno == EINTR {
                continue
            } else {
                throw EntropyError(
                    code: .deviceFailed, reason: "reading /dev/urandom failed", errno: got == 0 ? EIO : Glibc.errno)
            }
        }
    }
}
