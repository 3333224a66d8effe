public import CryptoContract
import Foundation
import CDispatcherThreadState
import KernelBackend
public import SoftwareBackend
import Synchronization

/// Routes every call to the software backend or to one of the offload backends plugged into it, by operation,
/// algorithm and size.
///
/// Software (OpenSSL) is always there and is the fallback. Each offload backend (``OffloadBackend``: the kernel
/// by default, any other a program plugs in) has, per route, a threshold from which it takes the work: an
/// explicit setting, else a calibrated profile (``Calibration``), else the engine defaults where the backend
/// runs the route on an engine — never where it would run the same CPU instructions as OpenSSL. Where several
/// offload backends could take a call, the one whose calibrated cost (``CallCost``) is lowest at that size does.
///
/// Adaptive (the default): where a route's threshold was not set explicitly and the backend runs it on an engine,
/// the threshold only seeds a ``CostModel`` that learns each backend's cost from the calls it serves, per size class,
/// from ``explorationFloor`` up; each call goes to the backend cheapest under the configured ``DispatchGoal``, and the
/// other is probed on a bounded share of calls, so that a shared engine that slows down is left and one that speeds
/// up is taken again.
///
/// A call an offload backend reports unavailable is served by software with identical output; any other
/// error is thrown. Counters record which backend served each call.
///
/// Thread-safe; routing reads atomics only (and, where several offload backends qualify statically, their costs).
public final class Dispatcher: CryptoBackend, @unchecked Sendable {
    // @unchecked: the tables behind the unsafe pointers are allocated in init, freed in deinit, and only
    // accessed through atomics in between; everything else is immutable or a Mutex.

    /// The process-wide dispatcher: configured from the environment and the persisted profile at first use,
    /// with the default offload backends. What the environment got wrong is in ``environmentWarnings`` and is
    /// printed to stderr at this first use (once per process).
    public static let shared: Dispatcher = {
        reportEnvironmentWarnings()
        let backends = defaultBackends
        var (configuration, _) = DispatchConfiguration.fromEnvironment()
        if case .loaded(let profile) = DispatchProfile.load(expecting: .current(for: backends)) {
            configuration.profile = profile
        }
        return Dispatcher(configuration, backends: backends)
    }()

    /// What ``shared`` could not use from the environment (printed once to stderr, at ``shared``'s first use or
    /// by ``reportEnvironmentWarnings()``, whichever comes first).
    public static let environmentWarnings: [String] = DispatchConfiguration.fromEnvironment().warnings

    /// Prints ``environmentWarnings`` to stderr, once per process.
    public static func reportEnvironmentWarnings() { _ = warnedOnce }
    private static let warnedOnce: Void = {
        for warning in environmentWarnings {
            FileHandle.standardError.write(Data("securityservices: \(warning)\n".utf8))
        }
    }()

    /// The offload backends of a dispatcher built without a list: the kernel crypto API.
    public static var defaultBackends: [any OffloadBackend] { [KernelBackend()] }

    public let kind = BackendKind(name: "dispatch")
    public let software = SoftwareBackend()
    /// The offload backends, in the order they were given.
    public let backends: [any OffloadBackend]

