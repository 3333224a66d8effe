import CryptoContract
import CryptoDispatcher
import Foundation
import KernelBackend

/// What the results were measured on.
struct Machine: Codable {
    let cpu: String
    let kernel: String
    let afalg: Bool
    /// Why AF_ALG is unusable, when it is.
    let afalgReason: String?
    /// Operation -> the kernel driver serving it (from /proc/crypto).
    let drivers: [String: String]
    /// Operation -> where the dispatcher's kernel backend would run it (absent, CPU code, an engine).
    let placements: [String: String]
    /// The engine test lane this runs in (`SECURITYSERVICES_ENGINE_LANE`: engine-aesni, engine-noaes), if any.
    let engineLane: String?
    /// The CPU emulator this runs under, if any (`SECURITYSERVICES_EMULATION`, which the VM lanes set: `tcg`).
    let emulation: String?

    enum CodingKeys: String, CodingKey {
        case cpu, kernel, afalg, afalgReason = "afalg_reason", drivers, placements, engineLane = "engine_lane", emulation
    }

    static func current(_ operations: [BenchOperation]) -> Machine {
        let registry = KernelBackend.registry
        var drivers: [String: String] = [:]
        var placements: [String: String] = [:]
        for operation in operations {
            drivers[operation.name] = registry.driver(for: operation.kernelName) ?? "none"
            placements[operation.name] = Dispatcher.shared.placement(of: operation.route).description
        }
        let environment = ProcessInfo.processInfo.environment
        let lane = environment["SECURITYSERVICES_ENGINE_LANE"].flatMap { $0.isEmpty ? nil : $0 }
        return Machine(
            cpu: MachineInfo.cpuModel + (MachineInfo.cpuFeatures.isEmpty ? "" : " [\(MachineInfo.cpuFeatures)]"),
            kernel: MachineInfo.kernelRelease, afalg: KernelBackend.isAvailable,
            afalgReason: KernelBackend.unavailableReason, drivers: drivers, placements: placements, engineLane: lane,
            emulation: environment["SECURITYSERVICES_EMULATION"].flatMap { $0.isEmpty ? nil : $0 })
    }

    var summary: String {
        var lines = ["cpu: \(cpu)", "kernel: \(kernel)", "AF_ALG: " + (afalg ? "yes" : "no (\(afalgReason ?? "?"))")]
        if afalg {
            lines.append("kernel drivers: " + drivers.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))
            lines.append("kernel placements: " + placements.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))
        }
        if let engineLane { lines.append("engine lane: \(engineLane)") }
        if let emulation { lines.append("emulated CPU: \(emulation)") }
        return lines.joined(separator: "\n")
    }
}

struct Report {
    let machine: Machine
    let operations: [BenchOperation]
    let sizes: [Int]
    let results: [Result]
    let concurrency: [ConcurrencyResult]
    /// The calibration this run made first (`--with-calibration`), else empty.
    let calibration: [Calibration.RouteResult]

    private func speed(_ op: String, _ size: Int, _ backend: BenchBackend) -> Double? {
        results.first { $0.op == op && $0.size == size && $0.backend == backend.rawValue }?.mbPerS
    }

    /// The harness's a/a at a point: software timed twice, the lower of their ratio and its inverse (the control is as
    /// likely to come out faster as slower); nil where either was not measured.
    private func harnessAgreement(_ op: String, _ size: Int) -> Double? {
        guard let s = speed(op, size, .software), let c = speed(op, size, .softwareControl) else { return nil }
        return min(c / s, s / c)
    }

    /// The concurrency series' a/a at a point: the kernel run before and after the dispatcher, the lower of their
    /// ratio and its inverse; nil where either was not measured.
    private func kernelAgreement(_ op: String, _ size: Int, _ threads: Int) -> Double? {
        guard let k = aggregate(op, size, threads, .kernel), let c = aggregate(op, size, threads, .kernelControl) else {
            return nil
        }
        return min(c / k, k / c)
    }

