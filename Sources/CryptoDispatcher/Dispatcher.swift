public import CryptoContract
public import Foundation
public import KernelBackend
public import SoftwareBackend
import Synchronization

/// How the dispatcher chooses.
public enum DispatchPolicy: String, Sendable, CaseIterable {
    /// The kernel for enabled routes at or above their threshold, software otherwise.
    case auto
    /// Always software.
    case software
    /// The kernel wherever it can serve the call (software only where it cannot).
    case kernel
}

/// What configures a dispatcher: a policy and explicit per-route thresholds, over a calibrated profile,
/// over documented defaults.
public struct DispatchConfiguration: Sendable {
    public var policy: DispatchPolicy
    /// Explicit thresholds in bytes; `nil` keeps a route away from the kernel. They beat profile and defaults.
    public var thresholds: [Route: Int?]
    /// A calibrated profile, used where no explicit threshold is given.
    public var profile: DispatchProfile?

    public init(policy: DispatchPolicy = .auto, thresholds: [Route: Int?] = [:], profile: DispatchProfile? = nil) {
        self.policy = policy
        self.thresholds = thresholds
        self.profile = profile
    }

    /// The phone's engine thresholds, used when nothing was calibrated and the kernel's driver is not CPU code:
    /// CommonCrypto sent AES to hardware above 1 KiB and SHA-1 above 4 KiB.
    public static let engineDefaults: [String: Int] = [
        "aes-ecb-encrypt": 1024, "aes-ecb-decrypt": 1024, "aes-cbc-encrypt": 1024, "aes-cbc-decrypt": 1024,
        "sha1": 4096, "hmac-sha1": 4096,
    ]

    /// Reads `SECURITYSERVICES_DISPATCH` (`auto`, `software`, `kernel`) and `SECURITYSERVICES_THRESHOLD_<ROUTE>`
    /// (route name upper-cased, `-` as `_`, e.g. `SECURITYSERVICES_THRESHOLD_AES_CBC_ENCRYPT=1024`; `never` or
    /// `off` disables the route). Unusable values are reported in `warnings` and ignored.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (configuration: DispatchConfiguration, warnings: [String]) {
        var configuration = DispatchConfiguration()
        var warnings: [String] = []
        if let value = environment["SECURITYSERVICES_DISPATCH"], !value.isEmpty {
            if let policy = DispatchPolicy(rawValue: value.lowercased()) {
                configuration.policy = policy
            } else {
                warnings.append("SECURITYSERVICES_DISPATCH=\(value) is not auto, software or kernel; using auto")
            }
        }
        let prefix = "SECURITYSERVICES_THRESHOLD_"
        for (key, value) in environment where key.hasPrefix(prefix) {
            let name = key.dropFirst(prefix.count).lowercased().replacingOccurrences(of: "_", with: "-")
            guard let route = Route(name: name) else {
                warnings.append("\(key) names no route")
                continue
            }
            switch value.lowercased() {
            case "never", "off", "none": configuration.thresholds[route] = .some(nil)
            default:
                if let bytes = Int(value), bytes >= 0 {
                    configuration.thresholds[route] = bytes
                } else {
                    warnings.append("\(key)=\(value) is not a byte count or never")
                }
            }
        }
        return (configuration, warnings)
    }
}

/// Routes every call to the software or the kernel backend, by operation, algorithm and size.
///
/// By default only the phone engine's work (AES-ECB/CBC, SHA-1, HMAC-SHA1) may go to the kernel, and only
/// at or above a threshold measured on this machine (``Calibration``) or, without a profile, the engine
/// defaults — and never where `/proc/crypto` shows the kernel would run the same CPU instructions as
/// OpenSSL. A kernel call that finds AF_ALG or the algorithm missing is served by software with identical
/// output; any other kernel error is thrown. Counters record which backend served each call.
///
/// Thread-safe; routing reads atomics only.
public final class Dispatcher: CryptoBackend, @unchecked Sendable {
    // @unchecked: the tables behind the unsafe pointers are allocated in init, freed in deinit, and only
    // accessed through atomics in between; everything else is immutable or a Mutex.

    /// The process-wide dispatcher: configured from the environment and the persisted profile at first use.
    public static let shared: Dispatcher = {
        var (configuration, _) = DispatchConfiguration.fromEnvironment()
        if case .loaded(let profile) = DispatchProfile.load() { configuration.profile = profile }
        return Dispatcher(configuration)
    }()

    public let kind = BackendKind(name: "dispatch")
    public let software = SoftwareBackend()
    public let kernel = KernelBackend()

    private let policyStorage: Atomic<Int>
    /// Per route: the threshold in bytes, `Int.max` for never.
    private let thresholds: UnsafeMutablePointer<Atomic<Int>>
    /// Per route: the threshold auto mode applies, `Int.max` also where the kernel does not serve the route.
    private let effectiveThresholds: UnsafeMutablePointer<Atomic<Int>>
    /// Per route plus one "no route" slot: calls served by software, then by the kernel.
    private let counts: UnsafeMutablePointer<Atomic<Int>>
    /// Per route: whether the kernel binds it (probed once per process).
    private let kernelBinds: [Bool]
    private let reasons: Mutex<[Route: String]>

