import CryptoContract
import CryptoDispatcher
import Foundation
import KernelBackend
import Synchronization

/// The adaptive scenario: AES-128-CBC encryption at a few sizes through a run whose load changes on a schedule the
/// benchmark controls — quiet, then the engine busy (other tenants' requests queued on it), then the CPU busy (spinning
/// threads: software slower), then quiet again — for the strategies taking turns: software and the kernel forced
/// (their best, phase by phase, is the oracle), the static thresholds of the persisted calibration, the adaptive
/// dispatcher, and the kernel forced again: the control, which says how far the run can tell two strategies apart.
enum AdaptiveScenario {
    enum Phase: String, Codable, CaseIterable {
        case quiet, engineBusy = "engine-busy", cpuBusy = "cpu-busy", quietAgain = "quiet-again"
    }

    enum Strategy: String, Codable, CaseIterable {
        case software, kernel
        case staticThresholds = "static"
        case adaptive
        /// The kernel forced again, beside the first: what the two measure differently is the run's own error.
        case control = "kernel-again"
    }

    /// One time bin of one strategy's run.
    struct Bin: Codable {
        let seconds: Double
        let mbPerS: Double
        /// The share of the bin's calls the engine served.
        let engineShare: Double
    }

    struct PhaseResult: Codable {
        let phase: Phase
        /// MB/s once settled: after the first max(200 ms, 2,000 calls) of the phase, at most half of it.
        let mbPerS: Double
        let calls: Int
        let engineShare: Double
        /// What the dispatcher had learned a call costs at the phase's end, backend name → nanoseconds (adaptive only).
        let learned: [String: Double]?
    }

    struct Run: Codable {
        let size: Int
        let strategy: Strategy
        let phases: [PhaseResult]
        let bins: [Bin]
    }

    /// A size and phase: the strategies' settled MB/s, the oracle's (the better forced backend), and the adaptive
    /// dispatcher's exploration: its share of calls on the slower backend and the time that cost, where one backend
    /// is at least twice the other.
    struct Row: Codable {
        let size: Int
        let phase: Phase
        let staticMBPerS: Double
        let adaptiveMBPerS: Double
        let oracleMBPerS: Double
        let oracleBackend: String
        var adaptiveOverOracle: Double { oracleMBPerS > 0 ? adaptiveMBPerS / oracleMBPerS : .nan }
        var staticOverOracle: Double { oracleMBPerS > 0 ? staticMBPerS / oracleMBPerS : .nan }
        /// The kernel forced twice: the lower of their ratio and its inverse (1: the run measures the same strategy
        /// alike twice).
        let control: Double
        /// The time the adaptive dispatcher spent on the slower backend, as a share of the phase; nil where the
        /// backends are within 2x of each other.
        let explorationCost: Double?
    }

    struct Report: Codable {
        let lane: String?
        let phaseSeconds: Double
        let runs: [Run]
        let rows: [Row]
    }

    static let route = Route.cipher(.aes128, .cbc, .encrypt)!
    static let spec = CipherSpec(.aes128, .cbc, padding: .none)

    static func run(sizes: [Int], phase: Duration, profile: DispatchProfile?, lane: String?) -> Report {
        var runs: [Run] = []
        for size in sizes {
            print("scenario: \(formatSize(size))")
            runs += run(size: size, phase: phase, profile: profile)
        }
        return Report(lane: lane, phaseSeconds: phase.seconds, runs: runs, rows: rows(runs))
    }

    /// What one strategy did in a stretch of time: calls, bytes, its own running time, the engine's calls.
    private struct Tally {
        var calls = 0
        var seconds = 0.0
        var engine = 0
        mutating func add(_ other: Tally) {
            calls += other.calls
            seconds += other.seconds
            engine += other.engine
        }
    }

    /// A strategy's own thread, which runs one slice of calls when told to and reports it. Each strategy has its own
    /// thread so that what the scheduler remembers of one (software's CPU-bound slices, which make the next waits of
    /// the thread that ran them wake late on a busy CPU) does not fall on whichever strategy runs next.
    private final class Runner: @unchecked Sendable {
        // @unchecked: `tally` and `stopping` are written before `go` is signalled or by the runner's thread before
        // `done` is, and read only after the other side's wait returned.
        private let go = DispatchSemaphore(value: 0)
        private let done = DispatchSemaphore(value: 0)
        private var tally = Tally()
        private var stopping = false