    /// The dispatcher's choice at this point, as routing decides it.
    private func choice(_ operation: BenchOperation, _ size: Int) -> String {
        Dispatcher.shared.chosenBackend(operation.route, size: size).name
    }

    private func cpu(_ op: String, _ size: Int, _ backend: BenchBackend) -> Double? {
        results.first { $0.op == op && $0.size == size && $0.backend == backend.rawValue }?.cpuMsPerMB
    }

    private func aggregate(_ op: String, _ size: Int, _ threads: Int, _ backend: BenchBackend) -> Double? {
        concurrency.first { $0.op == op && $0.size == size && $0.threads == threads && $0.backend == backend.rawValue }?
            .aggregateMBPerS
    }

    /// The process's CPU time per MB for each backend, and the concurrency series.
    func cpuAndConcurrencyTables() -> String {
        let backends: [BenchBackend] = [.software, .kernel, .dispatch, .opensslC, .kcapiC]
        var lines = ["CPU time of the calling process per MB processed (ms/MB; an engine's work is not on this CPU)"]
        lines.append(
            "op".padding(toLength: 20, withPad: " ", startingAt: 0) + " " + "size".padding(toLength: 8, withPad: " ", startingAt: 0)
                + backends.map { pad($0.rawValue, 10) }.joined())
        for operation in operations {
            for size in sizes {
                let cells = backends.map { pad(cpu(operation.name, size, $0).map { String(format: "%.2f", $0) } ?? "-", 10) }
                lines.append(
                    operation.name.padding(toLength: 20, withPad: " ", startingAt: 0) + " "
                        + formatSize(size).padding(toLength: 8, withPad: " ", startingAt: 0) + cells.joined())
            }
        }
        guard !concurrency.isEmpty else { return lines.joined(separator: "\n") }
        lines.append("concurrency: aggregate MB/s of all threads (CPU ms/MB in parentheses; the dispatcher's: and its calls' share on the kernel)")
        let swept: [BenchBackend] = [.software, .kernel, .dispatch, .kernelControl].filter { backend in concurrency.contains { $0.backend == backend.rawValue } }
        // A column is 20 wide, 26 where it gives the engine's share.
        func width(_ backend: BenchBackend) -> Int {
            concurrency.contains { $0.backend == backend.rawValue && $0.engineShare != nil } ? 26 : 20
        }
        lines.append(
            "op".padding(toLength: 20, withPad: " ", startingAt: 0) + " " + "size".padding(toLength: 8, withPad: " ", startingAt: 0)
                + pad("threads", 8) + swept.map { pad($0.rawValue, width($0)) }.joined())
        for point in Set(concurrency.map { "\($0.op)|\($0.size)|\($0.threads)" }).sorted(by: { a, b in
            let (x, y) = (a.split(separator: "|"), b.split(separator: "|"))
            return (x[0], Int(x[1])!, Int(x[2])!) < (y[0], Int(y[1])!, Int(y[2])!)  // !: written just above from Ints
        }) {
            let parts = point.split(separator: "|")
            let (op, size, threads) = (String(parts[0]), Int(parts[1])!, Int(parts[2])!)  // !: as above
            let cells = swept.map { backend -> String in
                guard let result = concurrency.first(where: { $0.op == op && $0.size == size && $0.threads == threads && $0.backend == backend.rawValue })
                else { return pad("-", width(backend)) }
                let share = result.engineShare.map { String(format: ", %.0f%%", $0 * 100) } ?? ""
                return pad(String(format: "%.1f (%.2f%@)", result.aggregateMBPerS, result.cpuMsPerMB, share), width(backend))
            }
            lines.append(
                op.padding(toLength: 20, withPad: " ", startingAt: 0) + " " + formatSize(size).padding(toLength: 8, withPad: " ", startingAt: 0)
                    + pad(String(threads), 8) + cells.joined())
        }
        return lines.joined(separator: "\n")
    }

    private func pad(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }

