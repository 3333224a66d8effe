import CryptoContract
import CryptoDispatcher
import Foundation
import KernelBackend
import SoftwareBackend
import Synchronization

/// One point of the concurrency series, as written to JSON.
struct ConcurrencyResult: Codable {
    let op: String
    let size: Int
    let threads: Int
    let backend: String
    /// Bytes per second of all threads together, in MB/s.
    let aggregateMBPerS: Double
    /// The process's CPU time per MB processed, in milliseconds.
    let cpuMsPerMB: Double
    /// The dispatcher's: the share of its calls in the measured window that the engine served.
    let engineShare: Double?

    enum CodingKeys: String, CodingKey {
        case op, size, threads, backend, aggregateMBPerS = "aggregate_mb_per_s", cpuMsPerMB = "cpu_ms_per_mb"
        case engineShare = "engine_share"
    }
}

/// Several threads calling one backend at once, each on its own buffers: what an engine that is a queue gives
/// callers who keep several requests in flight (a thread each), against the CPU's cores.
enum ConcurrencySweep {
    static func run(
        _ operation: BenchOperation, size: Int, threads: [Int], afalg: Bool, duration: Duration
    ) -> [ConcurrencyResult] {
        var backends: [(BenchBackend, any CryptoBackend)] = [(.software, SoftwareBackend())]
        if afalg { backends.append((.kernel, KernelBackend())) }
        backends.append((.dispatch, Dispatcher.shared))
        // The kernel again, the dispatcher between its two runs: what the two measure differently is the run's error.
        if afalg { backends.append((.kernelControl, KernelBackend())) }
        var results: [ConcurrencyResult] = []
        for count in threads {
            // Interleaved passes, the median kept: drift on a shared machine hits every backend alike.
            var rounds: [BenchBackend: [(speed: Double, cpu: Double, engine: Double?)]] = [:]
            for _ in 0..<3 {
                for (name, backend) in backends {
                    let (calls, cpu, elapsed, engine) = measure(operation, size: size, threads: count, backend: backend, duration: duration)
                    let bytes = Double(calls * size)
                    let share = engine.map { calls > 0 ? min(Double($0) / Double(calls), 1) : 0 }
                    rounds[name, default: []].append((bytes / elapsed / 1e6, bytes > 0 ? cpu / bytes : .nan, share))
                }
            }
            for (name, _) in backends {
                let sorted = (rounds[name] ?? []).sorted { $0.speed < $1.speed }
                guard !sorted.isEmpty else { continue }
                let median = sorted[sorted.count / 2]
                results.append(
                    ConcurrencyResult(
                        op: operation.name, size: size, threads: count, backend: name.rawValue,
                        aggregateMBPerS: median.speed, cpuMsPerMB: median.cpu, engineShare: median.engine))
            }
        }
        return results
    }

    /// How long the threads run before the measured window opens: the adaptive dispatcher's model carries what it
    /// learned under the previous thread count, and its target is judged once settled (the scenario's rule: after
    /// 200 ms of a change); every backend gets the same lead.
    static let settle = Duration.milliseconds(200)
    /// The least measured window: long beside the adaptive dispatcher's probe interval, so that whether one probe
    /// falls in a window (a software burst at 64 KiB without AES instructions is tens of milliseconds) is not most
    /// of the difference between runs.
    static let window = Duration.milliseconds(500)

    /// Calls made by `threads` threads in `duration` after ``settle``, the process CPU time they took (ns), the
    /// wall time (s), and where `backend` is a dispatcher, how many calls of the window it sent to the kernel.
    private static func measure(
        _ operation: BenchOperation, size: Int, threads: Int, backend: any CryptoBackend, duration: Duration
    ) -> (calls: Int, cpuNanoseconds: Double, seconds: Double, engineCalls: Int?) {
        let dispatcher = backend as? Dispatcher
        func engineCalls() -> Int? { dispatcher?.counters.count(.kernel, operation.route) }
        final class Shared: Sendable {
            let calls = Atomic<Int>(0)
            /// Set when the measured window opens: each thread counts its calls from the first it starts after.
            let measuring = Atomic<Bool>(false)
            let stop = Atomic<Bool>(false)
        }
        let shared = Shared()
        let ready = DispatchSemaphore(value: 0)
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            let thread = Thread {
                let point = BenchPoint(operation, size: size)
                let run = point.runner(backend)
                try? run()  // warm: handles opened, contexts keyed
                ready.signal()
                start.wait()
                var mine = 0
                var before: Int?
                while !shared.stop.load(ordering: .relaxed) {
                    if before == nil, shared.measuring.load(ordering: .relaxed) { before = mine }
                    guard (try? run()) != nil else { break }
                    mine += 1
                }
                shared.calls.add(mine - (before ?? mine), ordering: .relaxed)
                done.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        for _ in 0..<threads { ready.wait() }
        for _ in 0..<threads { start.signal() }
        Thread.sleep(forTimeInterval: settle.seconds)
        let cpuBefore = processCPUNanoseconds()
        let clock = ContinuousClock()
        let began = clock.now
        let engineBefore = engineCalls()
        shared.measuring.store(true, ordering: .relaxed)
        Thread.sleep(forTimeInterval: duration.seconds)
        shared.stop.store(true, ordering: .relaxed)
        done.wait()
        let elapsed = clock.now - began
        let engine = engineCalls().map { $0 - (engineBefore ?? 0) }
        return (shared.calls.load(ordering: .relaxed), processCPUNanoseconds() - cpuBefore, Double(elapsed.nanoseconds) / 1e9, engine)
    }
}
