import CryptoContract
import CryptoDispatcher
import Foundation
import KernelBackend
import SoftwareBackend
import Synchronization
import Testing
import TestVectors

/// A third backend, plugged in from outside the package's backends: an "engine" for AES-CBC that does its work
/// with OpenSSL (so its bytes are right) and can be made to fail. docs/dispatcher.md, "Adding a backend", shows the same shape.
final class TestEngineBackend: OffloadBackend {
    let kind: BackendKind
    /// What the next calls do: serve, say "not here" (`notAvailable`), or fail (`backendFailure`, errno 5).
    enum Mode { case serve, absent, broken }
    private let mode: Mutex<Mode>
    let calls = Atomic<Int>(0)
    private let software = SoftwareBackend()

    init(name: String = "test-engine", mode: Mode = .serve) {
        kind = BackendKind(name: name)
        self.mode = Mutex(mode)
    }

    func set(_ newMode: Mode) { mode.withLock { $0 = newMode } }

    var unavailableReason: String? { nil }

    func supports(_ operation: CryptoOperation) -> Bool {
        if case .cipher(let algorithm, .cbc) = operation { return [.aes128, .aes192, .aes256].contains(algorithm) }
        return false
    }

    func placement(of operation: CryptoOperation) -> OffloadPlacement {
        supports(operation) ? .engine("test-engine-aes-cbc") : .absent("the test engine has only AES-CBC")
    }

    func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        switch mode.withLock({ $0 }) {
        case .absent: throw CryptoError(.notAvailable, "the test engine is unplugged")
        case .broken: throw CryptoError(.backendFailure, "the test engine failed", nativeCode: 5)
        case .serve:
            guard supports(.cipher(spec.algorithm, spec.mode)) else { throw CryptoError(.notAvailable, "not \(spec)") }
            calls.add(1, ordering: .relaxed)
            return try software.crypt(direction, spec, key: key, iv: iv, input: input, output: output)
        }
    }

    func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?
    ) throws -> any CipherStream {
        throw CryptoError(.notAvailable, "the test engine has no streams")
    }

    func digest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) throws {
        throw CryptoError(.notAvailable, "the test engine has no digests")
    }

    func makeDigestStream(_ algorithm: DigestAlgorithm) throws -> any DigestStream {
        throw CryptoError(.notAvailable, "the test engine has no digests")
    }

    func hmac(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        throw CryptoError(.notAvailable, "the test engine has no HMAC")
    }

    func makeHMACStream(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any DigestStream {
        throw CryptoError(.notAvailable, "the test engine has no HMAC")
    }
}

@Suite("Pluggable backends")
struct PluggableBackendTests {
    let key = [UInt8](repeating: 0x5a, count: 16)
    let iv = [UInt8](repeating: 0xa5, count: 16)
    let spec = CipherSpec(.aes128, .cbc)
    let cbc = Route.cipher(.aes128, .cbc, .encrypt)!
    let software = SoftwareBackend()

    @Test("a backend written outside the package gets engine defaults, serves above them, and is counted")
    func routing() throws {
        let engine = TestEngineBackend()
        let dispatcher = Dispatcher(backends: [engine])
        #expect(dispatcher.backends.map(\.kind) == [engine.kind])
        #expect(dispatcher.placement(of: cbc, on: engine.kind).isEngine)
        #expect(dispatcher.threshold(for: cbc, on: engine.kind) == DispatchConfiguration.engineDefaults["aes128-cbc-encrypt"])
        #expect(dispatcher.reason(for: cbc, on: engine.kind).contains("engine default (test-engine-aes-cbc)"))
        // Routes it does not serve stay software, with its reason; no kernel is plugged into this dispatcher.
        #expect(dispatcher.threshold(for: Route.digest(.sha1)!, on: engine.kind) == nil)
        #expect(dispatcher.reason(for: Route.digest(.sha1)!, on: engine.kind).contains("only AES-CBC"))
        #expect(dispatcher.threshold(for: cbc) == nil)
        for size in [16, 1008, 1024, 65536] {
            let data = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
            #expect(try dispatcher.crypt(.encrypt, spec, key: key, iv: iv, data) == software.crypt(.encrypt, spec, key: key, iv: iv, data))
        }
        #expect(engine.calls.load(ordering: .relaxed) == 2)
        #expect(dispatcher.counters.count(engine.kind, cbc) == 2)
        #expect(dispatcher.counters.count(.software, cbc) == 2)
        #expect(dispatcher.chosenBackend(cbc, size: 1024) == engine.kind)
        #expect(dispatcher.chosenBackend(cbc, size: 1023) == .software)
    }