    /// The smallest measured size from which the kernel beats software (by ``Calibration/requiredAdvantage``) at
    /// every larger measured size: the crossover as this run's size series measured it.
    func sweptCrossover(_ operation: BenchOperation) -> Int? {
        Calibration.crossover(sizes.compactMap { size in
            guard let software = speed(operation.name, size, .software) else { return nil }
            let kernel = speed(operation.name, size, .kernel)
            return Calibration.Point(
                size: size, softwareNanoseconds: Double(size) / software * 1e3,
                offloadNanoseconds: kernel.map { Double(size) / $0 * 1e3 })
        })
    }

    /// Whether `threshold` lies within one step of `crossover` in the size series (both `nil`: never and no crossover).
    func withinOneStep(_ threshold: Int?, of crossover: Int?) -> Bool {
        guard let crossover, let index = sizes.firstIndex(of: crossover) else { return threshold == nil }
        guard let threshold else { return false }
        let low = index > 0 ? sizes[index - 1] : 0
        let high = index + 1 < sizes.count ? sizes[index + 1] : Int.max
        return threshold >= low && threshold <= high
    }

    func table() -> String {
        var lines: [String] = []
        let header = ["op", "size", "software", "kernel", "dispatch", "openssl-c", "kcapi-c", "sw/ossl", "fresh", "k/kcapi", "disp/best", "a/a", "chosen"]
        let widths = [20, 8, 9, 9, 9, 9, 9, 8, 6, 8, 9, 6, 8]
        func row(_ cells: [String]) -> String {
            zip(cells, widths).enumerated().map { index, pair in
                index < 2 ? pair.0.padding(toLength: pair.1, withPad: " ", startingAt: 0) : String(repeating: " ", count: max(0, pair.1 - pair.0.count)) + pair.0
            }.joined(separator: " ")
        }
        lines.append("throughput in MB/s (median of timed batches); ratios of ours to the baseline; fresh: sw/ossl with a new key every call;")
        lines.append("a/a: the software backend timed again through a runner of its own, over the first (the harness's own error)")
        lines.append(row(header))
        for operation in operations {
            for size in sizes {
                let value = { (backend: BenchBackend) in speed(operation.name, size, backend) }
                let cells = [BenchBackend.software, .kernel, .dispatch, .opensslC, .kcapiC].map { value($0).map { String(format: "%.1f", $0) } ?? "-" }
                let best = [value(.software), value(.kernel)].compactMap { $0 }.max()
                lines.append(row([operation.name, formatSize(size)] + cells + [
                    ratio(value(.software), value(.opensslC)), ratio(value(.softwareFreshKey), value(.opensslCFreshKey)),
                    ratio(value(.kernel), value(.kcapiC)), ratio(value(.dispatch), best),
                    ratio(value(.softwareControl), value(.software)), choice(operation, size),
                ]))
            }
        }
        return lines.joined(separator: "\n")
    }

    private func ratio(_ a: Double?, _ b: Double?) -> String {
        guard let a, let b, b > 0 else { return "-" }
        return String(format: "%.2f", a / b)
    }

    struct Target {
        let name: String
        let minimum: Double
        let worst: (value: Double, where: String)?
        /// Whether a target with nothing measured misses (the engine lanes' targets must be measured there).
        var required = false
        /// Why this run does not judge the target (it is printed, not passed or missed), if it does not.
        var notJudged: String?
        var passed: Bool { notJudged != nil || (worst.map { $0.value >= minimum } ?? !required) }

        /// PASS, MISS, or `----` where the target is not judged.
        var verdict: String { notJudged != nil ? "----" : passed ? "PASS" : "MISS" }
    }