    public init(_ configuration: DispatchConfiguration = DispatchConfiguration()) {
        policyStorage = Atomic(Self.encode(configuration.policy))
        kernelBinds = Route.all.map { KernelBackend().supports($0.operation) }
        thresholds = .allocate(capacity: Route.count)
        effectiveThresholds = .allocate(capacity: Route.count)
        counts = .allocate(capacity: (Route.count + 1) * 2)
        for index in 0..<(Route.count + 1) * 2 { (counts + index).initialize(to: Atomic(0)) }
        var reasons: [Route: String] = [:]
        for route in Route.all {
            let (threshold, reason) = Self.resolve(route, configuration, kernelBinds: kernelBinds[route.index])
            (thresholds + route.index).initialize(to: Atomic(threshold ?? Int.max))
            (effectiveThresholds + route.index).initialize(to: Atomic(kernelBinds[route.index] ? threshold ?? Int.max : Int.max))
            reasons[route] = reason
        }
        self.reasons = Mutex(reasons)
    }

    deinit {
        thresholds.deinitialize(count: Route.count)
        thresholds.deallocate()
        effectiveThresholds.deinitialize(count: Route.count)
        effectiveThresholds.deallocate()
        counts.deinitialize(count: (Route.count + 1) * 2)
        counts.deallocate()
    }

    // MARK: Configuration

    public var policy: DispatchPolicy {
        get { Self.decode(policyStorage.load(ordering: .relaxed)) }
        set { policyStorage.store(Self.encode(newValue), ordering: .relaxed) }
    }

    /// The threshold of `route` in bytes, `nil` when it never goes to the kernel in auto mode.
    public func threshold(for route: Route) -> Int? {
        let value = thresholds[route.index].load(ordering: .relaxed)
        return value == Int.max ? nil : value
    }

    /// Sets (or, with `nil`, disables) a route's threshold. Enabling a route beyond the phone engine's set is
    /// how other kernel algorithms are turned on.
    public func setThreshold(_ bytes: Int?, for route: Route) {
        precondition((bytes ?? 0) >= 0, "a threshold is a byte count")
        thresholds[route.index].store(bytes ?? Int.max, ordering: .relaxed)
        effectiveThresholds[route.index].store(kernelBinds[route.index] ? bytes ?? Int.max : Int.max, ordering: .relaxed)
        reasons.withLock { $0[route] = bytes.map { "set through the API: \($0) bytes" } ?? "disabled through the API" }
    }

    /// Why `route` has its threshold.
    public func reason(for route: Route) -> String { reasons.withLock { $0[route] ?? "" } }

    /// Whether the kernel can serve `route` on this machine.
    public func kernelServes(_ route: Route) -> Bool { kernelBinds[route.index] }

    // MARK: Counters

    /// How many calls each backend served, per route (``Route/name``, or `other` for operations the kernel
    /// never serves).
    public struct Counters: Sendable, Equatable {
        public var software: [String: Int]
        public var kernel: [String: Int]

        public func software(_ route: Route?) -> Int { software[route?.name ?? "other", default: 0] }
        public func kernel(_ route: Route?) -> Int { kernel[route?.name ?? "other", default: 0] }
    }

    public var counters: Counters {
        var result = Counters(software: [:], kernel: [:])
        for slot in 0...Route.count {
            let name = slot == Route.count ? "other" : Route.all[slot].name
            let software = counts[slot * 2].load(ordering: .relaxed)
            let kernel = counts[slot * 2 + 1].load(ordering: .relaxed)
            if software > 0 { result.software[name] = software }
            if kernel > 0 { result.kernel[name] = kernel }
        }
        return result
    }

    public func resetCounters() {
        for index in 0..<(Route.count + 1) * 2 { counts[index].store(0, ordering: .relaxed) }
    }

    // MARK: Routing

    /// Whether a call of `size` bytes on `route` goes to the kernel under the current policy.
    @inline(__always)
    public func choosesKernel(_ route: Route?, size: Int) -> Bool {
        guard let route else { return false }
        switch policyStorage.load(ordering: .relaxed) {
        // Auto, the hot path: one load and a compare (the effective threshold is Int.max where the kernel
        // does not serve the route).
        case 0: return size >= effectiveThresholds[route.index].load(ordering: .relaxed)
        case 2: return kernelBinds[route.index]
        default: return false
        }
    }

    @inline(__always)
    func record(_ route: Route?, kernel: Bool) {
        counts[(route?.index ?? Route.count) * 2 + (kernel ? 1 : 0)].wrappingAdd(1, ordering: .relaxed)
    }