    private let policyCode: Atomic<Int>
    private let policyValue: Mutex<DispatchPolicy>
    /// Offload backends per route: the tables below are indexed `route.index * width + backend`.
    private let width: Int
    /// Per route and backend: the threshold in bytes, `Int.max` for never.
    private let thresholds: UnsafeMutablePointer<Atomic<Int>>
    /// Per route and backend: the threshold auto mode applies, `Int.max` also where the backend does not serve.
    private let effectiveThresholds: UnsafeMutablePointer<Atomic<Int>>
    /// Per route, the size from which a call may leave software: the lowest effective threshold of its backends
    /// under auto (`Int.max`: never), 0 under any other policy. The hot path's one load and compare; a call that
    /// passes is routed in full. Written only under `policyValue`'s lock (``updateGate(_:)``), so a policy and a
    /// threshold set at once cannot leave a gate that contradicts either.
    private let gates: UnsafeMutablePointer<Atomic<Int>>
    /// Per kind of call (ciphers, digests, HMAC): the counts' id while no route of the kind can leave software (auto
    /// with every gate of the kind `Int.max`, or the software policy), else `Int.min`, which no thread holds. Compared
    /// with the id of the dispatcher this thread counted for last, one compare says both that the call stays in
    /// software and that the thread's count block is this dispatcher's: the call is then the software call and an
    /// increment, with no gate and no size read, in a function whose frame holds nothing else (written with the
    /// gates, by ``updateGate(_:)``).
    let softwareOnlyCiphers: Atomic<Int>
    let softwareOnlyDigests: Atomic<Int>
    let softwareOnlyHMACs: Atomic<Int>
    /// Software's count slot of a cipher call, by its operation's index (``CryptoOperation/index``) and direction:
    /// `index * 2 + (decrypt ? 1 : 0)`. Fixed at init: the software-only path's count is one load from it, where
    /// ``Route/cipher(_:_:_:)``'s family and mode tests were about twenty instructions.
    let cipherCountSlots: UnsafeMutablePointer<Int>
    /// Per backend (software first), per route plus one "no route" slot: calls served (see ``record(_:backend:)``).
    private let counts: CallCounts
    /// Per route and backend: the size from which the cost model may send calls there, `Int.max` where the route is
    /// kept to its threshold (not adaptive, an explicit threshold, or not an engine).
    private let floors: UnsafeMutablePointer<Atomic<Int>>
    private let model: CostModel
    /// Per route: 1 where auto mode learns it (some backend's floor is set), else 0; written with the gates.
    private let learning: UnsafeMutablePointer<Atomic<Int>>
    /// What the learned costs are compared for.
    public let goal: DispatchGoal
    /// Per route and backend: where the backend would run it (probed once, at init).
    private let placements: [OffloadPlacement]
    /// Per route and backend: the calibrated cost, where known.
    private let costs: Mutex<[Int: CallCost]>
    private let reasons: Mutex<[Int: String]>

    /// A dispatcher over software and `backends`.
    /// - Parameters:
    ///   - configuration: policy, explicit thresholds and a profile.
    ///   - backends: the offload backends; two with the same ``BackendKind`` name keep the first.
    public init(_ configuration: DispatchConfiguration = DispatchConfiguration(), backends: [any OffloadBackend] = defaultBackends) {
        var seen: Set<String> = [BackendKind.software.name, "auto"]
        let backends = backends.filter { seen.insert($0.kind.name).inserted }
        self.backends = backends
        width = backends.count
        let slots = Route.count * width
        placements = Route.all.flatMap { route in backends.map { $0.placement(of: route.operation) } }
        thresholds = .allocate(capacity: max(slots, 1))
        effectiveThresholds = .allocate(capacity: max(slots, 1))
        gates = .allocate(capacity: Route.count)
        floors = .allocate(capacity: max(slots, 1))
        learning = .atomics(count: Route.count, value: 0)
        model = CostModel(offloadBackends: width, goal: configuration.goal)
        goal = configuration.goal
        counts = CallCounts(slots: (Route.count + 1) * (width + 1))
        softwareOnlyCiphers = Atomic(Int.min)
        softwareOnlyDigests = Atomic(Int.min)
        softwareOnlyHMACs = Atomic(Int.min)
        cipherCountSlots = .allocate(capacity: CipherAlgorithm.indexCount * CipherMode.indexCount * 2)
        for algorithm in CipherAlgorithm.allCases {
            for mode in CipherMode.allCases {
                for direction in CipherDirection.allCases {
                    let slot = Self.countSlot(Route.cipher(algorithm, mode, direction), backend: -1)
                    (cipherCountSlots + Self.cipherCountIndex(algorithm, mode, direction)).initialize(to: slot)
                }
            }
        }
        var reasons: [Int: String] = [:]
        var costs: [Int: CallCost] = [:]
        for route in Route.all {
            for (index, backend) in backends.enumerated() {
                let slot = route.index * width + index
                let (threshold, reason) = Self.resolve(route, backend.kind, placements[slot], configuration)
                (thresholds + slot).initialize(to: Atomic(threshold ?? Int.max))
                (effectiveThresholds + slot).initialize(to: Atomic(placements[slot].isAvailable ? threshold ?? Int.max : Int.max))
                reasons[slot] = reason
                let explicit = Self.explicitThreshold(route, backend.kind, configuration) != nil
                let adapts = configuration.adaptive && !explicit && placements[slot].isEngine
                (floors + slot).initialize(to: Atomic(adapts ? Self.floor(threshold) : Int.max))
                if let cost = configuration.profile?.backends[backend.kind.name]?.costs[route.name] {
                    costs[slot] = cost
                    if adapts {
                        model.seed(route, backend: index, cost, software: configuration.profile?.softwareCosts[route.name], threshold: threshold)
                    }
                }
            }
            (gates + route.index).initialize(to: Atomic(Int.max))
        }
        self.reasons = Mutex(reasons)
        self.costs = Mutex(costs)
        policyValue = Mutex(configuration.policy)
        policyCode = Atomic(0)
        policyCode.store(code(of: configuration.policy), ordering: .relaxed)
        for route in Route.all { updateGate(route) }
    }

