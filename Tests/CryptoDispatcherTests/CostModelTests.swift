@testable import CryptoDispatcher
import Testing

/// The cost model fed times the test chooses, so that what it learns from them is exact.
@Suite("The cost model: what it learns from the times of the calls it routed")
struct CostModelTests {
    let route = Route.cipher(.aes128, .cbc, .encrypt)!
    let size = 64 * 1024
    let engine = 0, software = -1

    /// Serves timed calls through `model` with each backend's time per call from `time` (backend, place in a probe
    /// burst or nil) until a probe burst of software ends; the software cost learned from the burst, in nanoseconds per
    /// KiB.
    func probeSoftware(_ model: CostModel, time: (Int, Int?) -> Int) throws -> Int {
        for _ in 0..<10_000 {
            let (backend, sample) = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .due)
            var place: Int?
            if case .probe(let at) = sample { place = at }
            model.learn(route, size: size, backend: backend, nanoseconds: time(backend, place), sample: try #require(sample, "a due call is timed"))
            if backend == software, place == CostModel.probeBurst - 1 {
                return try #require(model.cost(route, sizeClass: CostModel.sizeClass(size), backend: software))
            }
        }
        Issue.record("software was never probed")
        return 0
    }

    @Test("a probe burst's estimate is its least time: late wake-ups in the burst do not hide a backend that got cheaper; the backend's own samples correct a lucky one")
    func probeEstimateIsTheLeast() throws {
        let model = CostModel(offloadBackends: 1)
        // The engine is in use at 100 µs a call, software known at 300 µs.
        model.learn(route, size: size, backend: engine, nanoseconds: 100_000, sample: .probe(0))
        model.learn(route, size: size, backend: software, nanoseconds: 300_000, sample: .probe(0))
        // Software's burst: a first call that sets up (10 ms), late wake-ups (400 µs), one call at its real 50 µs.
        let learned = try probeSoftware(model) { backend, place in
            switch (backend, place) {
            case (engine, _): 100_000
            case (_, 0): 10_000_000
            case (_, 6): 50_000
            default: 400_000
            }
        }
        #expect(learned == 50_000 / 64, "learned \(learned) ns per KiB")
        // Software now takes the calls; at 200 µs a call its own samples soon hand them back to the engine.
        var chosen = software
        for _ in 0..<40 {
            let (backend, sample) = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .due)
            model.learn(route, size: size, backend: backend, nanoseconds: backend == engine ? 100_000 : 200_000, sample: try #require(sample, "a due call is timed"))
            chosen = backend
        }
        #expect(chosen == engine)
    }

    /// Routes `calls` calls of `size` through `model`, each taking what `time` (backend, place in a probe burst or nil)
    /// says, timing one in ``CostModel/sampleEvery`` below ``CostModel/alwaysTimed`` as the dispatcher does; the share
    /// of the whole time that went beyond `cost` a call (what the best backend takes).
    func probingShare(_ model: CostModel, size: Int, calls: Int, best cost: Int, time: (Int, Int?) -> Int) -> Double {
        var total = 0, excess = 0
        for call in 0..<calls {
            let due = size >= CostModel.alwaysTimed || call % CostModel.sampleEvery == 0
            let (backend, sample) = model.choose(
                route, size: size, allowed: { _ in true }, fallback: software, timing: due ? .due : .ifProbing)
            var place: Int?
            if case .probe(let at) = sample { place = at }
            let nanoseconds = time(backend, place)
            if let sample { model.learn(route, size: size, backend: backend, nanoseconds: nanoseconds, sample: sample) }
            total += nanoseconds
            excess += max(nanoseconds - cost, 0)
        }
        return Double(excess) / Double(total)
    }

    @Test(
        "probes cost about 1 % of a class's time, measured on the probes: an engine whose waits vary under load, one call of a burst quick and the rest slow, is probed rarely",
        arguments: [4096, 65536])
    func probesPaidFromTheClassTime(size: Int) {
        let model = CostModel(offloadBackends: 1)
        let softwareCall = 100 * size / 1024
        model.learn(route, size: size, backend: software, nanoseconds: softwareCall, sample: .probe(0))
        model.learn(route, size: size, backend: engine, nanoseconds: 3 * softwareCall, sample: .probe(0))
        // Engine: the last call of each burst at 1.5 times software, the others at 30 times.
        let share = probingShare(model, size: size, calls: 400_000, best: softwareCall) { backend, place in
            backend == software ? softwareCall : place == CostModel.probeBurst - 1 ? 3 * softwareCall / 2 : 30 * softwareCall
        }
        #expect(share > 0 && share <= 0.015, "probing took \(share * 100) % of the time")
    }