    @Test("'not here' falls back to software with the same bytes; any other failure is thrown, never hidden")
    func fallbackAndFailure() throws {
        let engine = TestEngineBackend(mode: .absent)
        let dispatcher = Dispatcher(DispatchConfiguration(thresholds: [cbc: 0]), backends: [engine])
        let data = [UInt8](repeating: 7, count: 4096)
        #expect(try dispatcher.crypt(.encrypt, spec, key: key, iv: iv, data) == software.crypt(.encrypt, spec, key: key, iv: iv, data))
        #expect(dispatcher.counters.count(.software, cbc) == 1)
        #expect(dispatcher.counters.count(engine.kind, cbc) == 0)
        engine.set(.broken)
        #expect(throws: CryptoError(.backendFailure, "")) { try dispatcher.crypt(.encrypt, spec, key: key, iv: iv, data) }
        #expect(dispatcher.counters.count(.software, cbc) == 1)
    }

    @Test("a call the contract refuses (key or IV of a wrong length) is refused before routing: the engine never sees it, nothing is counted")
    func refusedBeforeRouting() throws {
        let engine = TestEngineBackend()
        let dispatcher = Dispatcher(DispatchConfiguration(thresholds: [cbc: 0]), backends: [engine])
        let data = [UInt8](repeating: 7, count: 4096)
        // The raw call (the array conveniences validate before they call it).
        func raw(_ backend: some CryptoBackend, key: [UInt8], iv: [UInt8]) throws {
            var output = [UInt8](repeating: 0, count: data.count + 16)
            _ = try key.withUnsafeBytes { key in
                try iv.withUnsafeBytes { iv in
                    try data.withUnsafeBytes { input in
                        try output.withUnsafeMutableBytes { try backend.crypt(.encrypt, spec, key: key, iv: iv, input: input, output: $0) }
                    }
                }
            }
        }
        for (badKey, badIV) in [(Array(key.prefix(15)), iv), (key + [0], iv), (key, Array(iv.prefix(8)))] {
            var expected: CryptoError?
            do { try raw(software, key: badKey, iv: badIV) } catch let error as CryptoError { expected = error }
            let refusal = try #require(expected)
            #expect(throws: refusal) { try raw(dispatcher, key: badKey, iv: badIV) }
        }
        #expect(engine.calls.load(ordering: .relaxed) == 0)
        #expect(dispatcher.counters.count(engine.kind, cbc) == 0)
        #expect(dispatcher.counters.count(.software, cbc) == 0)
        // The same dispatcher then routes a valid call to the engine.
        #expect(try dispatcher.crypt(.encrypt, spec, key: key, iv: iv, data) == software.crypt(.encrypt, spec, key: key, iv: iv, data))
        #expect(engine.calls.load(ordering: .relaxed) == 1)
    }

