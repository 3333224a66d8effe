import CryptoContract
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What "best" means when the dispatcher chooses a backend.
public enum DispatchGoal: Hashable, Sendable, CustomStringConvertible {
    /// The backend that takes the least time per call (the default).
    case throughput
    /// An offload backend whenever its time per call is within `tolerance` of software's (0.25: up to 25 % slower):
    /// the CPU time the engine frees is worth that much. An engine's point is as often the CPU it frees as its speed.
    case freeCPU(tolerance: Double)

    /// `throughput`, or `free-cpu` with an optional tolerance in percent (`free-cpu:25`, the default 25).
    public init?(name: String) {
        let parts = name.lowercased().split(separator: ":", maxSplits: 1).map(String.init)
        switch parts.first {
        case "throughput" where parts.count == 1: self = .throughput
        case "free-cpu":
            guard let percent = parts.count == 2 ? Double(parts[1]) : 25, percent >= 0, percent <= 1000 else { return nil }
            self = .freeCPU(tolerance: percent / 100)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .throughput: "throughput"
        case .freeCPU(let tolerance): "free-cpu:\(Int((tolerance * 100).rounded()))"
        }
    }

    /// What an offload backend's cost is divided by before it is compared with software's.
    var offloadAdvantage: Double {
        switch self {
        case .throughput: 1
        case .freeCPU(let tolerance): 1 + tolerance
        }
    }
}

/// Each backend's cost per route and size class, learned from the calls the dispatcher serves.
///
/// A size class is a power of two (`[2^k, 2^(k+1))`). Its cost is a mean of nanoseconds per KiB over the timed calls of
/// that class, learned a window of calls at a time (``WindowedMeans``), so a backend that slows down or speeds up moves
/// it within two windows. Calls are timed one in ``sampleEvery`` below ``alwaysTimed`` bytes (two clock reads cost more
/// than a small call's routing) and always above it. A sample is the call's wall time as its caller saw it, queueing
/// and preemption included. Beside it the model learns each backend's share of throughput (see
/// ``learn(_:size:backend:nanoseconds:ended:sample:)``), which is what tells backends apart when calls overlap.
///
/// The backend not chosen is probed now and then, so that one that got cheaper is noticed: once its route and class's
/// probe is due, the next ``probeBurst`` calls (fewer long ones, more where callers overlap) go to it back to back,
/// each timed, sampled or not (one call's time is too noisy to decide a phase on, a wake-up late on a busy CPU), and
/// the burst's least time replaces its mean: the first calls of a thread that was busy on the CPU until then wake late
/// (the scheduler credits sleep only once the thread has waited a while), and must not hide a backend that got cheaper.
/// Probes are paid for from the class's own time, twice over: each call served regularly adds its time to the class's
/// probe credit, and a probe is due once the credit covers ``probeBudgetInverse`` times what the burst is expected to
/// cost at the current means (reckoned when the call comes, so a probe scheduled while both backends cost about the
/// same does not run at once after one turned expensive) and at least ``minimumProbeInterval``; then each probe call
/// takes from the credit that many times what it actually cost beyond the chosen backend's mean, and so does each call
/// the probed backend then serves in its first window (a lucky least time hands it the calls until its own samples say
/// otherwise). The expectation keeps the first probe far from the crossover rare; the actual cost keeps probes of an
/// engine whose waits vary (whose burst's least time, optimistic on purpose, says little of what the burst cost) within
/// budget. The expectation fades with the age of what it was reckoned from (``staleHalfLife``): a mean the probed
/// backend earned under load that has passed would otherwise put its probe off for as long as the load had made it
/// dear. So probing costs at most about 1 % of the time spent in that class, however busy the caller is otherwise: near
/// the crossover, where the backends cost about the same, probes are cheap and frequent; far from it, rare.
///
/// Thread-safe without locks: each value is one atomic; a mean updated by two threads at once may lose a sample.
final class CostModel: @unchecked Sendable {
    // @unchecked: the tables are allocated in init, freed in deinit and only accessed through atomics in between.