        init(_ dispatcher: Dispatcher, size: Int) {
            Thread.detachNewThread { [self] in
                let key = [UInt8](repeating: 0x42, count: 16), iv = [UInt8](repeating: 0x24, count: 16)
                let input = [UInt8](repeating: 0x5a, count: size)
                var output = [UInt8](repeating: 0, count: size)
                while true {
                    go.wait()
                    if stopping { break }
                    let engineBefore = dispatcher.counters.count(.kernel, route)
                    let sliceStart = Date()
                    var tally = Tally()
                    repeat {
                        key.withUnsafeBytes { key in
                            iv.withUnsafeBytes { iv in
                                input.withUnsafeBytes { input in
                                    output.withUnsafeMutableBytes { output in
                                        _ = try? dispatcher.crypt(.encrypt, spec, key: key, iv: iv, input: input, output: output)
                                    }
                                }
                            }
                        }
                        tally.calls += 1
                    } while Date().timeIntervalSince(sliceStart) < slice
                    tally.seconds = Date().timeIntervalSince(sliceStart)
                    tally.engine = dispatcher.counters.count(.kernel, route) - engineBefore
                    self.tally = tally
                    done.signal()
                }
                done.signal()
            }
        }

        /// Runs one slice on the runner's thread and waits for it.
        func runSlice() -> Tally {
            go.signal()
            done.wait()
            return tally
        }

        /// Ends the runner's thread.
        func stop() {
            stopping = true
            go.signal()
            done.wait()
        }
    }

    /// The strategies through the four phases at one size. Within a phase they take turns in slices of about
    /// ``slice`` (at least one call each), each with its own dispatcher, model and thread, so that the load and the
    /// host's drift fall on all of them alike; the next turn is the strategy that has run least in the phase (ties in
    /// a random order), so that each gets about the same time, and one whose calls are slow (software at 1 MiB on a
    /// busy CPU) does not leave the others a handful of calls each. A strategy's throughput is its bytes over its own
    /// running time.
    private static func run(size: Int, phase: Duration, profile: DispatchProfile?) -> [Run] {
        let dispatchers: [(Strategy, Dispatcher)] = Strategy.allCases.map { strategy in
            switch strategy {
            case .software: (strategy, Dispatcher(DispatchConfiguration(policy: .software)))
            case .kernel: (strategy, Dispatcher(DispatchConfiguration(policy: .kernel)))
            case .staticThresholds: (strategy, Dispatcher(DispatchConfiguration(profile: profile, adaptive: false)))
            case .adaptive: (strategy, Dispatcher(DispatchConfiguration(profile: profile)))
            case .control: (strategy, Dispatcher(DispatchConfiguration(policy: .kernel)))
            }
        }
        let runners = dispatchers.map { Runner($0.1, size: size) }
        defer { for runner in runners { runner.stop() } }
        let binSeconds = phase.seconds / 10
        var bins = [[Bin]](repeating: [], count: dispatchers.count)
        var phases = [[PhaseResult]](repeating: [], count: dispatchers.count)
        let start = Date()
        for current in Phase.allCases {
            let load = Load(current)
            let phaseStart = Date().timeIntervalSince(start)
            var settled = [Tally](repeating: Tally(), count: dispatchers.count)
            var inPhase = settled
            var bin = settled
            var binStart = phaseStart
            while true {
                let now = Date().timeIntervalSince(start)
                if now >= binStart + binSeconds || now >= phaseStart + phase.seconds {
                    for index in dispatchers.indices {
                        let tally = bin[index]
                        bins[index].append(
                            Bin(
                                seconds: binStart, mbPerS: tally.seconds > 0 ? Double(tally.calls * size) / tally.seconds / 1e6 : 0,
                                engineShare: tally.calls > 0 ? Double(tally.engine) / Double(tally.calls) : 0))
                    }
                    (bin, binStart) = ([Tally](repeating: Tally(), count: dispatchers.count), now)
                }
                if now >= phaseStart + phase.seconds { break }
                do {
                    let index = dispatchers.indices.shuffled().min { inPhase[$0].seconds < inPhase[$1].seconds }!
                    let tally = runners[index].runSlice()
                    let elapsed = now - phaseStart
                    // Settled after max(200 ms, 2,000 calls) of the phase, at most half of it.
                    if elapsed >= 0.2 && inPhase[index].calls >= 2000 || elapsed >= phase.seconds / 2 { settled[index].add(tally) }
                    inPhase[index].add(tally)
                    bin[index].add(tally)
                }
            }
            load.stop()
            for index in dispatchers.indices {
                let tally = settled[index]
                phases[index].append(
                    PhaseResult(
                        phase: current, mbPerS: tally.seconds > 0 ? Double(tally.calls * size) / tally.seconds / 1e6 : 0,
                        calls: inPhase[index].calls, engineShare: tally.calls > 0 ? Double(tally.engine) / Double(tally.calls) : 0,
                        learned: dispatchers[index].0 == .adaptive ? learned(dispatchers[index].1, size: size) : nil))
            }
        }
        return dispatchers.enumerated().map { index, entry in
            Run(size: size, strategy: entry.0, phases: phases[index], bins: bins[index])
        }
    }