    @Test("policies and per-backend thresholds name backends; the cheapest of several qualifying backends serves")
    func severalBackends() throws {
        let slow = TestEngineBackend(name: "slow-engine")
        let fast = TestEngineBackend(name: "fast-engine")
        // Both qualify from 1 KiB; the calibrated costs decide: slow has the lower fixed cost, fast the lower cost
        // per byte, so they cross at (50 000 - 10 000) / (10 - 2) = 5000 bytes.
        let dispatcher = Dispatcher(
            DispatchConfiguration(backendThresholds: ["slow-engine": [cbc: 1024], "fast-engine": [cbc: 1024]]),
            backends: [slow, fast, TestEngineBackend(name: "slow-engine")])
        #expect(dispatcher.backends.count == 2, "a second backend of the same name is dropped")
        dispatcher.setCost(CallCost(fixedNanoseconds: 10_000, nanosecondsPerByte: 10), for: cbc, on: slow.kind)
        dispatcher.setCost(CallCost(fixedNanoseconds: 50_000, nanosecondsPerByte: 2), for: cbc, on: fast.kind)
        #expect(dispatcher.chosenBackend(cbc, size: 512) == .software)
        #expect(dispatcher.chosenBackend(cbc, size: 4096) == slow.kind)
        #expect(dispatcher.chosenBackend(cbc, size: 8192) == fast.kind)
        for size in [512, 4096, 8192] {
            _ = try dispatcher.crypt(.encrypt, spec, key: key, iv: iv, [UInt8](repeating: 1, count: size))
        }
        #expect(dispatcher.counters.calls == [
            "software": ["aes128-cbc-encrypt": 1], "slow-engine": ["aes128-cbc-encrypt": 1], "fast-engine": ["aes128-cbc-encrypt": 1],
        ])
        // A forced backend serves everything it can, software the rest; an unknown name means software.
        dispatcher.policy = .backend(fast.kind)
        #expect(dispatcher.chosenBackend(cbc, size: 16) == fast.kind)
        #expect(dispatcher.chosenBackend(Route.digest(.sha1), size: 1 << 20) == .software)
        dispatcher.policy = .backend(BackendKind(name: "nowhere"))
        #expect(dispatcher.policy.name == "nowhere")
        #expect(dispatcher.chosenBackend(cbc, size: 1 << 20) == .software)
        dispatcher.policy = .software
        #expect(dispatcher.chosenBackend(cbc, size: 1 << 20) == .software)
    }

    @Test("calls follow the policy and thresholds as they change: forced, software, auto again, a threshold set and cleared")
    func gatesFollowSettings() throws {
        // The hot path compares a call's size with one gate per route, made from the policy and the thresholds:
        // these are real calls, counted by the backend that served them, not `chosenBackend`'s answer.
        let engine = TestEngineBackend()
        let dispatcher = Dispatcher(backends: [engine])
        let small = [UInt8](repeating: 3, count: 16)
        let large = [UInt8](repeating: 3, count: 4096)
        func served(_ data: [UInt8]) throws -> BackendKind {
            dispatcher.resetCounters()
            #expect(try dispatcher.crypt(.encrypt, spec, key: key, iv: iv, data) == software.crypt(.encrypt, spec, key: key, iv: iv, data))
            return dispatcher.counters.count(engine.kind, cbc) == 1 ? engine.kind : .software
        }
        #expect(try served(small) == .software)
        #expect(try served(large) == engine.kind)
        dispatcher.policy = .backend(engine.kind)
        #expect(try served(small) == engine.kind)
        dispatcher.policy = .software
        #expect(try served(large) == .software)
        dispatcher.policy = .auto
        #expect(try served(small) == .software)
        #expect(try served(large) == engine.kind)
        dispatcher.setThreshold(16, for: cbc, on: engine.kind)
        #expect(try served(small) == engine.kind)
        dispatcher.setThreshold(nil, for: cbc, on: engine.kind)
        #expect(try served(large) == .software)
    }

    @Test("with every route of a kind off, calls stay in software until a threshold or policy turns one on: from the next call, on the same thread")
    func offRoutesTurnedOn() throws {
        // Every AES route off: no cipher can leave software, so ciphers take the dispatcher's software-only path
        // (one compare with the thread's last-counted dispatcher); a change must take it off that path at once.
        let engine = TestEngineBackend()
        let off = Dictionary(uniqueKeysWithValues: Route.phoneEngine.map { ($0, Int?.none) })
        let dispatcher = Dispatcher(DispatchConfiguration(thresholds: off), backends: [engine])
        let data = [UInt8](repeating: 3, count: 4096)
        let expected = try software.crypt(.encrypt, spec, key: key, iv: iv, data)
        func served() throws -> BackendKind {
            dispatcher.resetCounters()
            #expect(try dispatcher.crypt(.encrypt, spec, key: key, iv: iv, data) == expected)
            let engineCalls = dispatcher.counters.count(engine.kind, cbc)
            let softwareCalls = dispatcher.counters.count(.software, cbc)
            #expect(engineCalls + softwareCalls == 1)
            return engineCalls == 1 ? engine.kind : .software
        }
        #expect(try served() == .software)
        #expect(try served() == .software)
        dispatcher.setThreshold(16, for: cbc, on: engine.kind)
        #expect(try served() == engine.kind)
        dispatcher.setThreshold(nil, for: cbc, on: engine.kind)
        #expect(try served() == .software)
        dispatcher.policy = .backend(engine.kind)
        #expect(try served() == engine.kind)
        dispatcher.policy = .software
        #expect(try served() == .software)
        dispatcher.policy = .auto
        #expect(try served() == .software)
        dispatcher.setThreshold(0, for: cbc, on: engine.kind)
        #expect(try served() == engine.kind)
        #expect(engine.calls.load(ordering: .relaxed) == 3)
    }

    @Test("calibration measures a plugged-in backend and records its cost")
    func calibration() throws {
        let engine = TestEngineBackend()
        let dispatcher = Dispatcher(backends: [engine])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("plug-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("profile.json")
        let results = try dispatcher.calibrate(routes: [cbc, Route.digest(.sha1)!], budget: .milliseconds(2), saveTo: url)
        #expect(results.map(\.backend) == [engine.kind, engine.kind])
        // The same OpenSSL underneath: never 5% faster at every larger size, so no crossover.
        #expect(results[0].points.count == Calibration.sizes.count)
        #expect(results[0].cost != nil && results[0].softwareCost != nil)
        #expect(results[1].points.isEmpty && results[1].threshold == nil)
        guard case .loaded(let profile) = DispatchProfile.load(from: url, expecting: .current(for: [engine])) else {
            Issue.record("no profile")
            return
        }
        #expect(profile.backends["test-engine"]?.costs["aes128-cbc-encrypt"] == results[0].cost)
        #expect(profile.fingerprint.placements.contains("aes128-cbc-encrypt=engine (test-engine-aes-cbc)"))
        #expect(dispatcher.reason(for: cbc, on: engine.kind).hasPrefix("calibrated"))
    }

    @Test("calibration seeds the cost model of every backend it measured, not only the last")
    func calibrationSeedsEveryBackend() throws {
        let first = TestEngineBackend(name: "first-engine"), second = TestEngineBackend(name: "second-engine")
        let dispatcher = Dispatcher(backends: [first, second])
        _ = try dispatcher.calibrate(routes: [cbc], budget: .milliseconds(2), saveTo: nil)
        for backend in [first.kind, second.kind, .software] {
            #expect(dispatcher.learnedCost(cbc, size: 65536, on: backend) != nil, "\(backend) was not seeded")
        }
    }

    @Test("calibration runs every key size of the engine routes (each with a key of its length)")
    func calibrationKeySizes() throws {
        let engine = TestEngineBackend()
        let routes = [CipherAlgorithm.aes128, .aes192, .aes256].compactMap { Route.cipher($0, .cbc, .decrypt) }
        let (_, results) = Calibration.run(routes: routes, budget: .milliseconds(1), backends: [engine])
        #expect(results.count == 3)
        for result in results {
            #expect(result.points.count == Calibration.sizes.count, "\(result.route)")
            #expect(result.points.allSatisfy { $0.softwareNanoseconds.isFinite && $0.offloadNanoseconds != nil }, "\(result.route)")
        }
    }

    @Test("a call's cost is fitted to measurements, weighted by relative error")
    func costFit() throws {
        let line = CallCost(fixedNanoseconds: 400_000, nanosecondsPerByte: 25)
        let fitted = try #require(CallCost.fit(Calibration.sizes.map { ($0, line.nanoseconds(size: $0)) }))
        #expect(abs(fitted.fixedNanoseconds - 400_000) < 1)
        #expect(abs(fitted.nanosecondsPerByte - 25) < 0.001)
        #expect(CallCost.fit([(16, 100)]) == nil)
        // Falling time with size: no negative cost per byte.
        #expect(CallCost.fit([(16, 200), (1024, 100)])?.nanosecondsPerByte == 0)
    }
}