    deinit {
        thresholds.deinitialize(count: Route.count * width)
        thresholds.deallocate()
        effectiveThresholds.deinitialize(count: Route.count * width)
        effectiveThresholds.deallocate()
        gates.deinitialize(count: Route.count)
        gates.deallocate()
        floors.deinitialize(count: Route.count * width)
        floors.deallocate()
        learning.free(count: Route.count)
        cipherCountSlots.deallocate()
    }

    // MARK: Configuration

    /// The policy. Setting one that names no plugged-in backend sends everything to software.
    public var policy: DispatchPolicy {
        get { policyValue.withLock { $0 } }
        set {
            policyValue.withLock { policy in
                policy = newValue
                policyCode.store(code(of: newValue), ordering: .relaxed)
                for route in Route.all { updateGate(route) }
            }
        }
    }

    /// The threshold of `route` on `backend` in bytes, `nil` when auto mode never sends it there.
    public func threshold(for route: Route, on backend: BackendKind = .kernel) -> Int? {
        guard let slot = slot(route, backend) else { return nil }
        let value = thresholds[slot].load(ordering: .relaxed)
        return value == Int.max ? nil : value
    }

    /// Sets (or, with `nil`, disables) a route's threshold on `backend`. Enabling a route beyond the phone
    /// engine's set is how other offloaded algorithms are turned on.
    /// - Returns: `false` (and changes nothing) when no such backend is plugged in or `bytes` is negative.
    @discardableResult
    public func setThreshold(_ bytes: Int?, for route: Route, on backend: BackendKind = .kernel) -> Bool {
        setThreshold(
            bytes, for: route, on: backend, reason: bytes.map { "set through the API: \($0) bytes" } ?? "disabled through the API",
            explicit: true)
    }

    /// Sets a threshold; an `explicit` one makes the route static on `backend`, a calibrated one moves its floor.
    @discardableResult
    func setThreshold(_ bytes: Int?, for route: Route, on backend: BackendKind, reason: String, explicit: Bool) -> Bool {
        guard let slot = slot(route, backend), (bytes ?? 0) >= 0 else { return false }
        thresholds[slot].store(bytes ?? Int.max, ordering: .relaxed)
        effectiveThresholds[slot].store(placements[slot].isAvailable ? bytes ?? Int.max : Int.max, ordering: .relaxed)
        if explicit || floors[slot].load(ordering: .relaxed) == Int.max {
            floors[slot].store(Int.max, ordering: .relaxed)
        } else {
            floors[slot].store(Self.floor(bytes), ordering: .relaxed)
        }
        policyValue.withLock { _ in updateGate(route) }
        reasons.withLock { $0[slot] = reason }
        return true
    }