    /// Size classes: up to 2^(classCount - 1) bytes, larger sizes in the last.
    static let classCount = 32
    /// Calls below this size are timed one in ``sampleEvery``; from it, every call.
    static let alwaysTimed = 16 * 1024
    static let sampleEvery = 8

    /// The calls a timed call of `size` bytes stands for.
    @inline(__always)
    static func callsPerSample(_ size: Int) -> Int { size < alwaysTimed ? sampleEvery : 1 }
    static let probeBudgetInverse = 100
    /// Calls in a probe: enough for a thread that was busy on the CPU to be woken as promptly as one that waits on an
    /// engine all along (the scheduler credits sleep), so that an engine is not judged by the first waits; fewer where
    /// they would last longer than ``probeBurstTime``, at least two.
    static let probeBurst = 8
    /// Nanoseconds: what late wake-ups amount to is a few milliseconds, which longer calls outlast; a burst of those
    /// at full length would make each probe dear enough to come once in tens of seconds.
    static let probeBurstTime = 16_000_000

    /// The most callers a probe's burst is lengthened for.
    static let maximumOverlap = 8

    /// The calls in a probe's burst of a backend expected to take `nanoseconds` a call, for one caller.
    @inline(__always)
    static func burstLength(nanoseconds: Double) -> Int {
        max(2, min(probeBurst, Int(min(Double(probeBurstTime) / max(nanoseconds, 1), Double(probeBurst)))))
    }
    /// Nanoseconds.
    static let minimumProbeInterval = 2_000_000
    /// Nanoseconds: how long a backend not in use keeps the weight of what it was measured to cost when its probe is
    /// reckoned; the expected cost beyond the chosen backend halves with each such time since its last timed call.
    static let staleHalfLife = 1_000_000_000

    /// What a timed call's time is for: the chosen backend's mean, or a probe's burst (the call's place in it, from 0:
    /// the first replaces the mean, the others lower it).
    enum Sample: Equatable {
        case regular
        case probe(Int)
    }

    /// Whether a call's time is wanted.
    enum Timing {
        /// A choice that serves no one call (a stream's, a query's): it joins no probe.
        case never
        /// A call its class does not sample: it still joins a probe under way, so that the burst's calls run back to
        /// back (a burst spread among the chosen backend's calls would time an engine woken after CPU-bound work at
        /// every call of it).
        case ifProbing
        /// A call its class samples.
        case due

        /// What a call that does not go through the model's choice is timed for: a regular sample when due.
        var regularSample: Sample? { self == .due ? .regular : nil }
    }

    /// Backends per route and class: software first, then the offload backends.
    let width: Int
    /// What "cheapest" means.
    let goal: DispatchGoal
    /// Per route, class and backend: nanoseconds per KiB (0: not known yet).
    private let costs: WindowedMeans
    /// Per route, class and backend: what a call takes of the backend's throughput, in nanoseconds per KiB — the time
    /// between the ends of its calls, over the calls each timed one stands for (0: not known yet). Below the mean of
    /// ``costs`` only when calls overlap (several callers); the cost a choice compares is the lower of the two.
    private let shares: WindowedMeans
    /// Per route, class and backend: when its last timed call ended (``now()``; 0: none yet).
    private let lastEnd: UnsafeMutablePointer<Atomic<Int>>
    /// Per route, class and backend: when its last regular timed call ended (0: none yet) — when it last had the
    /// calls, not a probe's burst.
    private let lastServed: UnsafeMutablePointer<Atomic<Int>>
    /// Per route and class: when the first call of the probe under way ended.
    private let burstStart: UnsafeMutablePointer<Atomic<Int>>
    /// Per route and class: the probe credit (nanoseconds), or ``unscheduled``.
    private let probeCredit: UnsafeMutablePointer<Atomic<Int>>
    /// No probe scheduled yet: the first timed call with every cost known schedules one, rather than probing at once
    /// (with seeded costs, a probe at the start would pay for what calibration already measured).
    private static let unscheduled = Int.min
    /// Per route and class: the probe under way, `calls in the burst << 16 | calls left << 8 | (backend + 2)`, 0 for
    /// none.
    private let probing: UnsafeMutablePointer<Atomic<Int>>
    private let tables: Int

