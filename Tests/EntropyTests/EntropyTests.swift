import Glibc
import Synchronization
import Testing

@testable import Entropy

/// The entropy source: real getrandom, and the error paths through a simulated system call bound to the
/// test's own task (other suites running at the same time keep the real one).
@Suite("Entropy source")
struct EntropyTests {
    @Test("fills buffers of every size completely, large ones too")
    func fills() throws {
        #expect(try EntropySource.bytes(count: 0) == [])
        for count in [1, 16, 32, 4096] {
            let a = try EntropySource.bytes(count: count)
            let b = try EntropySource.bytes(count: count)
            #expect(a.count == count)
            if count >= 16 { #expect(a != b) }
        }
        // Above getrandom's 32 MiB per call: the loop must continue after the short read.
        let big = try EntropySource.bytes(count: 40 << 20)
        // Every 1 MiB stretch is filled: a run of 64 zero bytes in random data has probability ~2^-512.
        // memcmp against zeros keeps this fast in a debug build under an emulated CPU.
        let zeroStretch = [UInt8](repeating: 0, count: 1 << 20)
        big.withUnsafeBytes { bytes in
            for start in stride(from: 0, to: bytes.count, by: 1 << 20) {
                #expect(memcmp(bytes.baseAddress! + start, zeroStretch, 1 << 20) != 0, "stretch at \(start) is zero")
            }
        }
        let zeros = big.suffix(1 << 20).withUnsafeBytes { tail in
            var zeros = 0
            for byte in tail where byte == 0 { zeros += 1 }
            return zeros
        }
        #expect(abs(zeros - (1 << 20) / 256) < 1000, "byte distribution far from uniform: \(zeros) zeros")
    }

    @Test("short reads and EINTR are continued until the buffer is full")
    func shortReadsAndInterrupts() throws {
        let calls = CallCounter()
        let simulated: @Sendable (UnsafeMutableRawPointer, Int) -> Int = { pointer, count in
            if calls.next() % 2 == 0 {
                errno = EINTR
                return -1
            }
            let chunk = min(count, 3)
            pointer.initializeMemory(as: UInt8.self, repeating: 0xab, count: chunk)
            return chunk
        }
        let bytes = try EntropySource.$systemGetrandom.withValue(simulated) { try EntropySource.bytes(count: 10) }
        #expect(bytes == [UInt8](repeating: 0xab, count: 10))
        #expect(calls.count == 7)  // 4 reads of 3,3,3,1 with 3 interruptions between
        // Outside the binding the real system call is back.
        #expect(try EntropySource.bytes(count: 16) != [UInt8](repeating: 0xab, count: 16))
    }

    @Test("a refusal throws instead of returning unfilled bytes")
    func failure() {
        do {
            _ = try EntropySource.$systemGetrandom.withValue({ _, _ in
                errno = EFAULT
                return -1
            }) { try EntropySource.bytes(count: 8) }
            Issue.record("no error")
        } catch let error as EntropyError {
            #expect(error.code == .systemCallFailed)
            #expect(error.errno == EFAULT)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("without getrandom (ENOSYS) one shared /dev/urandom descriptor is used")
    func deviceFallback() throws {
        let refused: @Sendable (UnsafeMutableRawPointer, Int) -> Int = { _, _ in
            errno = ENOSYS
            return -1
        }
        let (a, b, first, second) = try EntropySource.$systemGetrandom.withValue(refused) {
            let a = try EntropySource.bytes(count: 64)
            let first = DeviceFallback.shared.openDescriptor
            let b = try EntropySource.bytes(count: 64)
            return (a, b, first, DeviceFallback.shared.openDescriptor)
        }
        #expect(a != b)
        #expect(first >= 0)
        #expect(second == first, "a second read opened another descriptor")
        // The descriptor is /dev/urandom, close-on-exec.
        var target = [UInt8](repeating: 0, count: 64)
        let length = readlink("/proc/self/fd/\(first)", &target, target.count)
        #expect(length > 0 && String(decoding: target.prefix(max(0, length)), as: UTF8.self) == "/dev/urandom")
        #expect(fcntl(first, F_GETFD) & FD_CLOEXEC != 0)
    }
}

/// Counts calls of a simulated system call from a `@Sendable` closure.
final class CallCounter: Sendable {
    private let value = Mutex(0)
    /// Counts one call and returns the new count.
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
    var count: Int { value.withLock { $0 } }
}