    /// Records a calibrated cost of `route` on `backend`, compared when several backends could take a call.
    public func setCost(_ cost: CallCost?, for route: Route, on backend: BackendKind) {
        guard let slot = slot(route, backend) else { return }
        costs.withLock { $0[slot] = cost }
    }

    /// The smallest call an engine's route is learned and probed from, unless its threshold is lower: below it, the
    /// system calls alone of an offloaded call cost more than software's whole work on any CPU (the phone's engine,
    /// too, took AES from 1 KiB). Calls below the floor stay in software without being timed.
    public static let explorationFloor = 1024

    /// The floor of an adapting route whose threshold is `threshold` (nil: never).
    private static func floor(_ threshold: Int?) -> Int { min(threshold ?? Int.max, explorationFloor) }

    /// Whether auto mode follows learned costs for `route` on `backend` (rather than its threshold alone).
    public func adapts(_ route: Route, on backend: BackendKind = .kernel) -> Bool {
        guard let slot = slot(route, backend) else { return false }
        return floors[slot].load(ordering: .relaxed) != Int.max
    }

    /// What the dispatcher has learned a call of `size` bytes on `route` costs on `backend` (software included), in
    /// nanoseconds; `nil` while nothing is known.
    public func learnedCost(_ route: Route, size: Int, on backend: BackendKind) -> Double? {
        let index = backend == .software ? -1 : backends.firstIndex { $0.kind == backend }
        guard let index, let perKiB = model.cost(route, sizeClass: CostModel.sizeClass(size), backend: index) else { return nil }
        return Double(perKiB) * Double(size) / 1024
    }

    /// Seeds the model afresh from a calibration's costs and thresholds: each route it measured is forgotten once,
    /// then seeded for every backend it adapts on (forgetting per result would drop the seeds of the backends before).
    func reseed(from results: [Calibration.RouteResult]) {
        for route in Set(results.map(\.route)) { model.forget(route) }
        for result in results where adapts(result.route, on: result.backend) {
            guard let cost = result.cost, let index = backends.firstIndex(where: { $0.kind == result.backend }) else { continue }
            model.seed(result.route, backend: index, cost, software: result.softwareCost, threshold: result.threshold)
        }
    }

    /// Forgets every learned and seeded cost: the thresholds decide until each backend has been timed again.
    public func forgetLearnedCosts() {
        for route in Route.all { model.forget(route) }
    }

    /// Why `route` has its threshold on `backend`.
    public func reason(for route: Route, on backend: BackendKind = .kernel) -> String {
        guard let slot = slot(route, backend) else { return "no backend named \(backend) is plugged in" }
        return reasons.withLock { $0[slot] ?? "" }
    }

    /// Where `backend` would run `route` on this machine.
    public func placement(of route: Route, on backend: BackendKind = .kernel) -> OffloadPlacement {
        guard let slot = slot(route, backend) else { return .absent("no backend named \(backend) is plugged in") }
        return placements[slot]
    }

    /// Whether `backend` can serve `route` on this machine.
    public func serves(_ route: Route, on backend: BackendKind = .kernel) -> Bool {
        placement(of: route, on: backend).isAvailable
    }

    // MARK: Counters

    /// How many calls each backend served, per route (``Route/name``, or `other` for operations no offload
    /// backend serves).
    public struct Counters: Sendable, Equatable {
        /// Backend name → route name → calls.
        public var calls: [String: [String: Int]]

        /// Calls `backend` served on `route` (`nil`: the "other" operations).
        public func count(_ backend: BackendKind, _ route: Route?) -> Int {
            calls[backend.name]?[route?.name ?? "other", default: 0] ?? 0
        }

        /// Calls `backend` served on every route.
        public func total(_ backend: BackendKind) -> Int { calls[backend.name]?.values.reduce(0, +) ?? 0 }
    }

    public var counters: Counters {
        var result = Counters(calls: [:])
        let counts = self.counts.values()
        let kinds = [BackendKind.software] + backends.map(\.kind)
        for slot in 0...Route.count {
            let name = slot == Route.count ? "other" : Route.all[slot].name
            for (index, kind) in kinds.enumerated() {
                let count = counts[Self.countSlot(slot, backend: index - 1)]
                if count > 0 { result.calls[kind.name, default: [:]][name] = count }
            }
        }
        return result
    }