    init(offloadBackends: Int, goal: DispatchGoal = .throughput) {
        width = offloadBackends + 1
        self.goal = goal
        tables = Route.count * Self.classCount
        costs = WindowedMeans(slots: tables * width)
        shares = WindowedMeans(slots: tables * width)
        lastEnd = .atomics(count: tables * width, value: 0)
        lastServed = .atomics(count: tables * width, value: 0)
        burstStart = .atomics(count: tables, value: 0)
        probeCredit = .atomics(count: tables, value: Self.unscheduled)
        probing = .atomics(count: tables, value: 0)
    }

    deinit {
        lastEnd.free(count: tables * width)
        lastServed.free(count: tables * width)
        burstStart.free(count: tables)
        probeCredit.free(count: tables)
        probing.free(count: tables)
    }

    @inline(__always)
    static func sizeClass(_ size: Int) -> Int {
        size <= 1 ? 0 : min(Int.bitWidth - 1 - size.leadingZeroBitCount, classCount - 1)
    }

    /// The monotonic clock in nanoseconds.
    @inline(__always)
    static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec &* 1_000_000_000 &+ time.tv_nsec
    }

    @inline(__always)
    private func table(_ route: Route, _ sizeClass: Int) -> Int { route.index &* Self.classCount &+ sizeClass }

    /// The learned cost of `backend` (-1: software) in nanoseconds per KiB, `nil` while unknown: the mean time of its
    /// calls, or, where calls overlap, the lower share of its throughput each takes.
    func cost(_ route: Route, sizeClass: Int, backend: Int) -> Int? {
        let value = cost(slot: table(route, sizeClass) * width + backend + 1)
        return value > 0 ? value : nil
    }

    /// A slot's cost (0: unknown), as ``cost(_:sizeClass:backend:)``.
    @inline(__always)
    private func cost(slot: Int) -> Int {
        let perCall = costs[slot], share = shares[slot]
        return share > 0 && share < perCall ? share : perCall
    }

    /// Seeds `backend`'s and software's costs from a calibration, where nothing was learned yet: the fitted lines
    /// give the magnitudes, the calibrated `threshold` (the measured crossover) which side is cheaper at each size —
    /// a line fitted from 16 B to 1 MiB can cross elsewhere, and a seed on the wrong side costs calls until the
    /// samples correct it.
    func seed(_ route: Route, backend: Int, _ cost: CallCost, software: CallCost?, threshold: Int?) {
        for sizeClass in 0..<Self.classCount {
            let size = (3 << sizeClass) >> 1
            var offload = cost.nanoseconds(size: size)
            if let software {
                let own = software.nanoseconds(size: size)
                offload = size >= (threshold ?? Int.max) ? min(offload, own / 1.1) : max(offload, own * 1.1)
                seed(route, sizeClass: sizeClass, backend: -1, nanoseconds: own, size: size)
            }
            seed(route, sizeClass: sizeClass, backend: backend, nanoseconds: offload, size: size)
        }
    }

    private func seed(_ route: Route, sizeClass: Int, backend: Int, nanoseconds: Double, size: Int) {
        let perKiB = Int((nanoseconds * 1024 / Double(size)).rounded())
        _ = costs.seed(table(route, sizeClass) * width + backend + 1, with: max(perKiB, 1))
    }

    /// Forgets everything learned (and seeded) for `route`.
    func forget(_ route: Route) {
        for sizeClass in 0..<Self.classCount {
            let base = table(route, sizeClass)
            for backend in 0..<width {
                costs.replace(base * width + backend, with: 0)
                shares.replace(base * width + backend, with: 0)
                lastEnd[base * width + backend].store(0, ordering: .relaxed)
                lastServed[base * width + backend].store(0, ordering: .relaxed)
            }
            probeCredit[base].store(Self.unscheduled, ordering: .relaxed)
            probing[base].store(0, ordering: .relaxed)
        }
    }

    /// The backend a call goes to among software and the offload backends `allowed` to serve it, and what its time
    /// is for (nil: it is not timed): the cheapest known one under the goal; while one of them is unknown, `fallback`
    /// (the static thresholds' choice). A call `due` for timing, or any call but a stream's while a probe is under
    /// way, goes to the backend the probe is timing; else a due call goes to a backend still unknown, else, if the
    /// route and class's probe is due, to the cheapest other one, and the next probe is scheduled.
    @inline(__always)
    func choose(
        _ route: Route, size: Int, allowed: (Int) -> Bool, fallback: Int, timing: Timing
    ) -> (backend: Int, sample: Sample?) {
        let row = table(route, Self.sizeClass(size))
        let base = row * width
        var best = (backend: -1, cost: Double.infinity)
        var runnerUp = best
        var unknown: Int?
        for backend in -1..<(width - 1) where backend < 0 || allowed(backend) {
            let learned = cost(slot: base + backend + 1)
            guard learned > 0 else {
                unknown = backend
                continue
            }
            let cost = judged(learned, backend: backend)
            if cost < best.cost {
                (runnerUp, best) = (best, (backend, cost))
            } else if cost < runnerUp.cost {
                runnerUp = (backend, cost)
            }
        }
        let settled = unknown == nil ? best.backend : fallback
        guard timing != .never else { return (settled, nil) }
        // A probe under way goes on; then a timed call learns an unknown backend at once, in a burst as a probe (its
        // first call may set up what the next ones reuse).
        let burst = probing + row
        let underWay = burst.pointee.load(ordering: .relaxed)
        if underWay != 0 {
            let length = underWay >> 16, callsLeft = underWay >> 8 & 0xff
            let next = callsLeft > 1 ? underWay &- (1 << 8) : 0
            if burst.pointee.compareExchange(expected: underWay, desired: next, ordering: .relaxed).exchanged {
                return (underWay & 0xff - 2, .probe(length - callsLeft))
            }
        }
        guard timing == .due else { return (settled, nil) }
        if let unknown {
            burst.pointee.store(Self.probeBurst << 16 | (Self.probeBurst - 1) << 8 | (unknown + 2), ordering: .relaxed)
            return (unknown, .probe(0))
        }
        let credit = probeCredit + row
        let available = credit.pointee.load(ordering: .relaxed)
        guard runnerUp.cost.isFinite else { return (best.backend, .regular) }
        guard available != Self.unscheduled else {
            _ = credit.pointee.compareExchange(expected: available, desired: 0, ordering: .relaxed)
            return (best.backend, .regular)
        }
        // What the burst costs its callers: their calls' times (a share of the throughput is not what a caller waits).
        let chosenPerKiB = costs[base + best.backend + 1]
        let probeCall = Double(costs[base + runnerUp.backend + 1]) * Double(size) / 1024
        let chosenCall = Double(chosenPerKiB) * Double(size) / 1024
        // Several callers join a burst one by one, as their calls on the chosen backend end: a burst as many times
        // longer as calls overlap there (the chosen backend's call time over its share) reaches their steady state.
        let chosenShare = shares[base + best.backend + 1]
        let overlap = chosenShare > 0 ? min(max(chosenPerKiB / chosenShare, 1), Self.maximumOverlap) : 1
        let length = Self.burstLength(nanoseconds: probeCall) * overlap
        let weight = freshness(of: base + runnerUp.backend + 1, against: base + best.backend + 1)
        let expected = max(probeCall - chosenCall, 0) * weight * Double(length * Self.probeBudgetInverse)
        guard available >= max(Self.minimumProbeInterval, Int(min(expected, 1e12))),
            credit.pointee.compareExchange(expected: available, desired: 0, ordering: .relaxed).exchanged
        else { return (best.backend, .regular) }
        burst.pointee.store(length << 16 | (length - 1) << 8 | (runnerUp.backend + 2), ordering: .relaxed)
        return (runnerUp.backend, .probe(0))
    }

    /// Learns that a call of `size` bytes took `nanoseconds` on `backend` (-1: software). Regular samples go into the
    /// backend's windowed mean (``WindowedMeans``): it includes the time lost to preemption on a busy CPU or to
    /// queueing on an engine as often as that comes, which is part of what a backend costs, while one call stalled for
    /// a long time cannot tip the choice alone. A probe's burst replaces the mean with its least time: if that was
    /// luck, the backend's own samples correct it within a window or two once it is chosen.
    ///
    /// With the time the call `ended` at, it also learns the backend's share: from a regular call, the time since the
    /// backend's last timed call ended over the calls each timed one stands for, into a mean moved as the other; from a
    /// probe, the time between its burst's first and last ends over the calls between. A lone caller's calls do not
    /// overlap, so its share is never below its mean time and changes nothing; several callers' calls do, and then what
    /// each takes of the throughput is what tells backends apart (an engine that is a queue makes each caller wait for
    /// the others' requests, the CPUs serve several at once), where a caller's wait alone would send everyone to the
    /// backend that looks quick to the one caller who tries it.
    @inline(__always)
    func learn(_ route: Route, size: Int, backend: Int, nanoseconds: Int, ended: Int? = nil, sample: Sample) {
        let perKiB = max(nanoseconds &* 1024 / max(size, 1), 1)
        let table = table(route, Self.sizeClass(size))
        if probeCredit[table].load(ordering: .relaxed) != Self.unscheduled {
            probeCredit[table].add(credit(table, size: size, backend: backend, nanoseconds: nanoseconds, sample: sample), ordering: .relaxed)
        }
        let slot = table * width + backend + 1
        if let ended {
            let previous = lastEnd[slot].exchange(ended, ordering: .relaxed)
            if sample == .regular { lastServed[slot].store(ended, ordering: .relaxed) }
            // Back in use after another backend had the calls for longer than a window of its calls takes: its mean
            // and its share are of another time; its next samples replace the mean, and the share is learned afresh.
            // (Its own calls far apart, none between on another, are of this time.)
            if sample == .regular, previous > 0,
                othersServed(table, besides: slot, since: previous) / Self.callsPerSample(size) > nanoseconds &* WindowedMeans.size
            {
                costs.restart(slot)
                shares.replace(slot, with: 0)
            } else {
                learnShare(table: table, slot: slot, size: size, ended: ended, previous: previous, sample: sample)
            }
        }
        switch sample {
        case .probe(0): costs.replace(slot, with: perKiB)
        case .probe: costs.lower(slot, to: perKiB)
        case .regular: costs.learn(slot, perKiB)
        }
    }

    /// How long other backends of the class had the calls after `previous`: from then to the last end of their
    /// regular calls (a probe's burst of theirs is not having the calls: the backend in use comes back from it as it
    /// was, and with several callers the burst can outlast a window of its calls).
    @inline(__always)
    private func othersServed(_ table: Int, besides slot: Int, since previous: Int) -> Int {
        var latest = previous
        for other in table * width..<(table + 1) * width where other != slot {
            latest = max(latest, lastServed[other].load(ordering: .relaxed))
        }
        return latest &- previous
    }

    /// The share part of ``learn(_:size:backend:nanoseconds:ended:sample:)``.
    @inline(__always)
    private func learnShare(table: Int, slot: Int, size: Int, ended: Int, previous: Int, sample: Sample) {
        switch sample {
        case .regular:
            guard previous > 0, ended > previous else { return }
            let perKiB = max((ended &- previous) / Self.callsPerSample(size) &* 1024 / max(size, 1), 1)
            shares.learn(slot, perKiB)
        case .probe(0):
            burstStart[table].store(ended, ordering: .relaxed)
            shares.replace(slot, with: 0)
        case .probe(let place):
            guard probing[table].load(ordering: .relaxed) == 0 else { return }
            // The burst ended (its last call was taken): the time from its first call's end to this one's over the
            // calls that ended in it. From the first end, not the first start: other callers join the burst as
            // their calls on the other backend end, and that changeover is not the probed backend's throughput.
            let span = ended &- burstStart[table].load(ordering: .relaxed)
            shares.replace(slot, with: max(span / place &* 1024 / max(size, 1), 1))
        }
    }

    /// How much a slot's mean still says beside the chosen backend's: it halves with each ``staleHalfLife`` between
    /// the slot's last timed call and the chosen one's (the clock of the class: no clock is read to choose); 1 where
    /// the slot was never timed (a seed is what calibration measured, not a measure of other times).
    @inline(__always)
    private func freshness(of slot: Int, against chosen: Int) -> Double {
        let last = lastEnd[slot].load(ordering: .relaxed)
        let age = lastEnd[chosen].load(ordering: .relaxed) &- last
        return last > 0 && age > 0 ? exp2(-Double(age) / Double(Self.staleHalfLife)) : 1
    }

    /// A cost as the goal judges it: an offload backend's divided by the goal's advantage.
    @inline(__always)
    private func judged(_ cost: Int, backend: Int) -> Double {
        backend < 0 ? Double(cost) : Double(cost) / goal.offloadAdvantage
    }

    /// What a call adds to its class's probe credit: a regular call its time (a timed call below ``alwaysTimed``
    /// stands for ``sampleEvery``); a probe call takes ``probeBudgetInverse`` times what it cost, as the goal judges
    /// it, beyond the cheapest other backend's mean. So does a regular call in its backend's first window (a probe's
    /// least time handed it the calls, or it took them back after another backend had them): when that was luck, the
    /// calls it held until its own samples said so are the probe's cost too, and cost more than the burst (a window of
    /// four timed calls).
    @inline(__always)
    private func credit(_ table: Int, size: Int, backend: Int, nanoseconds: Int, sample: Sample) -> Int {
        let calls = Self.callsPerSample(size)
        let earned = sample == .regular ? nanoseconds &* calls : 0
        guard sample != .regular || costs.inFirstWindow(table * width + backend + 1) else { return earned }
        var chosen = Double.infinity
        for other in -1..<(width - 1) where other != backend {
            let cost = costs[table * width + other + 1]
            if cost > 0 { chosen = min(chosen, judged(cost, backend: other)) }
        }
        guard chosen.isFinite else { return earned }
        let beyond = judged(nanoseconds, backend: backend) - chosen * Double(size) / 1024
        return earned &- Int(min(max(beyond, 0), 1e12)) &* Self.probeBudgetInverse &* (sample == .regular ? calls : 1)
    }

    /// Learns that `backend` cannot serve `route` at this size after all: a second a call, so that it is tried again
    /// only as a rare probe.
    func learnUnavailable(_ route: Route, size: Int, backend: Int) {
        let slot = table(route, Self.sizeClass(size)) * width + backend + 1
        costs.replace(slot, with: 1_000_000_000 * 1024 / max(size, 1))
        shares.replace(slot, with: 0)
    }
}

extension UnsafeMutablePointer where Pointee == Atomic<Int> {
    /// A table of `count` atomics, each `value` (the dispatcher's tables: allocated once, freed with ``free(count:)``).
    static func atomics(count: Int, value: Int) -> Self {
        let table = Self.allocate(capacity: count)
        for index in 0..<count { (table + index).initialize(to: Atomic(value)) }
        return table
    }

    func free(count: Int) {
        deinitialize(count: count)
        deallocate()
    }
}
