import CryptoContract
import CryptoDispatcher
import Foundation
import KernelBackend
import SoftwareBackend
import Testing
import TestVectors

/// Routing, thresholds, overrides, counters and fallback. These run everywhere: where AF_ALG is absent the
/// kernel's share is asserted to be zero (fallback), where it is present the kernel must serve.
@Suite("Dispatcher")
struct DispatcherTests {
    let key16 = [UInt8](repeating: 0x11, count: 16)
    let iv = [UInt8](repeating: 0x22, count: 16)
    let software = SoftwareBackend()
    // In the VM (AFALGGate.required) the kernel must serve: a missing AF_ALG there fails these counts.
    let kernelHere = KernelBackend.isAvailable || AFALGGate.required

    @Test("auto mode routes by size at the threshold; counters say who served")
    func routingBySize() throws {
        let cbc = Route.cipher(.aes128, .cbc, .encrypt)!
        let sha1 = Route.digest(.sha1)!
        let dispatcher = Dispatcher(DispatchConfiguration(policy: .auto, thresholds: [cbc: 1024, sha1: 4096]))
        #expect(dispatcher.threshold(for: cbc) == 1024)
        for size in [16, 1008, 1024, 65536] {
            let data = [UInt8](repeating: 1, count: size)
            #expect(
                try dispatcher.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key16, iv: iv, data)
                    == software.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key16, iv: iv, data))
        }
        for size in [0, 4095, 4096, 100_000] {
            let data = [UInt8](repeating: 2, count: size)
            #expect(try dispatcher.digest(.sha1, data) == software.digest(.sha1, data))
        }
        let counters = dispatcher.counters
        #expect(counters.count(.software, cbc) + counters.count(.kernel, cbc) == 4)
        #expect(counters.count(.kernel, cbc) == (kernelHere ? 2 : 0))
        #expect(counters.count(.software, cbc) == (kernelHere ? 2 : 4))
        #expect(counters.count(.kernel, sha1) == (kernelHere ? 2 : 0))
        #expect(counters.count(.software, sha1) == (kernelHere ? 2 : 4))
    }

    @Test("policy software never uses the kernel; policy kernel uses it wherever it exists")
    func policies() throws {
        let dispatcher = Dispatcher(DispatchConfiguration(policy: .software))
        let data = [UInt8](repeating: 3, count: 1 << 20)
        _ = try dispatcher.digest(.sha1, data)
        _ = try dispatcher.hmac(.sha1, key: key16, data)
        #expect(dispatcher.counters.total(.kernel) == 0)
        dispatcher.policy = .kernel
        #expect(dispatcher.policy == .kernel)
        #expect(try dispatcher.digest(.sha256, [1, 2, 3]) == software.digest(.sha256, [1, 2, 3]))
        #expect(dispatcher.counters.count(.kernel, Route.digest(.sha256)) == (kernelHere ? 1 : 0))
        // MD2 has no kernel route: software, counted as "other".
        _ = try dispatcher.digest(.md2, [1])
        #expect(dispatcher.counters.count(.software, nil) == 1)
    }

    @Test("every algorithm answers the same through the dispatcher as through software, in every policy",
          arguments: [DispatchPolicy.auto, .software, .kernel])
    func identicalOutput(policy: DispatchPolicy) throws {
        let dispatcher = Dispatcher(DispatchConfiguration(policy: policy))
        for mode in [CipherMode.ecb, .cbc, .ctr] {
            let cases = try CipherVectors.aes(mode).prefix(20)
            #expect(VectorRunner.run(Array(cases), on: dispatcher) == [])
        }
        #expect(VectorRunner.run(try DigestVectors.cases(.sha1), on: dispatcher) == [])
        #expect(VectorRunner.run(try HMACVectors.cases(.sha1), on: dispatcher) == [])
        #expect(VectorRunner.run(try CipherVectors.blowfish(.cbc), on: dispatcher) == [])
    }

    @Test("thresholds can be changed and disabled through the API")
    func apiOverrides() {
        let dispatcher = Dispatcher()
        let route = Route.digest(.sha256)!
        #expect(dispatcher.threshold(for: route) == nil)  // not an engine route: off by default
        dispatcher.setThreshold(512, for: route)
        #expect(dispatcher.threshold(for: route) == 512)
        #expect((dispatcher.chosenBackend(route, size: 512) == .kernel) == dispatcher.serves(route))
        #expect(dispatcher.chosenBackend(route, size: 511) == .software)
        dispatcher.setThreshold(nil, for: route)
        #expect(dispatcher.chosenBackend(route, size: 1 << 30) == .software)
        #expect(!dispatcher.setThreshold(1, for: route, on: BackendKind(name: "nowhere")))
        #expect(!dispatcher.setThreshold(-1, for: route))
        #expect(dispatcher.reason(for: route).contains("disabled"))
    }

    @Test("the environment sets policy and thresholds; bad values are reported, not fatal")
    func environment() {
        let (configuration, warnings) = DispatchConfiguration.fromEnvironment([
            "SECURITYSERVICES_DISPATCH": "software",
            "SECURITYSERVICES_THRESHOLD_AES_CBC_ENCRYPT": "2048",
            "SECURITYSERVICES_THRESHOLD_SHA1": "never",
            "SECURITYSERVICES_THRESHOLD_HMAC_SHA256": "-5",
            "SECURITYSERVICES_THRESHOLD_NOPE": "1",
        ])
        #expect(configuration.policy == .software)
        // `aes-…` is every AES key size.
        for algorithm in [CipherAlgorithm.aes128, .aes192, .aes256] {
            #expect(configuration.thresholds[Route.cipher(algorithm, .cbc, .encrypt)!] == .some(2048))
        }
        #expect(configuration.thresholds[Route.digest(.sha1)!] == .some(nil))
        #expect(configuration.thresholds[Route.hmac(.sha256)!] == nil)
        #expect(warnings.count == 2)
        let (_, policyWarnings) = DispatchConfiguration.fromEnvironment(["SECURITYSERVICES_DISPATCH": "tur bo!"])
        #expect(policyWarnings.count == 1)
        // A backend's name is a policy, and a threshold can name its backend.
        let (perBackend, none) = DispatchConfiguration.fromEnvironment([
            "SECURITYSERVICES_DISPATCH": "Kernel",
            "SECURITYSERVICES_THRESHOLD_KERNEL_AES_CBC_DECRYPT": "512",
            "SECURITYSERVICES_THRESHOLD_TEST_ENGINE_SHA1": "off",
        ])
        #expect(none.isEmpty)
        #expect(perBackend.policy == .kernel)
        #expect(perBackend.backendThresholds["kernel"]?[Route.cipher(.aes128, .cbc, .decrypt)!] == .some(512))
        #expect(perBackend.backendThresholds["test-engine"]?[Route.digest(.sha1)!] == .some(nil))
    }

    @Test("default thresholds: off where the kernel is missing or runs CPU code")
    func defaults() {
        let dispatcher = Dispatcher()
        for route in Route.phoneEngine {
            let kernelName = KernelAlgorithmNames.name(for: route.operation)!
            if !dispatcher.serves(route) {
                #expect(dispatcher.threshold(for: route) == nil)
            } else if KernelBackend.registry.isServedByCPU(kernelName) ?? true {
                #expect(dispatcher.threshold(for: route) == nil, "\(route): \(dispatcher.reason(for: route))")
                #expect(dispatcher.reason(for: route).contains("CPU"))
            } else {
                #expect(dispatcher.threshold(for: route) == DispatchConfiguration.engineDefaults[route.name])
            }
        }
        // Only the phone engine's routes are candidates by default.
        for route in Route.all where !Route.phoneEngine.contains(route) {
            #expect(dispatcher.threshold(for: route) == nil)
        }
    }

    @Test("route names are stable and round-trip")
    func routeNames() {
        #expect(Route.all.count == Set(Route.all.map(\.name)).count)
        for route in Route.all { #expect(Route(name: route.name) == route) }
        // Every route the functions hand out is in `all`, and `all` has no other: the table sizes are literals
        // (the hot path reads them without a lazy initializer), and this catches one that disagrees with the lists.
        let handedOut =
            CipherAlgorithm.allCases.flatMap { algorithm in
                CipherMode.allCases.flatMap { mode in [CipherDirection.encrypt, .decrypt].compactMap { Route.cipher(algorithm, mode, $0) } }
            } + DigestAlgorithm.allCases.compactMap(Route.digest) + DigestAlgorithm.allCases.compactMap(Route.hmac)
        #expect(handedOut.count == 7 * 3 * 2 + 7 + 6)
        #expect(handedOut.sorted() == Route.all)
        #expect(Route.all.last?.name == "hmac-sha512")
        #expect(Route.phoneEngine.map(\.name).sorted() == [
            "aes128-cbc-decrypt", "aes128-cbc-encrypt", "aes128-ecb-decrypt", "aes128-ecb-encrypt",
            "aes192-cbc-decrypt", "aes192-cbc-encrypt", "aes192-ecb-decrypt", "aes192-ecb-encrypt",
            "aes256-cbc-decrypt", "aes256-cbc-encrypt", "aes256-ecb-decrypt", "aes256-ecb-encrypt", "hmac-sha1", "sha1",
        ])
        #expect(Route.cipher(.aes192, .cbc, .decrypt)?.name == "aes192-cbc-decrypt")
        #expect(Route.cipher(.aes192, .cbc, .decrypt)?.operation == .cipher(.aes192, .cbc))
        #expect(Route.routes(named: "AES-CBC-ENCRYPT").map(\.name) == ["aes128-cbc-encrypt", "aes192-cbc-encrypt", "aes256-cbc-encrypt"])
        #expect(Route.routes(named: "aes-gcm-encrypt").isEmpty)
        #expect(Route.cipher(.rc4, .stream, .encrypt) == nil)
        #expect(Route.digest(.md2) == nil)
    }

    @Test("a stream chooses its backend by its first update and answers like software")
    func streams() throws {
        let cbc = Route.cipher(.aes128, .cbc, .decrypt)!
        let dispatcher = Dispatcher(DispatchConfiguration(policy: .auto, thresholds: [cbc: 64]))
        let plaintext = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
        let spec = CipherSpec(.aes128, .cbc, padding: .pkcs7)
        let ciphertext = try software.crypt(.encrypt, spec, key: key16, iv: iv, plaintext)
        let stream = try dispatcher.makeCipherStream(.decrypt, spec, key: key16, iv: iv)
        #expect(stream.outputLength(forInputCount: 100, final: false) == 96)
        var output: [UInt8] = []
        for piece in ciphertext.chunked(100) { output += try stream.update(piece) }
        output += try stream.finish()
        #expect(output == plaintext)
        #expect(dispatcher.counters.count(.kernel, cbc) + dispatcher.counters.count(.software, cbc) == 1)
        #expect(dispatcher.counters.count(.kernel, cbc) == (kernelHere ? 1 : 0))

        let hmac = try dispatcher.makeHMACStream(.sha1, key: key16)
        for piece in plaintext.chunked(33) { try hmac.update(piece) }
        #expect(try hmac.finish() == software.hmac(.sha1, key: key16, plaintext))
    }

    @Test("bad input gets the same precise errors through the dispatcher")
    func badInput() {
        let dispatcher = Dispatcher(DispatchConfiguration(policy: .kernel))
        #expect(throws: CryptoError(.invalidKeySize, "")) {
            try dispatcher.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: [1], iv: iv, [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: CryptoError(.alignment, "")) {
            try dispatcher.crypt(.encrypt, CipherSpec(.aes128, .ecb), key: key16, iv: nil, [UInt8](repeating: 0, count: 15))
        }
        #expect(throws: CryptoError(.unsupported, "")) { try dispatcher.makeHMACStream(.md2, key: key16) }
    }

    @Test("a short output is refused untouched on the inlined software paths, counted nowhere; a right one is counted", arguments: DigestAlgorithm.allCases)
    func shortOutputs(algorithm: DigestAlgorithm) throws {
        // The dispatcher inlines the software backend's one-shot bodies: their checks must hold here too.
        let dispatcher = Dispatcher(backends: [])
        let message = [UInt8](repeating: 0x61, count: 40)
        var short = [UInt8](repeating: 0xee, count: algorithm.outputSize - 1)
        #expect(throws: CryptoError(.bufferTooSmall, "")) {
            try message.withUnsafeBytes { input in try short.withUnsafeMutableBytes { try dispatcher.digest(algorithm, input: input, output: $0) } }
        }
        if algorithm.supportsHMAC {
            #expect(throws: CryptoError(.bufferTooSmall, "")) {
                try message.withUnsafeBytes { input in
                    try short.withUnsafeMutableBytes { try dispatcher.hmac(algorithm, key: input, input: input, output: $0) }
                }
            }
        }
        #expect(short.allSatisfy { $0 == 0xee })
        var ciphertext = [UInt8](repeating: 0xee, count: 47)
        #expect(throws: CryptoError(.bufferTooSmall, "")) {
            try key16.withUnsafeBytes { key in
                try iv.withUnsafeBytes { iv in
                    try message.withUnsafeBytes { input in
                        try ciphertext.withUnsafeMutableBytes {
                            _ = try dispatcher.crypt(.encrypt, CipherSpec(.aes128, .cbc, padding: .pkcs7), key: key, iv: iv, input: input, output: $0)
                        }
                    }
                }
            }
        }
        #expect(ciphertext.allSatisfy { $0 == 0xee })
        #expect(dispatcher.counters.calls.isEmpty)
        #expect(try dispatcher.digest(algorithm, message) == SoftwareBackend().digest(algorithm, message))
        #expect(dispatcher.counters.total(.software) == 1)
    }
}