/// The "Adding a backend" example of docs/dispatcher.md, type-checked as written against the modules this build
/// produced.
@Suite("Documented backend example", .hostOnly)
struct ReadmeBackendExampleTests {
    @Test("the backend example of docs/dispatcher.md compiles")
    func compiles() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("docs/dispatcher.md"), encoding: .utf8)
        let marker = try #require(readme.range(of: "<!-- example: adding-a-backend -->\n```swift\n"))
        let end = try #require(readme.range(of: "\n```", range: marker.upperBound..<readme.endIndex))
        let example = String(readme[marker.upperBound..<end.lowerBound])
        #expect(example.contains("OffloadBackend") && example.contains("Dispatcher(backends:"))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("example.swift")
        try Data(example.utf8).write(to: source)
        let build = root.appendingPathComponent(".build/debug")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swiftc", "-typecheck", "-swift-version", "6", "-I", build.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=" + build.appendingPathComponent("CMD2.build/module.modulemap").path,
            "-Xcc", "-fmodule-map-file=" + build.appendingPathComponent("COpenSSLShims.build/module.modulemap").path,
            "-Xcc", "-fmodule-map-file=" + build.appendingPathComponent("CDispatcherThreadState.build/module.modulemap").path,
            "-I", root.appendingPathComponent("Backends/COpenSSL").path, "-I", root.appendingPathComponent("Backends/CKcapi").path,
            source.path,
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = errors
        try process.run()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "swiftc -typecheck: \(output)")
    }
}