    @Test("far from the crossover the first probe waits until the class's time covers what it is expected to cost; a burst of long calls is short")
    func firstProbeIsPaidFirst() {
        let model = CostModel(offloadBackends: 1)
        let size = 1 << 20
        // Seeded: the engine at 10 ms a call, software ten times that.
        model.learn(route, size: size, backend: engine, nanoseconds: 10_000_000, sample: .probe(0))
        model.learn(route, size: size, backend: software, nanoseconds: 100_000_000, sample: .probe(0))
        // Calls of 100 ms outlast any late wake-up: two make the burst, where short calls take eight.
        #expect(CostModel.burstLength(nanoseconds: 100_000_000) == 2)
        #expect(CostModel.burstLength(nanoseconds: 1_000_000) == CostModel.probeBurst)
        // A probe burst costs 2 × 90 ms beyond the engine; a hundred times that is 1,800 engine calls' time.
        let share = probingShare(model, size: size, calls: 1_700, best: 10_000_000) { backend, _ in
            backend == engine ? 10_000_000 : 100_000_000
        }
        #expect(share == 0, "software was probed within the first 1,700 engine calls: \(share * 100) % of the time")
        let later = probingShare(model, size: size, calls: 100_000, best: 10_000_000) { backend, _ in
            backend == engine ? 10_000_000 : 100_000_000
        }
        #expect(later > 0 && later <= 0.01, "probing took \(later * 100) % of the time")
    }