@Suite("Dispatch profile and calibration")
struct DispatchProfileTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dispatch-\(UUID().uuidString)")

    @Test("missing, corrupt and stale profiles are ignored; a valid one sets thresholds")
    func loading() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("profile.json")
        #expect(DispatchProfile.load(from: url) == .missing)

        try Data("{ not json".utf8).write(to: url)
        guard case .corrupt = DispatchProfile.load(from: url) else { Issue.record("garbage accepted"); return }

        let profile = DispatchProfile(
            fingerprint: .current,
            backends: ["kernel": .init(thresholds: ["sha1": 8192, "aes128-cbc-encrypt": nil], costs: ["sha1": CallCost(fixedNanoseconds: 1, nanosecondsPerByte: 2)])],
            softwareCosts: ["sha1": CallCost(fixedNanoseconds: 100, nanosecondsPerByte: 0.5)])
        try profile.save(to: url)
        #expect(DispatchProfile.load(from: url) == .loaded(profile))
        let dispatcher = Dispatcher(DispatchConfiguration(profile: profile))
        #expect(dispatcher.threshold(for: Route.digest(.sha1)!) == 8192)
        #expect(dispatcher.threshold(for: Route.cipher(.aes128, .cbc, .encrypt)!) == nil)
        // Explicit settings beat the profile.
        let explicit = Dispatcher(DispatchConfiguration(thresholds: [Route.digest(.sha1)!: 100], profile: profile))
        #expect(explicit.threshold(for: Route.digest(.sha1)!) == 100)

        let other = DispatchProfile.Fingerprint(kernelRelease: "0.0.0-other", cpuModel: "Other CPU")
        #expect(DispatchProfile.load(from: url, expecting: other) == .stale(.current))

        var unknown = profile
        unknown.backends["kernel"]?.thresholds = ["warp-drive": 1]
        try unknown.save(to: url)
        guard case .corrupt = DispatchProfile.load(from: url) else { Issue.record("unknown route accepted"); return }
        var negative = profile
        negative.backends["kernel"]?.thresholds = ["sha1": -1]
        try negative.save(to: url)
        guard case .corrupt = DispatchProfile.load(from: url) else { Issue.record("negative threshold accepted"); return }
        var badCost = profile
        badCost.softwareCosts["sha1"] = CallCost(fixedNanoseconds: -1, nanosecondsPerByte: 1)
        try badCost.save(to: url)
        guard case .corrupt = DispatchProfile.load(from: url) else { Issue.record("a negative cost accepted"); return }
        // A profile of format 1 (one kernel table, before pluggable backends) is ignored with the reason.
        try Data(#"{"version": 1, "thresholds": {"sha1": 4096}}"#.utf8).write(to: url)
        guard case .corrupt(let reason) = DispatchProfile.load(from: url), reason.contains("format 1") else {
            Issue.record("a format-1 profile was not refused with its format")
            return
        }
    }

    @Test("the crossover is the smallest size from which the kernel wins at every larger size")
    func crossover() {
        func points(_ pairs: [(Int, Double, Double?)]) -> [Calibration.Point] {
            pairs.map { Calibration.Point(size: $0.0, softwareNanoseconds: $0.1, offloadNanoseconds: $0.2) }
        }
        #expect(Calibration.crossover(points([(16, 100, 2000), (1024, 1000, 1500), (4096, 4000, 3000), (65536, 60000, 20000)])) == 4096)
        // A win in the middle that is lost again at larger sizes is no crossover.
        #expect(Calibration.crossover(points([(16, 100, 2000), (1024, 1000, 500), (65536, 60000, 90000)])) == nil)
        // A tie within 5% is not a win.
        #expect(Calibration.crossover(points([(16, 100, 99), (1024, 1000, 990)])) == nil)
        #expect(Calibration.crossover(points([(16, 100, nil)])) == nil)
    }

    @Test("calibration measures, persists and applies a profile")
    func calibrate() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("calibrated.json")
        let dispatcher = Dispatcher()
        let results = try dispatcher.calibrate(routes: [Route.digest(.sha1)!], budget: .milliseconds(2), saveTo: url)
        #expect(results.count == 1)
        guard case .loaded(let profile) = DispatchProfile.load(from: url) else {
            Issue.record("calibration did not persist a loadable profile")
            return
        }
        #expect(profile.backends["kernel"]?.thresholds.keys.contains("sha1") == true)
        #expect(dispatcher.threshold(for: Route.digest(.sha1)!) == results[0].threshold)
        if !KernelBackend.isAvailable {
            #expect(results[0].threshold == nil)
            #expect(results[0].reason.contains("AF_ALG"))
        } else {
            #expect(results[0].points.count == Calibration.sizes.count)
        }
    }
}