    func evaluateTargets() -> [Target] {
        var small: [(Double, String)] = []
        var fresh: [(Double, String)] = []
        var large: [(Double, String)] = []
        var kernel: [(Double, String)] = []
        var dispatch: [(Double, String)] = []
        var dispatchUnresolved = 0
        var control: [(Double, String)] = []
        for operation in operations {
            // The better of what the dispatcher may choose: the kernel only where an engine serves the route (a CPU
            // driver is never offload; under an emulated CPU it can outrun OpenSSL's emulated assembly).
            let engineServes = operation.runsOnEngine
            for size in sizes {
                let label = "\(operation.name) \(formatSize(size))"
                let value = { (backend: BenchBackend) in speed(operation.name, size, backend) }
                if let s = value(.software), let c = value(.opensslC) {
                    if size <= 1024 { small.append((s / c, label)) }
                    if size >= 65536 { large.append((s / c, label)) }
                }
                if let s = value(.softwareFreshKey), let c = value(.opensslCFreshKey) { fresh.append((s / c, label)) }
                if let k = value(.kernel), let c = value(.kcapiC) { kernel.append((k / c, label)) }
                let agreement = harnessAgreement(operation.name, size)
                let engine = engineServes ? value(.kernel) : nil
                if let d = value(.dispatch), let best = [value(.software), engine].compactMap({ $0 }).max() {
                    // A row whose software, timed twice, differs by more than the target's 3 % cannot tell the
                    // dispatcher's cost from the run's own error: left out, counted.
                    if let agreement, agreement < Self.dispatchMinimum {
                        dispatchUnresolved += 1
                    } else {
                        dispatch.append((d / best, label))
                    }
                }
                if let agreement { control.append((agreement, label)) }
            }
        }
        // At least C's speed where the Swift layers and the key schedule are what a call costs (to 1 KiB,
        // repeated key), 0.95 of it with a new key every call; from 64 KiB both sides run the same assembly for
        // nearly all the time, so the ratio is 1 within the machine's noise, and the target there is that band.
        var targets = [
            Target(name: "software / openssl-c at 16 B-1 KiB, repeated key", minimum: 1.00, worst: worst(small)),
            Target(name: "software / openssl-c at every size, fresh key each call", minimum: 0.95, worst: worst(fresh)),
            Target(name: "software / openssl-c at >= 64 KiB", minimum: 0.98, worst: worst(large)),
        ]
        if machine.afalg { targets.append(Target(name: "kernel / kcapi-c at every size", minimum: 0.90, worst: worst(kernel))) }
        targets.append(
            Target(
                name: "dispatch / max(software, engine)"
                    + (dispatchUnresolved > 0 ? " (\(rows(dispatchUnresolved)) whose a/a < \(Self.dispatchMinimum) left out)" : ""),
                minimum: Self.dispatchMinimum, worst: worst(dispatch)))
        // What the harness resolves: the same code timed twice must agree within the 3 % the dispatcher is allowed,
        // or this run cannot tell the dispatcher's cost from its own error (the rows that miss are left out above).
        targets.append(Target(name: "harness: software timed twice, the lower of a/a and its inverse", minimum: 0.97, worst: worst(control)))
        // Under an emulated CPU a call's time is the emulator's translation and scheduling as much as the code's: the
        // comparisons of our code with C doing the same work, and the harness's own, say nothing there. The routing
        // targets (the dispatcher's, with its row rule, and the lanes' own below) are judged.
        if let emulation = machine.emulation {
            let spread = worst(control).map { String(format: "%.2f", $0.value) } ?? "?"
            let reason = "not judged under \(emulation) CPU emulation: the same code timed twice agrees only to \(spread) here"
            for index in targets.indices where !targets[index].name.hasPrefix("dispatch /") {
                targets[index].notJudged = reason
            }
        }
        return targets + engineTargets()
    }

    /// The least ratio of `pairs` and where it was measured.
    private func worst(_ pairs: [(Double, String)]) -> (value: Double, where: String)? {
        pairs.min { $0.0 < $1.0 }.map { (value: $0.0, where: $0.1) }
    }

    /// "1 row", "2 rows".
    private func rows(_ count: Int) -> String { count == 1 ? "1 row" : "\(count) rows" }

    /// The engine-aesni lane's target for dispatch / software (the engine declined where it does not win), and the
    /// lowest harness a/a of a row it judges.
    static let declineMinimum = 0.95
    /// The dispatcher's target against the better backend (3 %: a routed call's bookkeeping), and the lowest harness
    /// a/a of a row it judges.
    static let dispatchMinimum = 0.97