    private static func learned(_ dispatcher: Dispatcher, size: Int) -> [String: Double] {
        var costs: [String: Double] = [:]
        for backend in [BackendKind.software, .kernel] { costs[backend.name] = dispatcher.learnedCost(route, size: size, on: backend) }
        return costs
    }

    /// How long a strategy runs before the next takes its turn.
    static let slice = 0.02

    private static func rows(_ runs: [Run]) -> [Row] {
        var rows: [Row] = []
        for size in Set(runs.map(\.size)).sorted() {
            func phaseResult(_ strategy: Strategy, _ phase: Phase) -> PhaseResult? {
                runs.first { $0.size == size && $0.strategy == strategy }?.phases.first { $0.phase == phase }
            }
            for phase in Phase.allCases {
                guard let software = phaseResult(.software, phase), let kernel = phaseResult(.kernel, phase),
                    let fixed = phaseResult(.staticThresholds, phase), let adaptive = phaseResult(.adaptive, phase),
                    let control = phaseResult(.control, phase)
                else { continue }
                let best = max(software.mbPerS, kernel.mbPerS), worst = min(software.mbPerS, kernel.mbPerS)
                let engineBest = kernel.mbPerS >= software.mbPerS
                // The share of calls on the slower backend, each costing (best / worst - 1) calls' time more.
                let slowShare = engineBest ? 1 - adaptive.engineShare : adaptive.engineShare
                let cost = worst > 0 && best / worst >= 2 ? slowShare * (best / worst - 1) / (1 + slowShare * (best / worst - 1)) : nil
                rows.append(
                    Row(
                        size: size, phase: phase, staticMBPerS: fixed.mbPerS, adaptiveMBPerS: adaptive.mbPerS, oracleMBPerS: best,
                        oracleBackend: engineBest ? "kernel" : "software",
                        control: kernel.mbPerS > 0 && control.mbPerS > 0 ? min(kernel.mbPerS / control.mbPerS, control.mbPerS / kernel.mbPerS) : 0,
                        explorationCost: cost))
            }
        }
        return rows
    }

    /// The load of a phase: tenants keeping the engine busy with 256 KiB requests of their own, or spinning threads,
    /// two per CPU, keeping the CPUs busy. Stopped (and joined) by ``stop()``.
    final class Load: @unchecked Sendable {
        // @unchecked: `running` is atomic; the group is only waited on.
        private let running = Atomic<Bool>(true)
        private let group = DispatchGroup()

        init(_ phase: Phase) {
            switch phase {
            case .quiet, .quietAgain: break
            case .engineBusy:
                let kernel = KernelBackend()
                for tenant in 0..<2 {
                    start {
                        let data = [UInt8](repeating: UInt8(tenant), count: 256 * 1024)
                        let key = [UInt8](repeating: 7, count: 16)
                        while self.running.load(ordering: .relaxed) { _ = try? kernel.crypt(.encrypt, AdaptiveScenario.spec, key: key, iv: key, data) }
                    }
                }
            case .cpuBusy:
                for _ in 0..<(2 * ProcessInfo.processInfo.activeProcessorCount) {
                    start {
                        var value: UInt64 = 1
                        while self.running.load(ordering: .relaxed) {
                            for _ in 0..<10_000 { value = value &* 6_364_136_223_846_793_005 &+ 1 }
                        }
                        if value == 0 { print("") }
                    }
                }
            }
        }