    public func resetCounters() {
        counts.reset()
    }

    // MARK: Routing

    /// The backend a call of `size` bytes on `route` goes to under the current policy.
    public func chosenBackend(_ route: Route?, size: Int) -> BackendKind {
        let index = choice(route, size: size).backend
        return index < 0 ? .software : backends[index].kind
    }

    /// The offload backend's index for a call (-1 for software), and what its time teaches the model (nil: the call
    /// is not timed; a call `due` for timing may be a probe, and so may any call while a probe is under way).
    @inline(__always)
    func choice(_ route: Route?, size: Int, timing: CostModel.Timing = .never) -> (backend: Int, sample: CostModel.Sample?) {
        let regular = timing.regularSample
        guard let route else { return (-1, regular) }
        let code = policyCode.load(ordering: .relaxed)
        if code == 0 {
            return size >= gates[route.index].load(ordering: .relaxed) ? autoChoice(route, size: size, timing: timing) : (-1, regular)
        }
        return (forcedChoice(route, code: code), regular)
    }

    /// Auto mode past the gate: a backend whose threshold was set explicitly and is reached takes the call; else the
    /// cost model chooses among the backends whose floor `size` reaches, the thresholds deciding while it knows too
    /// little.
    private func autoChoice(_ route: Route, size: Int, timing: CostModel.Timing) -> (backend: Int, sample: CostModel.Sample?) {
        let row = route.index * width
        let regular = timing.regularSample
        var learning = false
        for index in 0..<width {
            let floor = floors[row + index].load(ordering: .relaxed)
            if floor != Int.max {
                learning = learning || size >= floor
            } else if size >= effectiveThresholds[row + index].load(ordering: .relaxed) {
                return (cheapest(route, size: size), regular)
            }
        }
        guard learning else { return (cheapest(route, size: size), regular) }
        return model.choose(
            route, size: size, allowed: { size >= self.floors[row + $0].load(ordering: .relaxed) },
            fallback: cheapest(route, size: size), timing: timing)
    }

    /// A policy other than auto: the forced backend where it serves the route, else software. Out of line, like
    /// everything but the auto path's compare: what a routed call inlines decides its frame and its register saves.
    @inline(never)
    private func forcedChoice(_ route: Route, code: Int) -> Int {
        let forced = code - 2
        return forced >= 0 && placements[route.index * width + forced].isAvailable ? forced : -1
    }

    /// Among the backends whose threshold `size` reaches, the one with the lowest calibrated cost at `size`
    /// (where some cost is unknown, the one with the highest threshold: it claimed the larger sizes).
    private func cheapest(_ route: Route, size: Int) -> Int {
        var chosen = -1
        var chosenThreshold = -1
        var candidates = 0
        for index in 0..<width {
            let threshold = effectiveThresholds[route.index * width + index].load(ordering: .relaxed)
            guard size >= threshold else { continue }
            candidates += 1
            if threshold > chosenThreshold { (chosen, chosenThreshold) = (index, threshold) }
        }
        guard candidates > 1 else { return chosen }
        return costs.withLock { costs in
            var best = (index: chosen, nanoseconds: Double.infinity)
            for index in 0..<width where size >= effectiveThresholds[route.index * width + index].load(ordering: .relaxed) {
                guard let cost = costs[route.index * width + index] else { return chosen }
                let nanoseconds = cost.nanoseconds(size: size)
                if nanoseconds < best.nanoseconds { best = (index, nanoseconds) }
            }
            return best.index
        }
    }

    /// Counts a call `backend` (-1: software) served on `route` (`nil`: "other").
    @inline(__always)
    func record(_ route: Route?, backend: Int) {
        counts.increment(Self.countSlot(route, backend: backend))
    }

