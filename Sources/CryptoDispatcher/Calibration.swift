public import CryptoContract
public import Foundation
import SoftwareBackend

/// Measures, per offload backend and route, where the backend starts beating software on this machine, fits
/// each side's cost per call, and turns that into a ``DispatchProfile``. Used by `secbench --calibrate` and
/// ``Dispatcher/calibrate(routes:budget:saveTo:)``.
public enum Calibration {
    /// Sizes probed, 16 B to 1 MiB.
    public static let sizes = [16, 64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576]

    /// The offload backend must be at least this much faster (its time ≤ 0.95 × software's) to count as a
    /// win, so that noise around a tie does not move work.
    public static let requiredAdvantage = 0.95

    public struct Point: Sendable {
        public let size: Int
        public let softwareNanoseconds: Double
        /// `nil` when the offload backend could not serve the route.
        public let offloadNanoseconds: Double?

        public init(size: Int, softwareNanoseconds: Double, offloadNanoseconds: Double?) {
            self.size = size
            self.softwareNanoseconds = softwareNanoseconds
            self.offloadNanoseconds = offloadNanoseconds
        }
    }

    public struct RouteResult: Sendable {
        public let backend: BackendKind
        public let route: Route
        public let placement: OffloadPlacement
        public let points: [Point]
        public let threshold: Int?
        public let reason: String
        /// The fitted cost of a call on the backend and on software, where measured.
        public let cost: CallCost?
        public let softwareCost: CallCost?
    }

    /// Calibrates `routes` (the phone engine's by default) on every backend of `backends` and returns the
    /// profile and the measurements. Software is measured once per route and size, just before the first backend at
    /// that size: each comparison is of two measurements taken together, so that load that comes or goes during a
    /// calibration moves both sides of a point, not every point of one side.
    /// - Parameter budget: time spent per (route, size, backend) measurement.
    public static func run(
        routes: [Route] = Route.phoneEngine, budget: Duration = .milliseconds(30),
        backends: [any OffloadBackend] = Dispatcher.defaultBackends
    ) -> (DispatchProfile, [RouteResult]) {
        let software = SoftwareBackend()
        var softwareTimes: [Route: [Int: Double]] = [:]
        var results: [RouteResult] = []
        for backend in backends {
            for route in routes {
                let placement = backend.placement(of: route.operation)
                guard placement.isAvailable else {
                    results.append(
                        RouteResult(
                            backend: backend.kind, route: route, placement: placement, points: [], threshold: nil,
                            reason: placement.detail, cost: nil, softwareCost: nil))
                    continue
                }
                let points = sizes.map { size in
                    let softwareNanoseconds = softwareTimes[route]?[size]
                        ?? Workload(route: route, size: size, backend: software).medianNanoseconds(budget: budget) ?? .infinity
                    softwareTimes[route, default: [:]][size] = softwareNanoseconds
                    return Point(
                        size: size, softwareNanoseconds: softwareNanoseconds,
                        offloadNanoseconds: Workload(route: route, size: size, backend: backend).medianNanoseconds(budget: budget))
                }
                let threshold = crossover(points)
                let reason: String
                if let threshold {
                    reason = "\(backend.kind) (\(placement.detail)) ≥ 5% faster from \(threshold) bytes up to \(sizes.last!) bytes"  // !: sizes is not empty
                } else {
                    let best = points.compactMap { point in point.offloadNanoseconds.map { point.softwareNanoseconds / $0 } }.max() ?? 0
                    reason = String(
                        format: "no crossover: \(backend.kind) (\(placement.detail)) is at best %.2fx software's speed", best)
                }
                results.append(
                    RouteResult(
                        backend: backend.kind, route: route, placement: placement, points: points, threshold: threshold,
                        reason: reason, cost: CallCost.fit(points.compactMap { p in p.offloadNanoseconds.map { (p.size, $0) } }),
                        softwareCost: CallCost.fit(points.map { ($0.size, $0.softwareNanoseconds) })))
            }
        }
        var calibrated: [String: DispatchProfile.Backend] = [:]
        for result in results {
            var entry = calibrated[result.backend.name] ?? DispatchProfile.Backend(thresholds: [:])
            entry.thresholds[result.route.name] = .some(result.threshold)
            entry.reasons[result.route.name] = result.reason
            entry.costs[result.route.name] = result.cost
            calibrated[result.backend.name] = entry
        }
        let softwareCosts = Dictionary(results.compactMap { r in r.softwareCost.map { (r.route.name, $0) } }) { first, _ in first }
        let profile = DispatchProfile(
            fingerprint: .current(for: backends), backends: calibrated, softwareCosts: softwareCosts)
        return (profile, results)
    }