        private func start(_ body: @escaping @Sendable () -> Void) {
            group.enter()
            Thread.detachNewThread {
                body()
                self.group.leave()
            }
        }

        func stop() {
            running.store(false, ordering: .relaxed)
            group.wait()
        }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension AdaptiveScenario.Report {
    /// The adaptive dispatcher's target: at least this share of the oracle's throughput in every settled phase.
    static let target = 0.9
    /// Its exploration's: at most this share of the time where one backend is at least twice the other.
    static let explorationTarget = 0.02
    /// The control's: a phase where the kernel forced twice measures further apart than this cannot tell 0.9 of the
    /// oracle from 1.0 (half the target's margin is the run's own error); its verdicts are not judged.
    static let controlTarget = 0.95

    var table: String {
        var lines = ["adaptive scenario (AES-128-CBC encryption, MB/s once settled; oracle: the better forced backend of the phase)"]
        lines.append("size      phase         static  adaptive    oracle (backend)   static/oracle  adaptive/oracle  exploration  a/a")
        for row in rows {
            let judged = row.control >= Self.controlTarget
            let verdict = !judged ? "----" : row.adaptiveOverOracle >= Self.target ? "PASS" : "MISS"
            let exploration = row.explorationCost.map { String(format: "%4.1f%%     ", $0 * 100) } ?? "   -     "
            lines.append(
                formatSize(row.size).padding(toLength: 10, withPad: " ", startingAt: 0)
                    + row.phase.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
                    + String(format: "%8.1f  %8.1f  %8.1f (%@)  %13.2f  %11.2f %@  %@  %.2f", row.staticMBPerS, row.adaptiveMBPerS, row.oracleMBPerS,
                        row.oracleBackend.padding(toLength: 8, withPad: " ", startingAt: 0), row.staticOverOracle, row.adaptiveOverOracle, verdict,
                        exploration, row.control))
        }
        let judged = rows.filter { $0.control >= Self.controlTarget }
        for size in Set(rows.map(\.size)).sorted() {
            let phases = judged.filter { $0.size == size && $0.explorationCost != nil }
            guard !phases.isEmpty else { continue }
            let share = phases.compactMap(\.explorationCost).reduce(0, +) / Double(phases.count)
            lines.append(
                "exploration at \(formatSize(size)), over the \(phases.count) judged phases where one backend is >= 2x the other: "
                    + String(format: "%.1f%% %@", share * 100, share <= Self.explorationTarget ? "PASS" : "MISS"))
        }
        lines.append(
            "targets: adaptive/oracle >= \(Self.target) in every phase; exploration <= \(Int(Self.explorationTarget * 100))% where one backend is >= 2x the other, over the run (one probe of a backend ten times dearer is a few percent of one phase's settled time, a hundred times its excess apart); static is printed beside, not judged")
        lines.append(
            "a/a: the kernel forced twice, the lower of their ratio and its inverse; a phase below \(Self.controlTarget) is not judged (----): the run's own error there is half the target's margin or more. Judged: \(judged.count) of \(rows.count) phases, \(judged.filter { $0.adaptiveOverOracle >= Self.target }.count) pass")
        return lines.joined(separator: "\n")
    }

    /// Throughput over time per strategy, one panel per size, the phases shaded, and under each panel the adaptive
    /// dispatcher's route: the share of each bin's calls the engine served.
    func svg() -> String {
        let sizes = Set(runs.map(\.size)).sorted()
        let width = 900.0, panel = 220.0, strip = 14.0, margin = 60.0, gap = 70.0
        let height = margin + Double(sizes.count) * (panel + strip + gap)
        let colors: [AdaptiveScenario.Strategy: (String, String)] = [
            .software: ("#9e9e9e", "4 3"), .kernel: ("#d62728", "4 3"), .staticThresholds: ("#ff7f0e", ""), .adaptive: ("#1f77b4", ""),
        ]
        let shades = ["#ffffff", "#fde0dd", "#deebf7", "#ffffff"]
        let total = phaseSeconds * Double(AdaptiveScenario.Phase.allCases.count)
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width + 2 * margin))" height="\(Int(height))" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(margin)" y="22" font-size="14">Adaptive dispatch\(lane.map { " (\($0))" } ?? ""): AES-128-CBC encryption, MB/s over time; phases quiet, engine busy, CPU busy, quiet</text>