    /// A cipher call's place in `cipherCountSlots`.
    @inline(__always)
    static func cipherCountIndex(_ algorithm: CipherAlgorithm, _ mode: CipherMode, _ direction: CipherDirection) -> Int {
        (algorithm.index &* CipherMode.indexCount &+ mode.index) &* 2 &+ (direction == .encrypt ? 0 : 1)
    }

    /// The count slot (below) of `route`, `nil` being "other".
    @inline(__always)
    static func countSlot(_ route: Route?, backend: Int) -> Int {
        countSlot(route?.index ?? Route.count, backend: backend)
    }

    /// Where `backend`'s (-1: software) count for a route (`Route.count`: "other") sits in the count blocks: backend
    /// by backend, software first, so software's slot of a route is the route's index, no multiply on the hot path.
    @inline(__always)
    static func countSlot(_ routeSlot: Int, backend: Int) -> Int {
        (backend &+ 1) &* (Route.count &+ 1) &+ routeSlot
    }

    /// Whether a call may leave software: a size at the route's gate (a policy other than auto makes every gate 0).
    /// One load and a compare, in the `routed…` functions, out of line behind the kind's software-only check. A call
    /// that passes goes to its out-of-line `…Away` function; the rest of the call is the software call (its body
    /// inlined: ``SoftwareBackend/validatedOneShotCrypt(_:_:key:iv:input:output:)``,
    /// ``SoftwareBackend/oneShotDigest(_:input:output:succeeding:)``) and the count, so the frame holds nothing else:
    /// the offload path's values and closures had made it three times the software backend's.
    @inline(__always)
    func mayOffload(_ route: Route, size: Int) -> Bool {
        size >= gates[route.index].load(ordering: .relaxed)
    }

    /// The rest of a call ``mayOffload(_:size:)`` let through: `offload` on the chosen offload backend, else (none
    /// chosen, or it reports the operation unavailable) `software`; counts the backend that served, and times the call
    /// for the cost model where the route adapts (calls under ``CostModel/alwaysTimed`` one in
    /// ``CostModel/sampleEvery``). Inlined into the `…Away` functions, themselves out of line.
    @inline(__always)
    func routeAway<R>(
        _ route: Route, size: Int, _ offload: (any CryptoBackend) throws -> R, software onSoftware: () throws -> R
    ) throws -> R {
        let timing: CostModel.Timing =
            learning[route.index].load(ordering: .relaxed) == 0 ? .never
            : size >= CostModel.alwaysTimed || dispatcher_tick() % UInt(CostModel.sampleEvery) == 0 ? .due : .ifProbing
        let (chosen, sample) = choice(route, size: size, timing: timing)
        let started = sample != nil ? CostModel.now() : nil
        if chosen >= 0, let result = try offloaded(route, size: size, to: chosen, started: started, sample, offload) { return result }
        let result = try onSoftware()
        if let started, let sample {
            let ended = CostModel.now()
            model.learn(route, size: size, backend: -1, nanoseconds: ended &- started, ended: ended, sample: sample)
        }
        record(route, backend: -1)
        return result
    }

    /// The streams' choice, made once per stream by the size of its first update: the current choice, untimed (what
    /// a stream's creation costs says nothing of its backend's speed); software (counted as "other") without a route.
    func route<R>(
        _ route: Route?, size: Int, offload: (any CryptoBackend) throws -> R, software onSoftware: () throws -> R
    ) throws -> R {
        let chosen = choice(route, size: size).backend
        if chosen >= 0, let result = try offloaded(route, size: size, to: chosen, started: nil, nil, offload) { return result }
        let result = try onSoftware()
        record(route, backend: -1)
        return result
    }