    /// The smallest measured size from which the offload backend wins at every larger measured size, `nil` if none.
    public static func crossover(_ points: [Point]) -> Int? {
        var threshold: Int?
        for point in points.sorted(by: { $0.size > $1.size }) {
            guard let offload = point.offloadNanoseconds, offload <= requiredAdvantage * point.softwareNanoseconds else { break }
            threshold = point.size
        }
        return threshold
    }
}

/// One repeatable operation of a route at a size on a backend, with its inputs allocated once.
public final class Workload {
    public let route: Route
    public let size: Int
    private let backend: any CryptoBackend
    private let input: UnsafeMutableRawBufferPointer
    private let output: UnsafeMutableRawBufferPointer
    /// The longest key any route's algorithm takes (3DES: 24 bytes, AES-256: 32, Blowfish up to 56); each call
    /// uses the first `keySizes.lowerBound` bytes of it.
    private let key: [UInt8] = Array(0..<56)
    private let iv: [UInt8] = Array(repeating: 7, count: 16)

    public init(route: Route, size: Int, backend: any CryptoBackend) {
        self.route = route
        self.size = size
        self.backend = backend
        input = .allocate(byteCount: max(size, 1), alignment: 64)
        output = .allocate(byteCount: max(size, 1) + 64, alignment: 64)
        for index in 0..<input.count { input[index] = UInt8(truncatingIfNeeded: index &* 31) }
    }

    deinit {
        input.deallocate()
        output.deallocate()
    }

    /// Runs the operation once.
    @inline(__always)
    public func run() throws {
        let data = UnsafeRawBufferPointer(rebasing: input[..<size])
        switch route.operation {
        case .cipher(let algorithm, let mode):
            let spec = CipherSpec(algorithm, mode)
            try key.prefix(algorithm.keySizes.lowerBound).withUnsafeBytes { key in
                try iv.withUnsafeBytes { iv in
                    _ = try backend.crypt(route.direction ?? .encrypt, spec, key: key, iv: iv, input: data, output: output)
                }
            }
        case .digest(let algorithm):
            try backend.digest(algorithm, input: data, output: output)
        case .hmac(let algorithm):
            try key.prefix(16).withUnsafeBytes { try backend.hmac(algorithm, key: $0, input: data, output: output) }
        }
    }

    /// The median time of one ``run()`` in nanoseconds (see ``Timing``), `nil` if the operation fails.
    public func medianNanoseconds(budget: Duration) -> Double? {
        Timing.medianNanoseconds(budget: budget) { try run() }
    }
}

/// The timing method of calibration and benchmark: warm-up, batches sized to about a fiftieth of the
/// budget, then timed batches until the budget is spent (at least `minimumBatches`); the median batch
/// divided by its size. Medians, because these machines are shared and noisy.
public enum Timing {
    public static func medianNanoseconds(
        budget: Duration, minimumBatches: Int = 5, _ operation: () throws -> Void
    ) -> Double? {
        samples(budget: budget, minimumBatches: minimumBatches, operation).map(median)
    }

    /// The per-operation time of each timed batch, `nil` if the operation fails.
    public static func samples(budget: Duration, minimumBatches: Int = 5, _ operation: () throws -> Void) -> [Double]? {
        guard (try? operation()) != nil else { return nil }
        let clock = ContinuousClock()
        var batch = 1
        while true {
            let elapsed = clock.measure { for _ in 0..<batch { try? operation() } }
            if elapsed * 50 >= budget || batch >= 1 << 20 { break }
            batch *= 2
        }
        var samples: [Double] = []
        let start = clock.now
        while samples.count < minimumBatches || clock.now - start < budget {
            let elapsed = clock.measure { for _ in 0..<batch { try? operation() } }
            samples.append(elapsed.nanoseconds / Double(batch))
            if samples.count >= 1000 { break }
        }
        return samples
    }

    public static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }
}

extension Duration {
    public var nanoseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}

extension Dispatcher {
    /// Calibrates this dispatcher's offload backends, persists the profile to ``DispatchProfile/defaultLocation``
    /// (or `location`) and applies the measured thresholds and costs: where a route adapts, they seed its cost model
    /// afresh (what it had learned is forgotten).
    @discardableResult
    public func calibrate(
        routes: [Route] = Route.phoneEngine, budget: Duration = .milliseconds(30), saveTo location: URL? = DispatchProfile.defaultLocation
    ) throws -> [Calibration.RouteResult] {
        let (profile, results) = Calibration.run(routes: routes, budget: budget, backends: backends)
        if let location { try profile.save(to: location) }
        for result in results {
            setThreshold(
                result.threshold, for: result.route, on: result.backend, reason: "calibrated \(profile.created): \(result.reason)",
                explicit: false)
            setCost(result.cost, for: result.route, on: result.backend)
        }
        reseed(from: results)
        return results
    }
}