    /// The engine lanes' targets, where the run is in one (`SECURITYSERVICES_ENGINE_LANE`).
    private func engineTargets() -> [Target] {
        guard let lane = machine.engineLane else { return [] }
        let engineOperations = operations.filter(\.runsOnEngine)
        var targets: [Target] = []
        var offload: [(encrypt: Bool, ratio: Double, where: String)] = []
        var declined: [(Double, String)] = []
        var unresolved = 0
        for operation in engineOperations {
            for size in sizes {
                guard let d = speed(operation.name, size, .dispatch), let s = speed(operation.name, size, .software) else { continue }
                if size >= 65536 { offload.append((operation.name.hasSuffix("encrypt"), d / s, "\(operation.name) \(formatSize(size))")) }
                // A row whose software, timed twice, differs by more than the target's 5 % cannot tell the
                // dispatcher's cost from the run's own error (small calls under an emulated CPU): left out, counted.
                if let agreement = harnessAgreement(operation.name, size), agreement < Self.declineMinimum {
                    unresolved += 1
                    continue
                }
                declined.append((d / s, "\(operation.name) \(formatSize(size))"))
            }
        }
        if lane == "engine-noaes" {
            // Decryption offloads less: software decrypts CBC several blocks at once (OpenSSL's bit-sliced AES), it
            // cannot encrypt so.
            for (encrypt, minimum) in [(true, 10.0), (false, 3.0)] {
                let pairs = offload.filter { $0.encrypt == encrypt }.map { ($0.ratio, $0.where) }
                guard !pairs.isEmpty else { continue }
                targets.append(
                    Target(
                        name: "engine-noaes: dispatch / software at >= 64 KiB, \(encrypt ? "encryption" : "decryption")", minimum: minimum,
                        worst: worst(pairs), required: true))
            }
            // What the engine itself gives over software there: a miss above is the engine's, not the routing's.
            var engine: [(Double, String)] = []
            for operation in engineOperations {
                for size in sizes where size >= 65536 {
                    guard let k = speed(operation.name, size, .kernel), let s = speed(operation.name, size, .software) else { continue }
                    engine.append((k / s, "\(operation.name) \(formatSize(size))"))
                }
            }
            targets.append(Target(name: "engine-noaes: (for reference) engine / software at >= 64 KiB", minimum: 0, worst: worst(engine)))
        } else {
            let name = "\(lane): dispatch / software at every size" + (unresolved > 0 ? " (\(rows(unresolved)) whose a/a < \(Self.declineMinimum) left out)" : "")
            targets.append(Target(name: name, minimum: Self.declineMinimum, worst: worst(declined), required: true))
        }
        // The threshold auto mode uses against the crossover this run's sizes measured: 1 within one step, else 0.
        var steps: [(Double, String)] = []
        for operation in engineOperations {
            let threshold = Dispatcher.shared.threshold(for: operation.route)
            let crossover = sweptCrossover(operation)
            steps.append((
                withinOneStep(threshold, of: crossover) ? 1 : 0,
                "\(operation.name): threshold \(threshold.map(formatSize) ?? "never"), swept crossover \(crossover.map(formatSize) ?? "none")"
            ))
        }
        targets.append(
            Target(name: "\(lane): threshold within one size step of the swept crossover (1 = yes)", minimum: 1, worst: worst(steps), required: true))
        var parallel: [(Double, String)] = []
        var parallelUnresolved: [Double] = []
        for operation in engineOperations {
            for size in Set(concurrency.filter { $0.op == operation.name }.map(\.size)).sorted() {
                let name = operation.name
                guard let d = aggregate(name, size, 4, .dispatch), let k = aggregate(name, size, 4, .kernel) else { continue }
                // A point where the kernel's two runs differ by more than the target's 5 % cannot tell the
                // dispatcher's cost from the run's own error: left out, counted.
                if let agreement = kernelAgreement(name, size, 4), agreement < Self.declineMinimum {
                    parallelUnresolved.append(agreement)
                    continue
                }
                let control = aggregate(name, size, 4, .kernelControl) ?? k
                let best = max(aggregate(name, size, 4, .software) ?? 0, (k + control) / 2)
                parallel.append((d / best, "\(name) \(formatSize(size)), 4 threads"))
            }
        }
        var target = Target(
            name: "\(lane): dispatch aggregate / best backend's with 4 threads"
                + (parallel.isEmpty || parallelUnresolved.isEmpty
                    ? "" : " (\(points(parallelUnresolved.count)) whose kernel a/a < \(Self.declineMinimum) left out)"),
            minimum: 0.95, worst: worst(parallel), required: true)
        if parallel.isEmpty, let agreement = parallelUnresolved.max() {
            target.notJudged = String(format: "the kernel run twice with 4 threads agrees only to %.2f here", agreement)
        }
        targets.append(target)
        return targets
    }