    @Test("below the always-timed size a probe's burst runs back to back: the calls its class does not sample join it, timed; a stream's choice does not")
    func probeBurstIsConsecutive() throws {
        let model = CostModel(offloadBackends: 1)
        let size = 4096
        model.learn(route, size: size, backend: engine, nanoseconds: 100_000, sample: .probe(0))
        model.learn(route, size: size, backend: software, nanoseconds: 110_000, sample: .probe(0))
        var calls: [(backend: Int, sample: CostModel.Sample?)] = []
        for call in 0..<200_000 {
            let due = call % CostModel.sampleEvery == 0
            let choice = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: due ? .due : .ifProbing)
            if case .probe(0) = choice.sample {
                // A stream's choice in the middle of the burst takes the settled backend and leaves the burst whole.
                let stream = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .never)
                #expect(stream.backend == engine && stream.sample == nil)
                calls = [choice]
                for _ in 1..<CostModel.probeBurst {
                    calls.append(model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .ifProbing))
                }
                break
            }
            if let sample = choice.sample {
                model.learn(route, size: size, backend: choice.backend, nanoseconds: choice.backend == engine ? 100_000 : 110_000, sample: sample)
            }
        }
        try #require(calls.count == CostModel.probeBurst, "software was never probed")
        #expect(calls.allSatisfy { $0.backend == software })
        #expect(calls.map(\.sample) == (0..<CostModel.probeBurst).map { .probe($0) })
        let after = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .ifProbing)
        #expect(after.backend == engine && after.sample == nil)
    }

    @Test("one call queued behind a long request does not tip the choice; a window of slower calls is a change")
    func outliersAndChanges() throws {
        let model = CostModel(offloadBackends: 1)
        let sizeClass = CostModel.sizeClass(size)
        model.learn(route, size: size, backend: engine, nanoseconds: 64_000, sample: .probe(0))
        model.learn(route, size: size, backend: software, nanoseconds: 96_000, sample: .probe(0))
        // The engine at 1,000 ns per KiB; one call of a window stalled fifty times as long counts for nothing (the first
        // window after a probe is short, the next ones full).
        for window in [WindowedMeans.firstSize, WindowedMeans.size] {
            model.learn(route, size: size, backend: engine, nanoseconds: 50 * 64_000, sample: .regular)
            for _ in 1..<window { model.learn(route, size: size, backend: engine, nanoseconds: 64_000, sample: .regular) }
            #expect(model.cost(route, sizeClass: sizeClass, backend: engine) == 1_000)
        }
        #expect(model.choose(route, size: size, allowed: { _ in true }, fallback: software, timing: .never).backend == engine)
        // A window at four times: the engine got slower, the mean moves halfway and software takes the calls.
        for _ in 0..<WindowedMeans.size { model.learn(route, size: size, backend: engine, nanoseconds: 4 * 64_000, sample: .regular) }
        #expect(model.cost(route, sizeClass: sizeClass, backend: engine) == 2_500)
        #expect(model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .never).backend == software)
    }

    @Test("a backend back in use after another had its calls: its next few calls replace a mean learned at another time; a probe's burst of the other is not having the calls")
    func staleMeanIsReplaced() {
        let model = CostModel(offloadBackends: 1)
        let sizeClass = CostModel.sizeClass(size)
        let millisecond = 1_000_000
        // Software in use at 1,500 ns per KiB (its first window after its probe closed), then the engine, cheaper.
        model.learn(route, size: size, backend: software, nanoseconds: 96_000, ended: 1 * millisecond, sample: .probe(0))
        for call in 1...WindowedMeans.firstSize {
            model.learn(route, size: size, backend: software, nanoseconds: 96_000, ended: 1 * millisecond + call * 100_000, sample: .regular)
        }
        model.learn(route, size: size, backend: engine, nanoseconds: 64_000, ended: 2 * millisecond, sample: .probe(0))
        for call in 1...WindowedMeans.size {
            model.learn(route, size: size, backend: engine, nanoseconds: 64_000, ended: 2 * millisecond + call * 5 * millisecond, sample: .regular)
        }
        // Later the engine turned dear; software, idle since, takes the calls at four times what it was.
        model.learn(route, size: size, backend: engine, nanoseconds: 160_000, ended: 100 * millisecond, sample: .probe(0))
        #expect(model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .never).backend == software)
        for call in 1...WindowedMeans.firstSize {
            model.learn(route, size: size, backend: software, nanoseconds: 4 * 96_000, ended: 200 * millisecond + call * 400_000, sample: .regular)
        }
        #expect(model.cost(route, sizeClass: sizeClass, backend: software) == 6_000)
        #expect(model.choose(route, size: size, allowed: { _ in true }, fallback: software, timing: .never).backend == engine)

        // The engine in use at 1,000 ns per KiB; a burst of software calls (several callers' probe) outlasts a window
        // of the engine's calls. The engine's next calls, a few of them slow, fall in its window as before.
        let busy = CostModel(offloadBackends: 1)
        busy.learn(route, size: size, backend: engine, nanoseconds: 64_000, ended: 1 * millisecond, sample: .probe(0))
        for call in 1...WindowedMeans.firstSize {
            busy.learn(route, size: size, backend: engine, nanoseconds: 64_000, ended: 1 * millisecond + call * 100_000, sample: .regular)
        }
        for place in 0..<CostModel.probeBurst {
            busy.learn(route, size: size, backend: software, nanoseconds: 300_000, ended: 10 * millisecond + place * 5 * millisecond, sample: .probe(place))
        }
        for call in 1...WindowedMeans.firstSize {
            busy.learn(route, size: size, backend: engine, nanoseconds: 4 * 64_000, ended: 60 * millisecond + call * 300_000, sample: .regular)
        }
        #expect(busy.cost(route, sizeClass: sizeClass, backend: engine) == 1_000)
    }

    @Test("a mean learned under load that has passed is checked within seconds, whatever it says: the probe's expected cost fades with its age; a backend that stayed dear is still probed for about 1 % of the time")
    func staleCostIsProbedSoon() {
        let size = 1 << 20
        let millisecond = 1_000_000
        // One caller whose calls take what `softwareCall` and 20 ms on the engine say; the model's clock is theirs.
        func serve(_ model: CostModel, calls: Int, clock: inout Int, softwareCall: Int) -> (excess: Int, firstProbe: Int?) {
            var excess = 0, firstProbe: Int?
            for call in 0..<calls {
                let (backend, sample) = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .due)
                let time = backend == engine ? 20 * millisecond : softwareCall
                clock += time
                if let sample { model.learn(route, size: size, backend: backend, nanoseconds: time, ended: clock, sample: sample) }
                if backend == software, firstProbe == nil { firstProbe = call }
                excess += max(time - 20 * millisecond, 0)
            }
            return (excess, firstProbe)
        }
        // Software was last probed under a busy CPU at five times the engine's 20 ms.
        var clock = 1_000 * millisecond
        let model = CostModel(offloadBackends: 1)
        model.learn(route, size: size, backend: software, nanoseconds: 100 * millisecond, ended: clock, sample: .probe(0))
        model.learn(route, size: size, backend: engine, nanoseconds: 20 * millisecond, ended: clock + 20 * millisecond, sample: .probe(0))
        // The CPU is quiet again, software at 10 ms. A burst of two calls, each expected 80 ms beyond the engine, is due
        // after a hundred times that at the mean's own weight: 16 s, 800 engine calls. Faded, within 300.
        let quiet = serve(model, calls: 300, clock: &clock, softwareCall: 10 * millisecond)
        #expect(quiet.firstProbe != nil, "software was not probed within 300 calls (6 s)")
        #expect(model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .never).backend == software)

        // Where software stays at five times the engine, its probes take about 1 % of the time, charged what they cost.
        let busy = CostModel(offloadBackends: 1)
        busy.learn(route, size: size, backend: software, nanoseconds: 100 * millisecond, ended: clock, sample: .probe(0))
        busy.learn(route, size: size, backend: engine, nanoseconds: 20 * millisecond, ended: clock + 20 * millisecond, sample: .probe(0))
        let calls = 20_000
        let stayed = serve(busy, calls: calls, clock: &clock, softwareCall: 100 * millisecond)
        let share = Double(stayed.excess) / Double(calls * 20 * millisecond + stayed.excess)
        #expect(share > 0 && share <= 0.012, "probing took \(share * 100) % of the time")
    }

    @Test("a probe whose least time was luck pays for the calls it handed over: with the expectation faded, probing a backend three times dearer still costs about 1 %")
    func luckyProbePaysForItsFlip() {
        let model = CostModel(offloadBackends: 1)
        let size = 4096
        // The engine at 100 µs a call; software at 300 µs but for one call of each burst at 50 µs, which hands it the
        // calls until its first window (four timed calls, thirty-two calls at this size) says otherwise. The caller
        // spends most of its time elsewhere, so the expectation has faded by the time the credit is paid back (and its
        // calls, far apart, are still one backend's in use: nothing restarts a window).
        var clock = 1_000_000_000
        model.learn(route, size: size, backend: engine, nanoseconds: 100_000, ended: clock, sample: .probe(0))
        model.learn(route, size: size, backend: software, nanoseconds: 300_000, ended: clock, sample: .probe(0))
        var total = 0, excess = 0
        for call in 0..<400_000 {
            let due = call % CostModel.sampleEvery == 0
            let (backend, sample) = model.choose(
                route, size: size, allowed: { _ in true }, fallback: engine, timing: due ? .due : .ifProbing)
            let time = backend == engine ? 100_000 : sample == .probe(3) ? 50_000 : 300_000
            clock += 20 * time
            if let sample { model.learn(route, size: size, backend: backend, nanoseconds: time, ended: clock, sample: sample) }
            total += time
            excess += max(time - 100_000, 0)
        }
        let share = Double(excess) / Double(total)
        #expect(share > 0 && share <= 0.012, "probing took \(share * 100) % of the time")
    }

    @Test(
        "an engine whose calls are often queued is judged by its mean: the calls go where the mean is lower, as the scenario's target asks (0.9 of the better backend's throughput)",
        arguments: [(0.1, 4.0), (0.3, 4.0), (0.1, 8.0), (0.05, 20.0), (0.3, 20.0)])
    func commonStallsAreCountedAsOftenAsTheyCome(share: Double, stall: Double) {
        let model = CostModel(offloadBackends: 1)
        let typical = 1_300_000, softwareCall = 3_800_000
        model.learn(route, size: size, backend: software, nanoseconds: softwareCall, sample: .probe(0))
        model.learn(route, size: size, backend: engine, nanoseconds: typical, sample: .probe(0))
        // `share` of the engine's calls stalled `stall` times as long, at places a fixed pseudo-random sequence picks.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let calls = 20_000
        var total = 0
        for _ in 0..<calls {
            let (backend, sample) = model.choose(route, size: size, allowed: { _ in true }, fallback: software, timing: .due)
            var time = softwareCall
            if backend == engine {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                time = Double(state >> 11) / Double(1 << 53) < share ? Int(Double(typical) * stall) : typical
            }
            if let sample { model.learn(route, size: size, backend: backend, nanoseconds: time, sample: sample) }
            total += time
        }
        let engineMean = (1 - share) * Double(typical) + share * Double(typical) * stall
        let best = min(engineMean, Double(softwareCall)) * Double(calls)
        #expect(best / Double(total) >= 0.9, "engine mean \(engineMean) ns: \(best / Double(total)) of the better backend's throughput")
    }

    @Test("several callers: what a call takes of a backend's throughput decides, not one caller's wait; a lone caller's calls are judged by their time")
    func overlappingCallsAreJudgedByThroughput() {
        let sizeClass = CostModel.sizeClass(size)
        func choice(_ model: CostModel) -> Int {
            model.choose(route, size: size, allowed: { _ in true }, fallback: software, timing: .never).backend
        }
        for callers in [1, 4] {
            let model = CostModel(offloadBackends: 1)
            // Software: 200 µs a call to the one caller who tries it. The engine: a queue serving a request in
            // 100 µs, so each of `callers` callers waits `callers` times that.
            model.learn(route, size: size, backend: software, nanoseconds: 200_000, sample: .probe(0))
            model.learn(route, size: size, backend: engine, nanoseconds: 100_000 * callers, sample: .probe(0))
            var ended = 1_000_000_000
            for _ in 0..<200 {
                // A lone caller does 50 µs of its own work between calls: the time between ends is not the engine's.
                ended += callers == 1 ? 150_000 : 100_000
                model.learn(route, size: size, backend: engine, nanoseconds: 100_000 * callers, ended: ended, sample: .regular)
            }
            let engineCost = model.cost(route, sizeClass: sizeClass, backend: engine)
            if callers == 1 {
                #expect(engineCost == 100_000 / 64)
                #expect(choice(model) == engine)
            } else {
                // Four callers: the engine still completes a request every 100 µs, as for one.
                #expect(engineCost.map { abs($0 - 100_000 / 64) <= 2 } == true, "learned \(engineCost ?? 0) ns per KiB")
                #expect(choice(model) == engine)
            }
        }
        // Without the ends (a caller's wait only), four callers' engine looks four times dearer: software would win.
        let waitOnly = CostModel(offloadBackends: 1)
        waitOnly.learn(route, size: size, backend: software, nanoseconds: 200_000, sample: .probe(0))
        waitOnly.learn(route, size: size, backend: engine, nanoseconds: 400_000, sample: .probe(0))
        #expect(choice(waitOnly) == software)
        // A probe burst of software whose calls overlapped (two CPUs: after the first, calls of 200 µs end in pairs
        // every 200 µs): from its first end to its last, 800 µs over seven calls, below its least call time.
        let model = CostModel(offloadBackends: 1)
        model.learn(route, size: size, backend: engine, nanoseconds: 100_000, sample: .probe(0))
        let start = 5_000_000_000
        for place in 0..<8 {
            let ended = start + 200_000 * ((place + 1) / 2)
            model.learn(route, size: size, backend: software, nanoseconds: 200_000, ended: ended, sample: .probe(place))
        }
        #expect(model.cost(route, sizeClass: sizeClass, backend: software) == 800_000 / 7 / 64)
    }

    @Test("a probe that finds the other backend cheaper hands it the calls")
    func cheaperProbeWins() throws {
        let model = CostModel(offloadBackends: 1)
        model.learn(route, size: size, backend: engine, nanoseconds: 100_000, sample: .probe(0))
        model.learn(route, size: size, backend: software, nanoseconds: 300_000, sample: .probe(0))
        let learned = try probeSoftware(model) { backend, _ in backend == engine ? 100_000 : 50_000 }
        #expect(learned == 50_000 / 64)
        let (next, _) = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .never)
        #expect(next == software)
    }

    @Test("a backend that cannot serve a size is learned as far dearer than software")
    func unavailableIsDear() throws {
        let model = CostModel(offloadBackends: 1)
        model.learn(route, size: size, backend: software, nanoseconds: 300_000, sample: .probe(0))
        model.learnUnavailable(route, size: size, backend: engine)
        let (next, _) = model.choose(route, size: size, allowed: { _ in true }, fallback: engine, timing: .never)
        #expect(next == software)
    }
}
