import ArgumentParser
import CryptoContract
import CryptoDispatcher
import Foundation
import KernelBackend
import SoftwareBackend

/// `secbench`: compares the software backend, the kernel backend, the dispatcher and two C baselines on this
/// machine, for the operations the phone's engine offloaded, from 16 B to 4 MiB.
@main
struct SecBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secbench",
        abstract: "Compare the crypto backends (OpenSSL, AF_ALG, the dispatcher) against C baselines on this machine.")

    @Flag(help: "A short sweep: fewer sizes, less time per point.")
    var quick = false

    @Option(help: "Write every measurement as JSON to this file.")
    var json: String?

    @Option(help: "Draw throughput against size as SVG into this file.")
    var svg: String?

    @Flag(help: "Measure the software/kernel crossovers, persist the dispatcher's profile and say what was chosen.")
    var calibrate = false

    @Flag(
        help: """
            Calibrate first (as --calibrate: measure, persist, apply), then run the sweep with the calibrated \
            dispatcher; the report checks each threshold against the crossover the sweep measures.
            """)
    var withCalibration = false

    @Flag(
        help: """
            After the backend comparison, the adaptive scenario where an engine serves AES-CBC: load that changes on a schedule \
            (engine busy, CPU busy, quiet), the static thresholds, the adaptive dispatcher and the oracle compared; \
            written beside --json and --svg as <name>-adaptive.json and <name>-adaptive.svg.
            """)
    var scenario = false

    @Option(help: "Seconds per phase of the adaptive scenario (default 8: each of its five strategies gets a fifth).")
    var scenarioPhase: Double = 8

    @Option(
        help: """
            Write the results page (Markdown) to this file from the JSON documents given with --from, copying each \
            one's picture beside it, and do nothing else.
            """)
    var resultsPage: String?

    @Option(parsing: .upToNextOption, help: "The benchmarks' JSON documents for --results-page.")
    var from: [String] = []

    @Option(help: "Thread counts of the concurrency sweep (comma-separated; 0 for none).")
    var threads: String = "1,2,4,8"

    @Option(help: "Operations of the concurrency sweep (comma-separated names).")
    var concurrencyOperations: String = "aes-128-cbc-encrypt"

    @Option(help: "Sizes of the concurrency sweep in bytes (comma-separated).")
    var concurrencySizes: String = "4096,65536"

    @Option(help: "Milliseconds of measurement per (operation, size, backend).")
    var budget: Int?

    @Option(help: "Only these operations (comma-separated names; with --keys: rsa-sign, ..., ec-verify, no timings).")
    var operations: String?

    @Option(help: "Only these sizes in bytes (comma-separated).")
    var sizes: String?

    @Option(
        help: ArgumentHelp(
            "Time only these backends (comma-separated: software, kernel, dispatch, openssl-c, kcapi-c, software-fresh-key, openssl-c-fresh-key, software-control).",
            discussion: "Every backend still runs once for the cross-check of their bytes. One backend per process is how a profiler or callgrind sees a single path."))
    var backends: String?

    @Flag(
        help: """
            Run only the keychain benchmark: generic passwords added, found, updated and deleted, against plain \
            SQLite with one AES-256-GCM operation per item.
            """)
    var keychain = false

    @Flag(
        help: """
            Run only the public-key benchmark: RSA-2048 and EC P-256 through the Security API against OpenSSL \
            EVP_PKEY in C, key generation and PKCS#12 import timed.
            """)
    var keys = false

    @Flag(
        help: """
            Run only the trust benchmark: a three-certificate chain under the SSL policy through SecTrust and \
            TrustEvaluator against X509_verify_cert + X509_check_host in C; the first system-anchor evaluation timed.
            """)
    var trust = false

    @Flag(
        help: """
            Run only the TLS benchmark: connections (resumption off and on) and a bulk transfer through TLSConnection \
            against a C libssl client, both from one openssl s_server on loopback.
            """)
    var tls = false

    @Option(help: "Items in the keychain benchmark (default 10000, 1000 with --quick).")
    var keychainItems: Int?

    func validate() throws {
        if let keychainItems, keychainItems < 1 { throw ValidationError("--keychain-items must be at least 1") }
        if let backends, let unknown = backends.split(separator: ",").first(where: { BenchBackend(rawValue: String($0)) == nil }) {
            throw ValidationError("--backends: no backend named \(unknown) (\(BenchBackend.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        if keychainItems != nil && !keychain { throw ValidationError("--keychain-items needs --keychain") }
        if calibrate && withCalibration { throw ValidationError("--calibrate and --with-calibration exclude each other") }
        if resultsPage != nil && from.isEmpty { throw ValidationError("--results-page needs the JSON documents in --from") }
        if scenario && (calibrate || keychain || keys || trust || tls) { throw ValidationError("--scenario follows the backend comparison only") }
        if !(scenarioPhase >= 0.5 && scenarioPhase <= 600) { throw ValidationError("--scenario-phase must be 0.5 to 600 seconds") }
        if keychain && (calibrate || svg != nil) {
            throw ValidationError("--keychain cannot be combined with --calibrate or --svg")
        }
        if [keys, keychain, trust, tls].filter({ $0 }).count > 1 || (keys || trust || tls) && (calibrate || svg != nil) {
            throw ValidationError("--keychain, --keys, --trust and --tls run alone, without --calibrate or --svg")
        }
    }

    func run() throws {
        if let resultsPage {
            try ResultsPage.write(to: resultsPage, from: from)
            return print("wrote \(resultsPage)")
        }
        if calibrate { return try runCalibration() }
        if keychain { return try runKeychain() }
        if keys { return try runKeys() }
        if trust { return try runTrust() }
        if tls { return try runTLS() }
        let sweep: [Int] = quick ? [16, 256, 4096, 65536, 1 << 20] : (0..<10).map { 16 << (2 * $0) }  // 16 B to 4 MiB
        let chosen: [Int]? = self.sizes.map { list in list.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 } }
        let sizes = chosen ?? sweep
        let budget = Duration.milliseconds(self.budget ?? (quick ? 15 : 40))
        let selected = operations.map { Set($0.split(separator: ",").map(String.init)) }
        let operations = BenchOperation.all.filter { selected?.contains($0.name) ?? true }
        Dispatcher.reportEnvironmentWarnings()
        var calibration: [Calibration.RouteResult] = []
        if withCalibration {
            calibration = try calibrateSharedDispatcher(budget: .milliseconds(self.budget ?? 30))
        }
        let machine = Machine.current(operations)
        print(machine.summary)

        var results: [Result] = []
        let progress = Progress(total: operations.count * sizes.count)
        for operation in operations {
            for size in sizes {
                progress.step("\(operation.name) \(formatSize(size))")
                results += try measure(operation, size: size, budget: budget, afalg: machine.afalg)
            }
        }
        progress.finish()

        let threadCounts = threads.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
        let concurrencyNames = Set(concurrencyOperations.split(separator: ",").map(String.init))
        var concurrency: [ConcurrencyResult] = []
        for operation in BenchOperation.all where concurrencyNames.contains(operation.name) && !threadCounts.isEmpty {
            for size in concurrencySizes.split(separator: ",").compactMap({ Int($0) }).filter({ $0 > 0 }) {
                concurrency += ConcurrencySweep.run(
                    operation, size: size, threads: threadCounts, afalg: machine.afalg, duration: max(budget * 8, ConcurrencySweep.window))
            }
        }

        let report = Report(
            machine: machine, operations: operations, sizes: sizes, results: results, concurrency: concurrency,
            calibration: calibration)
        print(report.table())
        print(report.cpuAndConcurrencyTables())
        print(report.targets())
        if let json { try report.json().write(to: URL(fileURLWithPath: json)) ; print("wrote \(json)") }
        if let svg { try Data(report.svg().utf8).write(to: URL(fileURLWithPath: svg)); print("wrote \(svg)") }
        if scenario { try runScenario(machine) }
    }

    /// The adaptive scenario, where an engine serves AES-CBC (with nothing to adapt between, it says so and stops).
    private func runScenario(_ machine: Machine) throws {
        let route = AdaptiveScenario.route
        guard Dispatcher().placement(of: route).isEngine else {
            print("adaptive scenario: skipped, \(route) runs on no engine here (\(Dispatcher().placement(of: route)))")
            return
        }
        let profile: DispatchProfile?
        if case .loaded(let loaded) = DispatchProfile.load(expecting: .current(for: Dispatcher.defaultBackends)) { profile = loaded } else { profile = nil }
        let sizes = self.sizes.map { $0.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 } } ?? [4096, 65536, 1 << 20]
        let report = AdaptiveScenario.run(
            sizes: sizes, phase: .milliseconds(Int(scenarioPhase * 1000)), profile: profile, lane: machine.engineLane)
        print(report.table)
        func beside(_ path: String, _ suffix: String) -> String {
            let url = URL(fileURLWithPath: path)
            return url.deletingPathExtension().path + "-adaptive." + (url.pathExtension.isEmpty ? suffix : url.pathExtension)
        }
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: beside(json, "json")))
            print("wrote \(beside(json, "json"))")
        }
        if let svg {
            try Data(report.svg().utf8).write(to: URL(fileURLWithPath: beside(svg, "svg")))
            print("wrote \(beside(svg, "svg"))")
        }
    }

    /// Measures every backend at one point, interleaved in passes so that drift on a shared machine hits
    /// them alike, after checking they all produce the same bytes.
    private func measure(_ operation: BenchOperation, size: Int, budget: Duration, afalg: Bool) throws -> [Result] {
        let point = BenchPoint(operation, size: size)
        var runners = [BenchRunner(.software, point.runner(SoftwareBackend()))]
        if afalg { runners.append(BenchRunner(.kernel, point.runner(KernelBackend()))) }
        runners.append(BenchRunner(.dispatch, point.runner(Dispatcher.shared)))
        // The harness's own error: the software backend again, through a runner of its own.
        runners.append(BenchRunner(.softwareControl, point.runner(SoftwareBackend())))
        var baselines: [CBaseline] = []
        for (backend, library) in [(BenchBackend.opensslC, "openssl"), (.kcapiC, "kcapi")] where backend == .opensslC || afalg {
            if let baseline = point.baselineRunner(library) {
                baselines.append(baseline)
                runners.append(BenchRunner(backend, baseline.run))
            }
        }
        if point.isKeyed, let baseline = point.baselineRunner("openssl") {
            baselines.append(baseline)
            runners.append(BenchRunner(.softwareFreshKey, point.runner(SoftwareBackend(), freshKeys: true)))
            runners.append(BenchRunner(.opensslCFreshKey, point.freshKeyBaselineRunner(baseline)))
        }
        // Same bytes from everyone, or the comparison means nothing.
        var reference: [UInt8]?
        for runner in runners {
            try runner.run()
            if let reference, point.result != reference {
                throw ValidationError("\(runner.backend.rawValue) gives different output for \(operation.name) at \(size) bytes")
            }
            reference = reference ?? point.result
        }
        // The fresh-key pair again under every key of its turn: the same bytes under each.
        if let software = runners.first(where: { $0.backend == .softwareFreshKey })?.run,
            let baseline = runners.first(where: { $0.backend == .opensslCFreshKey })?.run
        {
            for turn in 1...point.freshKeys.count {
                try software()
                let ours = point.result
                try baseline()
                guard point.result == ours else {
                    throw ValidationError("software gives different output for \(operation.name) at \(size) bytes under fresh key \(turn)")
                }
            }
        }
        let selected = backends.map { Set($0.split(separator: ",").map(String.init)) }
        let timed = runners.filter { selected?.contains($0.backend.rawValue) ?? true }
        // The dispatcher's row is its steady state: where it can route elsewhere (an engine serves the route), it
        // first serves the point untimed for as long as its model takes to correct a calibration taken on the wrong
        // side (a first probe waits for a hundred times its expected cost in the class's own calls; a point's timed
        // budget is shorter than that).
        if afalg, operation.runsOnEngine, let dispatch = timed.first(where: { $0.backend == .dispatch }) {
            let end = ContinuousClock.now + Self.dispatchSettle
            while ContinuousClock.now < end { try dispatch.run() }
        }
        // As many passes as the budget gives 5 ms each, from three to eight, and about nine batches a backend over
        // them. Many short passes put another tenant's burst of some tens of milliseconds in one pass of a backend,
        // not in a third of its samples; passes no shorter than 5 ms keep a batch (a fiftieth of a pass) at 100 µs or
        // more. `--quick` (15 ms a point, the engine lanes') gets three.
        let rounds = min(8, max(3, Int(budget / .milliseconds(5))))
        let minimumBatches = max(1, 9 / rounds)
        var samples: [BenchBackend: [Double]] = [:]
        // The calling process's CPU time over the timed calls: what a backend costs the CPU, engine or not.
        var cpu: [BenchBackend: (nanoseconds: Double, bytes: Double)] = [:]
        for _ in 0..<rounds {
            for runner in timed {
                let run = runner.run
                var calls = 0
                let before = processCPUNanoseconds()
                samples[runner.backend, default: []] +=
                    Timing.samples(budget: budget / rounds, minimumBatches: minimumBatches) {
                        calls += 1
                        try run()
                    } ?? []
                let used = processCPUNanoseconds() - before
                cpu[runner.backend, default: (0, 0)].nanoseconds += used
                cpu[runner.backend, default: (0, 0)].bytes += Double(calls * size)
            }
        }
        return timed.map(\.backend).map { backend in
            let nanoseconds = Timing.median(samples[backend] ?? [])
            let spent = cpu[backend] ?? (0, 0)
            return Result(
                op: operation.name, size: size, backend: backend.rawValue, nsPerOp: nanoseconds,
                mbPerS: Double(size) / nanoseconds * 1e3,
                // ns per byte is ms per MB (10^6 bytes, 10^6 ns).
                cpuMsPerMB: spent.bytes > 0 ? spent.nanoseconds / spent.bytes : nil)
        }
    }

    /// How long the dispatcher serves a point before its row is timed, where it has an offload backend to choose
    /// (the scenario's rule for a change, 200 ms, with room for a seed whose wrong side is far from the crossover).
    static let dispatchSettle = Duration.milliseconds(500)

    /// Calibrates ``Dispatcher/shared`` (persisting the profile) and prints what was measured and chosen.
    private func calibrateSharedDispatcher(budget: Duration) throws -> [Calibration.RouteResult] {
        print("calibrating \(Route.phoneEngine.map(\.name).joined(separator: ", ")) at \(Calibration.sizes.map(formatSize).joined(separator: " "))")
        let results = try Dispatcher.shared.calibrate(budget: budget)
        for result in results {
            let label = "\(result.backend.name)/\(result.route.name)".padding(toLength: 26, withPad: " ", startingAt: 0)
            print("\(label) threshold \(result.threshold.map(formatSize) ?? "never"): \(result.reason)")
            for point in result.points {
                let offload = point.offloadNanoseconds.map { String(format: "%10.0f ns", $0) } ?? "         -"
                print(String(format: "    %8@  software %10.0f ns  %@ %@", formatSize(point.size), point.softwareNanoseconds, result.backend.name, offload))
            }
            if let cost = result.cost, let softwareCost = result.softwareCost {
                print("    cost per call: \(result.backend.name) \(cost), software \(softwareCost)")
            }
        }
        print("wrote \(DispatchProfile.defaultLocation.path)")
        return results
    }

    private func runCalibration() throws {
        print(Machine.current(BenchOperation.all).summary)
        _ = try calibrateSharedDispatcher(budget: .milliseconds(self.budget ?? 30))
    }
}

/// One measurement, as written to JSON.
struct Result: Codable {
    let op: String
    let size: Int
    let backend: String
    let nsPerOp: Double
    let mbPerS: Double
    /// The process's CPU time per MB processed (10^6 bytes), in milliseconds.
    let cpuMsPerMB: Double?

    enum CodingKeys: String, CodingKey {
        case op, size, backend, nsPerOp = "ns_per_op", mbPerS = "mb_per_s", cpuMsPerMB = "cpu_ms_per_mb"
    }
}

/// The calling process's CPU time (user and system, every thread) in nanoseconds.
func processCPUNanoseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}

func formatSize(_ size: Int) -> String {
    if size >= 1 << 20 && size % (1 << 20) == 0 { return "\(size >> 20) MiB" }
    if size >= 1024 && size % 1024 == 0 { return "\(size >> 10) KiB" }
    return "\(size) B"
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
final class Progress {
    private let total: Int
    private var done = 0
    private let enabled = isatty(2) != 0

    init(total: Int) { self.total = total }

    func step(_ label: String) {
        guard enabled else { return }
        let width = 30
        let filled = total == 0 ? width : done * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(done * 100 / max(total, 1))% \(label)\u{1b}[K".utf8))
        done += 1
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1b}[K".utf8))
    }
}
