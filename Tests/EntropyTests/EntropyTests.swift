import Glibc
import Testing

@testable import Entropy

/// The entropy source: real getrandom, and the error paths through a simulated system call. Serialized:
/// the simulated call replaces a process-wide seam.
@Suite("Entropy source", .serialized)
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
        for start in stride(from: 0, to: big.count, by: 1 << 20) {
            let stretch = big[start..<start + (1 << 20)]
            #expect(stretch.contains { $0 != 0 })
        }
        let zeros = big.suffix(1 << 20).filter { $0 == 0 }.count
        #expect(abs(zeros - (1 << 20) / 256) < 1000, "byte distribution far from uniform: \(zeros) zeros")
    }

    @Test("short reads and EINTR are continued until the buffer is full")
    func shortReadsAndInterrupts() throws {
        let saved = EntropySource.systemGetrandom
        defer { EntropySource.systemGetrandom = saved }
        nonisolated(unsafe) var calls = 0
        EntropySource.systemGetrandom = { pointer, count in
            calls += 1
            if calls % 2 == 0 {
                errno = EINTR
                return -1
            }
            let chunk = min(count, 3)
            pointer.initializeMemory(as: UInt8.self, repeating: 0xab, count: chunk)
            return chunk
        }
        let bytes = try EntropySource.bytes(count: 10)
        #expect(bytes == [UInt8](repeating: 0xab, count: 10))
        #expect(calls == 7)  // 4 reads of 3,3,3,1 with 3 interruptions between
    }

    @Test("a refusal throws instead of returning unfilled bytes")
    func failure() {
        let saved = EntropySource.systemGetrandom
        defer { EntropySource.systemGetrandom = saved }
        EntropySource.systemGetrandom = { _, _ in
            errno = EFAULT
            return -1
        }
        do {
            _ = try EntropySource.bytes(count: 8)
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
        let saved = EntropySource.systemGetrandom
        defer { EntropySource.systemGetrandom = saved }
        EntropySource.systemGetrandom = { _, _ in
            errno = ENOSYS
            return -1
        }
        let openBefore = openDescriptorCount()
        let a = try EntropySource.bytes(count: 64)
        let afterFirst = openDescriptorCount()
        let b = try EntropySource.bytes(count: 64)
        #expect(a != b)
        #expect(afterFirst <= openBefore + 1)
        #expect(openDescriptorCount() == afterFirst)
    }

    private func openDescriptorCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while readdir(directory) != nil { count += 1 }
        return count
    }
}