    /// The offload backend `chosen` runs the call; `nil` when it reports the operation unavailable. Out of line:
    /// the existential call and the error match would otherwise widen every software call's frame.
    @inline(never)
    private func offloaded<R>(
        _ route: Route?, size: Int, to chosen: Int, started: Int?, _ sample: CostModel.Sample?,
        _ offload: (any CryptoBackend) throws -> R
    ) throws -> R? {
        do {
            let result = try offload(backends[chosen])
            if let started, let sample, let route {
                let ended = CostModel.now()
                model.learn(route, size: size, backend: chosen, nanoseconds: ended &- started, ended: ended, sample: sample)
            }
            record(route, backend: chosen)
            return result
        } catch let error as CryptoError where error.code == .notAvailable {
            // Not here after all (a module unloaded, a key size the engine lacks): software answers the same.
            if let route { model.learnUnavailable(route, size: size, backend: chosen) }
            return nil
        }
    }

    // MARK: Internals

    private func slot(_ route: Route, _ backend: BackendKind) -> Int? {
        backends.firstIndex { $0.kind == backend }.map { route.index * width + $0 }
    }

    /// 0 auto, 1 software (also for a backend that is not plugged in), 2 + index for a forced backend.
    private func code(of policy: DispatchPolicy) -> Int {
        if policy == .auto { return 0 }
        return backends.firstIndex { $0.kind.name == policy.name }.map { $0 + 2 } ?? 1
    }

    /// Sets `route`'s gate from the policy and its backends' thresholds, then its kind's software-only key (the
    /// counts' id or `Int.min`, see `softwareOnlyCiphers`). Called with `policyValue`'s lock held (or from `init`),
    /// after the value that changed was stored; the thread that changed it sees the change from its next call.
    private func updateGate(_ route: Route) {
        let code = policyCode.load(ordering: .relaxed)
        let lowest = (0..<width).map {
            min(effectiveThresholds[route.index * width + $0].load(ordering: .relaxed), floors[route.index * width + $0].load(ordering: .relaxed))
        }.min()
        gates[route.index].store(code != 0 ? 0 : lowest ?? Int.max, ordering: .relaxed)
        let learns = code == 0 && (0..<width).contains { floors[route.index * width + $0].load(ordering: .relaxed) != Int.max }
        learning[route.index].store(learns ? 1 : 0, ordering: .relaxed)
        let kind = route.kind
        let stays = code == 1 || code == 0 && kind.indexes.allSatisfy { gates[$0].load(ordering: .relaxed) == Int.max }
        let key = stays ? counts.id : Int.min
        switch kind {
        case .cipher: softwareOnlyCiphers.store(key, ordering: .relaxed)
        case .digest: softwareOnlyDigests.store(key, ordering: .relaxed)
        case .hmac: softwareOnlyHMACs.store(key, ordering: .relaxed)
        }
    }

    /// A threshold set in `configuration` for `route` on `backend` (for that backend, else for all): `.some(nil)` for
    /// "never", nil where none is set.
    static func explicitThreshold(_ route: Route, _ backend: BackendKind, _ configuration: DispatchConfiguration) -> Int?? {
        configuration.backendThresholds[backend.name]?[route] ?? configuration.thresholds[route]
    }

    /// A route's threshold on a backend and why: explicit setting (for that backend, then for all), else the
    /// profile, else the engine defaults where the backend runs the route on an engine.
    static func resolve(
        _ route: Route, _ backend: BackendKind, _ placement: OffloadPlacement, _ configuration: DispatchConfiguration
    ) -> (Int?, String) {
        if let explicit = explicitThreshold(route, backend, configuration) {
            return (explicit, explicit.map { "configured: \($0) bytes" } ?? "configured: never")
        }
        if let calibrated = configuration.profile?.backends[backend.name], let threshold = calibrated.thresholds[route.name] {
            let why = calibrated.reasons[route.name].map { ": \($0)" } ?? ""
            return (threshold, "calibrated \(configuration.profile?.created ?? "")" + why)
        }
        guard let engineDefault = DispatchConfiguration.engineDefaults[route.name] else {
            return (nil, "not an engine operation: enable it with a threshold")
        }
        guard placement.isAvailable else { return (nil, placement.detail) }
        guard placement.isEngine else {
            return (nil, "\(route.operation) is served by \(placement.detail), CPU code: \(backend) cannot beat in-process software")
        }
        return (engineDefault, "engine default (\(placement.detail)): \(engineDefault) bytes")
    }
}