    private func points(_ count: Int) -> String { count == 1 ? "1 point" : "\(count) points" }

    func targets() -> String {
        var lines = ["targets (worst case measured in this run):"]
        for target in evaluateTargets() {
            let worst = target.worst.map { String(format: "%.3f at %@", $0.value, $0.where) } ?? "not measured"
            lines.append("  \(target.verdict)  \(target.name) >= \(target.minimum): \(worst)" + (target.notJudged.map { " (\($0))" } ?? ""))
        }
        if !machine.afalg { lines.append("  (kernel / kcapi-c not measured: AF_ALG unavailable)") }
        lines.append("dispatcher thresholds (auto mode):")
        for operation in operations {
            let threshold = Dispatcher.shared.threshold(for: operation.route).map(formatSize) ?? "never"
            lines.append("  \(operation.name): \(threshold) — \(Dispatcher.shared.reason(for: operation.route))")
        }
        return lines.joined(separator: "\n")
    }

    func json() throws -> Data {
        struct Document: Encodable {
            let machine: Machine
            let results: [Result]
            let concurrency: [ConcurrencyResult]
            let calibration: [CalibrationRecord]
            let thresholds: [String: Int?]
            let sweptCrossovers: [String: Int?]
            let targets: [TargetRecord]

            enum CodingKeys: String, CodingKey {
                case machine, results, concurrency, calibration, thresholds, sweptCrossovers = "swept_crossovers", targets
            }
        }
        struct CalibrationRecord: Encodable {
            let backend: String
            let route: String
            let placement: String
            let threshold: Int?
            let reason: String
            let sizes: [Int]
            /// `nil` where software could not run the call.
            let softwareNs: [Double?]
            let offloadNs: [Double?]
            let cost: CallCost?
            let softwareCost: CallCost?
        }
        struct TargetRecord: Encodable {
            let name: String
            let minimum: Double
            let worst: Double?
            let at: String?
            let pass: Bool
            /// Why the run does not judge it, where it does not (`pass` is then true).
            let notJudged: String?

            enum CodingKeys: String, CodingKey { case name, minimum, worst, at, pass, notJudged = "not_judged" }
        }
        var thresholds: [String: Int?] = [:]
        for operation in operations { thresholds[operation.name] = .some(Dispatcher.shared.threshold(for: operation.route)) }
        var crossovers: [String: Int?] = [:]
        for operation in operations { crossovers[operation.name] = .some(sweptCrossover(operation)) }
        let records = calibration.map {
            CalibrationRecord(
                backend: $0.backend.name, route: $0.route.name, placement: $0.placement.description, threshold: $0.threshold,
                reason: $0.reason, sizes: $0.points.map(\.size), softwareNs: $0.points.map { $0.softwareNanoseconds.isFinite ? $0.softwareNanoseconds : nil },
                offloadNs: $0.points.map(\.offloadNanoseconds), cost: $0.cost, softwareCost: $0.softwareCost)
        }
        let document = Document(
            machine: machine, results: results, concurrency: concurrency, calibration: records, thresholds: thresholds,
            sweptCrossovers: crossovers,
            targets: evaluateTargets().map {
                TargetRecord(name: $0.name, minimum: $0.minimum, worst: $0.worst?.value, at: $0.worst?.where, pass: $0.passed, notJudged: $0.notJudged)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(document)
    }

    /// One chart per operation: log-log throughput against size, a line per backend, the threshold dashed.
    func svg() -> String {
        let chartWidth = 460.0, chartHeight = 300.0, margin = 50.0, columns = 2
        let rows = (operations.count + columns - 1) / columns
        let width = Double(columns) * (chartWidth + margin) + margin
        let height = Double(rows) * (chartHeight + margin * 1.6) + margin
        let colors: [BenchBackend: String] = [
            .software: "#1f77b4", .kernel: "#d62728", .dispatch: "#2ca02c", .opensslC: "#9467bd", .kcapiC: "#ff7f0e",
        ]
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(margin)" y="20" font-size="14">secbench: \(escape(machine.cpu)), kernel \(escape(machine.kernel)), AF_ALG \(machine.afalg ? "yes" : "no")</text>

            """
        let speeds = results.map(\.mbPerS).filter { $0 > 0 && $0.isFinite }
        let lowY = log10(max(speeds.min() ?? 1, 0.01)), highY = log10(max(speeds.max() ?? 10, 1))
        let lowX = log2(Double(sizes.first ?? 16)), highX = log2(Double(sizes.last ?? 16))
        for (index, operation) in operations.enumerated() {
            let left = margin + Double(index % columns) * (chartWidth + margin)
            let top = margin + Double(index / columns) * (chartHeight + margin * 1.6)
            func x(_ size: Int) -> Double { left + (log2(Double(size)) - lowX) / max(highX - lowX, 1) * chartWidth }
            func y(_ speed: Double) -> Double { top + chartHeight - (log10(speed) - lowY) / max(highY - lowY, 0.1) * chartHeight }
            out += "<text x=\"\(left)\" y=\"\(top - 8)\" font-size=\"13\">\(operation.name) (MB/s, log) vs size (log)</text>\n"
            out += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(chartWidth)\" height=\"\(chartHeight)\" fill=\"none\" stroke=\"#999\"/>\n"
            for size in sizes {
                out += "<text x=\"\(x(size) - 12)\" y=\"\(top + chartHeight + 14)\">\(formatSize(size).replacingOccurrences(of: " ", with: ""))</text>\n"
            }
            var tick = pow(10, floor(lowY))
            while log10(tick) <= highY {
                if log10(tick) >= lowY {
                    out += "<line x1=\"\(left)\" x2=\"\(left + chartWidth)\" y1=\"\(y(tick))\" y2=\"\(y(tick))\" stroke=\"#eee\"/>"
                    out += "<text x=\"\(left - 45)\" y=\"\(y(tick) + 4)\">\(tick >= 1 ? String(Int(tick)) : String(tick))</text>\n"
                }
                tick *= 10
            }
            if let threshold = Dispatcher.shared.threshold(for: operation.route), threshold <= sizes.last ?? 0 {
                let position = x(max(threshold, sizes.first ?? 16))
                out += "<line x1=\"\(position)\" x2=\"\(position)\" y1=\"\(top)\" y2=\"\(top + chartHeight)\" stroke=\"#000\" stroke-dasharray=\"4 3\"/>"
                out += "<text x=\"\(position + 3)\" y=\"\(top + 12)\">threshold \(formatSize(threshold))</text>\n"
            }
            for (line, backend) in BenchBackend.allCases.enumerated() {
                let points = sizes.compactMap { size in speed(operation.name, size, backend).map { (size, $0) } }.filter { $0.1 > 0 }
                guard !points.isEmpty, let color = colors[backend] else { continue }
                let path = points.map { String(format: "%.1f,%.1f", x($0.0), y($0.1)) }.joined(separator: " ")
                out += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.6\" points=\"\(path)\"/>\n"
                out += "<text x=\"\(left + 8)\" y=\"\(top + 16 + Double(line) * 14)\" fill=\"\(color)\">\(backend.rawValue)</text>\n"
            }
        }
        return out + "</svg>\n"
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
}