    /// Runs `onKernel` when the kernel is chosen, falling back to `onSoftware` when the kernel reports the
    /// operation unavailable; counts the backend that served. Two closures over the concrete backends (not
    /// one over `any CryptoBackend`): no existential box, no reference counting on the hot path.
    @inline(__always)
    func route<R>(
        _ route: Route?, size: Int, kernel onKernel: () throws -> R, software onSoftware: () throws -> R
    ) throws -> R {
        if choosesKernel(route, size: size) {
            do {
                let result = try onKernel()
                record(route, kernel: true)
                return result
            } catch let error as CryptoError where error.code == .notAvailable {
                // Not here after all (a module unloaded, a key size the kernel lacks): software answers the same.
            }
        }
        let result = try onSoftware()
        record(route, kernel: false)
        return result
    }

    // MARK: CryptoBackend

    public func supports(_ operation: CryptoOperation) -> Bool {
        software.supports(operation) || kernel.supports(operation)
    }

    public func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        try route(
            Route.cipher(spec.algorithm, spec.mode, direction), size: input.count,
            kernel: { try kernel.crypt(direction, spec, key: key, iv: iv, input: input, output: output) },
            software: { try software.crypt(direction, spec, key: key, iv: iv, input: input, output: output) })
    }

    public func digest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
        throws
    {
        try route(
            Route.digest(algorithm), size: input.count,
            kernel: { try kernel.digest(algorithm, input: input, output: output) },
            software: { try software.digest(algorithm, input: input, output: output) })
    }

    public func hmac(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        try route(
            Route.hmac(algorithm), size: input.count,
            kernel: { try kernel.hmac(algorithm, key: key, input: input, output: output) },
            software: { try software.hmac(algorithm, key: key, input: input, output: output) })
    }

    /// AES-GCM: software (no kernel route: the phone's engine had none), counted as "other".
    public func seal(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        try software.seal(algorithm, key: key, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
        record(nil, kernel: false)
    }

    public func open(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        try software.open(algorithm, key: key, nonce: nonce, aad: aad, input: input, tag: tag, output: output)
        record(nil, kernel: false)
    }

    /// A keyed AES-GCM: software, as the one-shot calls.
    public func makeAEADKey(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer) throws -> any AEADKey {
        try software.makeAEADKey(algorithm, key: key)
    }

    /// A cipher stream whose backend is chosen by the size of its first ``CipherStream/update(_:into:)``.
    public func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?
    ) throws -> any CipherStream {
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        guard software.supports(.cipher(spec.algorithm, spec.mode)) else {
            throw CryptoError(.unsupported, "no backend offers \(spec)")
        }
        return DispatchCipherStream(self, direction, spec, key: key, iv: iv)
    }

    /// A digest stream whose backend is chosen by the size of its first update.
    public func makeDigestStream(_ algorithm: DigestAlgorithm) throws -> any DigestStream {
        DispatchDigestStream(self, algorithm, key: nil)
    }

    /// An HMAC stream whose backend is chosen by the size of its first update.
    public func makeHMACStream(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any DigestStream {
        guard algorithm.supportsHMAC else { throw CryptoError(.unsupported, "no HMAC over \(algorithm)") }
        return DispatchDigestStream(self, algorithm, key: key)
    }

    // MARK: Internals

    private static func encode(_ policy: DispatchPolicy) -> Int {
        switch policy {
        case .auto: 0
        case .software: 1
        case .kernel: 2
        }
    }

    private static func decode(_ value: Int) -> DispatchPolicy {
        switch value {
        case 1: .software
        case 2: .kernel
        default: .auto
        }
    }

    /// A route's threshold and why: explicit setting, else the profile, else the defaults.
    static func resolve(_ route: Route, _ configuration: DispatchConfiguration, kernelBinds: Bool) -> (Int?, String) {
        if let explicit = configuration.thresholds[route] {
            return (explicit, explicit.map { "configured: \($0) bytes" } ?? "configured: never")
        }
        if let profile = configuration.profile, let calibrated = profile.thresholds[route.name] {
            let why = profile.reasons[route.name].map { ": \($0)" } ?? ""
            return (calibrated, "calibrated \(profile.created)" + why)
        }
        guard let engineDefault = DispatchConfiguration.engineDefaults[route.name] else {
            return (nil, "not an engine operation: enable it with a threshold")
        }
        guard kernelBinds else {
            return (nil, KernelBackend.unavailableReason ?? "the kernel does not offer \(route.operation)")
        }
        let kernelName = KernelAlgorithmNames.name(for: route.operation) ?? ""
        let registry = KernelBackend.registry
        if registry.isServedByCPU(kernelName) ?? true {
            let driver = registry.driver(for: kernelName) ?? "an unlisted driver"
            return (nil, "\(kernelName) is served by \(driver), CPU code: the kernel cannot beat in-process software")
        }
        return (engineDefault, "engine default (\(registry.driver(for: kernelName) ?? "?")): \(engineDefault) bytes")
    }
}
