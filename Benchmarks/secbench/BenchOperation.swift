import CBaselines
import CryptoContract
import CryptoDispatcher
import KernelBackend

/// An operation the benchmark compares: one the phone's engine offloaded, or SHA-256 for contrast.
struct BenchOperation: Sendable {
    let name: String
    let route: Route
    let kind: Kind

    /// Whether an engine serves the route here, so that the dispatcher may send calls away from software.
    var runsOnEngine: Bool { Dispatcher.shared.placement(of: route).isEngine }

    enum Kind: Sendable {
        case cipher(CipherSpec, CipherDirection)
        case digest(DigestAlgorithm)
        case hmac(DigestAlgorithm)
    }

    static let all: [BenchOperation] = [
        .init(name: "aes-128-cbc-encrypt", route: .cipher(.aes128, .cbc, .encrypt)!, kind: .cipher(CipherSpec(.aes128, .cbc), .encrypt)),
        .init(name: "aes-128-cbc-decrypt", route: .cipher(.aes128, .cbc, .decrypt)!, kind: .cipher(CipherSpec(.aes128, .cbc), .decrypt)),
        .init(name: "aes-256-cbc-encrypt", route: .cipher(.aes256, .cbc, .encrypt)!, kind: .cipher(CipherSpec(.aes256, .cbc), .encrypt)),
        .init(name: "aes-256-cbc-decrypt", route: .cipher(.aes256, .cbc, .decrypt)!, kind: .cipher(CipherSpec(.aes256, .cbc), .decrypt)),
        .init(name: "aes-128-ecb-encrypt", route: .cipher(.aes128, .ecb, .encrypt)!, kind: .cipher(CipherSpec(.aes128, .ecb), .encrypt)),
        .init(name: "sha1", route: .digest(.sha1)!, kind: .digest(.sha1)),
        .init(name: "sha256", route: .digest(.sha256)!, kind: .digest(.sha256)),
        .init(name: "hmac-sha1", route: .hmac(.sha1)!, kind: .hmac(.sha1)),
    ]

    /// The kernel's algorithm name, for the driver column.
    var kernelName: String { KernelAlgorithmNames.name(for: route.operation) ?? "?" }
}

/// Who is measured.
enum BenchBackend: String, CaseIterable, Sendable {
    case software, kernel, dispatch, opensslC = "openssl-c", kcapiC = "kcapi-c"
    /// Software and OpenSSL in C with a different key on every call (ciphers and HMAC): no key is seen twice in a
    /// row, so no expanded key is reused.
    case softwareFreshKey = "software-fresh-key", opensslCFreshKey = "openssl-c-fresh-key"
    /// The software backend timed a second time, through a runner of its own: its ratio to ``software`` is the
    /// harness's own error, the bound on what a ratio of two of our paths can resolve.
    case softwareControl = "software-control"
    /// The kernel backend run a second time in the concurrency series, after the dispatcher: its ratio to ``kernel``
    /// is what the series can resolve at that point (an engine's latency moves with the host's scheduling).
    case kernelControl = "kernel-control"
}

/// One backend's call at a point, under its name. A struct, not a tuple: a closure that is an element of a tuple
/// stored in an array is kept in the generic (most abstract) form, behind a thunk and a box of its own, so every
/// timed call went through two more indirect calls and a load from that box; identical runners then differed by up
/// to 5 % with their place in the list (the software backend timed twice: 0.96-0.99 of itself).
struct BenchRunner {
    let backend: BenchBackend
    let run: () throws -> Void

    init(_ backend: BenchBackend, _ run: @escaping () throws -> Void) {
        self.backend = backend
        self.run = run
    }
}

/// Buffers and keys for one (operation, size), and a runner per backend over them.
final class BenchPoint {
    let operation: BenchOperation
    let size: Int
    let input: UnsafeMutableRawBufferPointer
    let output: UnsafeMutableRawBufferPointer
    let key: [UInt8] = (0..<32).map { UInt8($0 &* 7 &+ 1) }
    let iv: [UInt8] = (0..<16).map { UInt8(0x80 | $0) }
    /// The keys a fresh-key runner takes in turn: more than a thread's cache of keyed contexts holds (4), the first
    /// being ``key`` so that the first call of every runner gives the same bytes.
    let freshKeys: [[UInt8]]
    /// ``freshKeys`` one after the other, 32 bytes each, and ``iv``: what the runners read.
    private let keyStore: UnsafeMutableRawBufferPointer
    private let ivStore: UnsafeMutableRawBufferPointer
    /// Each keyed runner's offset of its next key, in memory of its own: a `var` the runner's closure captured was
    /// checked for exclusive access on every call (`swift_beginAccess` and its access set, 8 % of a 16-byte AES
    /// call's `perf` samples), which the C baselines' repeated-key runs do not pay.
    private var cursors: [UnsafeMutablePointer<Int>] = []