            """
        for (index, size) in sizes.enumerated() {
            let top = margin + Double(index) * (panel + strip + gap)
            let sizeRuns = runs.filter { $0.size == size }
            let peak = max(sizeRuns.flatMap { $0.bins.map(\.mbPerS) }.max() ?? 1, 0.001) * 1.1
            func x(_ seconds: Double) -> Double { margin + min(seconds / total, 1) * width }
            func y(_ speed: Double) -> Double { top + panel - speed / peak * panel }
            for (phaseIndex, phase) in AdaptiveScenario.Phase.allCases.enumerated() {
                let left = x(Double(phaseIndex) * phaseSeconds)
                out += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(width / 4)\" height=\"\(panel)\" fill=\"\(shades[phaseIndex])\"/>\n"
                out += "<text x=\"\(left + 4)\" y=\"\(top + 12)\" fill=\"#555\">\(phase.rawValue)</text>\n"
            }
            out += "<rect x=\"\(margin)\" y=\"\(top)\" width=\"\(width)\" height=\"\(panel)\" fill=\"none\" stroke=\"#999\"/>\n"
            out += "<text x=\"\(margin)\" y=\"\(top - 8)\" font-size=\"13\">\(formatSize(size)) calls (MB/s, linear; top \(String(format: "%.1f", peak)))</text>\n"
            for run in sizeRuns {
                guard let (color, dash) = colors[run.strategy], !run.bins.isEmpty else { continue }
                let points = run.bins.map { String(format: "%.1f,%.1f", x($0.seconds), y($0.mbPerS)) }.joined(separator: " ")
                let width = run.strategy == .adaptive ? 2.5 : 1.5
                out += "<polyline points=\"\(points)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"\(width)\"\(dash.isEmpty ? "" : " stroke-dasharray=\"\(dash)\"")/>\n"
            }
            // The adaptive dispatcher's route: white all software, dark blue all engine.
            let stripTop = top + panel + 6
            if let adaptive = sizeRuns.first(where: { $0.strategy == .adaptive }) {
                for (binIndex, bin) in adaptive.bins.enumerated() {
                    let next = binIndex + 1 < adaptive.bins.count ? adaptive.bins[binIndex + 1].seconds : bin.seconds + phaseSeconds / 10
                    out += String(
                        format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#1f77b4\" fill-opacity=\"%.2f\"/>\n",
                        x(bin.seconds), stripTop, max(x(next) - x(bin.seconds), 0.5), strip, bin.engineShare)
                }
            }
            out += "<rect x=\"\(margin)\" y=\"\(stripTop)\" width=\"\(width)\" height=\"\(strip)\" fill=\"none\" stroke=\"#999\"/>\n"
            out += "<text x=\"\(margin)\" y=\"\(stripTop + strip + 13)\" fill=\"#555\">adaptive's route: blue = engine, white = software</text>\n"
        }
        var legend = margin + 330
        for strategy in AdaptiveScenario.Strategy.allCases {
            guard let (color, dash) = colors[strategy] else { continue }
            out += "<line x1=\"\(legend)\" y1=\"\(height - 22)\" x2=\"\(legend + 24)\" y2=\"\(height - 22)\" stroke=\"\(color)\" stroke-width=\"2\"\(dash.isEmpty ? "" : " stroke-dasharray=\"\(dash)\"")/>\n"
            out += "<text x=\"\(legend + 28)\" y=\"\(height - 18)\">\(strategy == .staticThresholds ? "static thresholds" : strategy == .software || strategy == .kernel ? "\(strategy.rawValue) forced" : "adaptive")</text>\n"
            legend += 130
        }
        out += "<text x=\"\(margin)\" y=\"\(height - 18)\" fill=\"#555\">oracle = the better forced line</text>\n"
        return out + "</svg>\n"
    }
}