    init(_ operation: BenchOperation, size: Int) {
        self.operation = operation
        self.size = size
        input = .allocate(byteCount: max(size, 16), alignment: 4096)
        output = .allocate(byteCount: max(size, 16) + 64, alignment: 4096)
        for index in 0..<input.count { input[index] = UInt8(truncatingIfNeeded: index &* 131 &+ 7) }
        let key = self.key
        freshKeys = [key] + (1..<16).map { round in key.map { $0 ^ UInt8(truncatingIfNeeded: round &* 29) } }
        keyStore = .allocate(byteCount: 32 * freshKeys.count, alignment: 16)
        keyStore.copyBytes(from: freshKeys.joined())
        ivStore = .allocate(byteCount: 16, alignment: 16)
        ivStore.copyBytes(from: iv)
    }

    /// Whether the operation takes a key (a fresh-key runner means something).
    var isKeyed: Bool {
        if case .digest = operation.kind { return false }
        return true
    }

    deinit {
        input.deallocate()
        output.deallocate()
        keyStore.deallocate()
        ivStore.deallocate()
        for cursor in cursors { cursor.deallocate() }
    }

    /// One call through a backend of the project; with `freshKeys`, each call under the next of ``freshKeys``.
    func runner<Backend: CryptoBackend>(_ backend: Backend, freshKeys: Bool = false) -> () throws -> Void {
        let data = UnsafeRawBufferPointer(rebasing: input[..<size])
        let output = self.output
        // Keys and IV in memory of the point's: no array is retained or released per call.
        let keys = UnsafeRawBufferPointer(freshKeys ? keyStore : UnsafeMutableRawBufferPointer(rebasing: keyStore[..<32]))
        let iv = UnsafeRawBufferPointer(ivStore)
        let offset = cursor()
        func nextKey(_ count: Int) -> UnsafeRawBufferPointer {
            let key = UnsafeRawBufferPointer(rebasing: keys[offset.pointee..<offset.pointee + count])
            offset.pointee = offset.pointee + 32 == keys.count ? 0 : offset.pointee + 32
            return key
        }
        switch operation.kind {
        case .cipher(let spec, let direction):
            let keyCount = spec.algorithm.keySizes.lowerBound
            return { _ = try backend.crypt(direction, spec, key: nextKey(keyCount), iv: iv, input: data, output: output) }
        case .digest(let algorithm):
            return { try backend.digest(algorithm, input: data, output: output) }
        case .hmac(let algorithm):
            return { try backend.hmac(algorithm, key: nextKey(16), input: data, output: output) }
        }
    }

    /// One call through a C baseline; `nil` when the library cannot run it here.
    func baselineRunner(_ library: String) -> CBaseline? {
        CBaseline(library, operation.name, key: key, iv: iv, input: UnsafeRawBufferPointer(rebasing: input[..<size]), output: output)
    }

    /// The OpenSSL C baseline taking the next of ``freshKeys`` on each call.
    func freshKeyBaselineRunner(_ baseline: CBaseline) -> () throws -> Void {
        let keys = UnsafeRawBufferPointer(keyStore)
        let offset = cursor()
        return {
            let key = UnsafeRawBufferPointer(rebasing: keys[offset.pointee..<offset.pointee + 32])
            offset.pointee = offset.pointee + 32 == keys.count ? 0 : offset.pointee + 32
            try baseline.run(key: key)
        }
    }

    /// A new runner's key offset, at 0, freed with the point.
    private func cursor() -> UnsafeMutablePointer<Int> {
        let cursor = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        cursor.initialize(to: 0)
        cursors.append(cursor)
        return cursor
    }

    /// The bytes the operation produced last (for the cross-check between backends).
    var result: [UInt8] {
        switch operation.kind {
        case .cipher: Array(output[..<size])
        case .digest(let algorithm), .hmac(let algorithm): Array(output[..<algorithm.outputSize])
        }
    }
}

/// Owns one C baseline object.
final class CBaseline {
    private let pointer: OpaquePointer
    private let input: UnsafeRawBufferPointer
    private let output: UnsafeMutableRawBufferPointer

    init?(_ library: String, _ operation: String, key: [UInt8], iv: [UInt8], input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) {
        guard let pointer = cbaseline_new(library, operation, key, iv) else { return nil }
        self.pointer = pointer
        self.input = input
        self.output = output
    }

    deinit { cbaseline_free(pointer) }

    func run() throws {
        guard cbaseline_run(pointer, input.bindMemory(to: UInt8.self).baseAddress, input.count, output.bindMemory(to: UInt8.self).baseAddress) == 0 else {
            throw CryptoError(.backendFailure, "C baseline failed")
        }
    }

    func run(key: UnsafeRawBufferPointer) throws {
        guard cbaseline_run_keyed(pointer, key.bindMemory(to: UInt8.self).baseAddress, input.bindMemory(to: UInt8.self).baseAddress, input.count, output.bindMemory(to: UInt8.self).baseAddress) == 0 else {
            throw CryptoError(.backendFailure, "C baseline failed")
        }
    }
}
