public import CryptoContract

/// An operation the dispatcher may send to an offload backend, with its own threshold and counters: a cipher
/// in a mode and direction (`aes128-cbc-encrypt`), a digest (`sha1`) or an HMAC (`hmac-sha1`).
///
/// Each AES key size is a route of its own: an engine's speed hardly depends on it, but software's does (14 rounds
/// against 10), so the crossover does too — measured in the engine lanes, AES-256-CBC decryption crosses over where
/// AES-128 never does. `aes-…` names all three where a name is read (environment, ``routes(named:)``).
public struct Route: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// Dense index into the dispatcher's tables.
    let index: Int

    private init(index: Int) { self.index = index }

    static let cipherFamilies: [(name: String, algorithms: [CipherAlgorithm])] = [
        ("aes128", [.aes128]), ("aes192", [.aes192]), ("aes256", [.aes256]), ("des", [.des]), ("3des", [.tripleDES]),
        ("cast5", [.cast5]),
        ("blowfish", [.blowfish]),
    ]
    static let cipherModes: [CipherMode] = [.ecb, .cbc, .ctr]
    static let digests: [DigestAlgorithm] = [.md4, .md5, .sha1, .sha224, .sha256, .sha384, .sha512]
    static let hmacs: [DigestAlgorithm] = [.md5, .sha1, .sha224, .sha256, .sha384, .sha512]

    // The tables' sizes as literals: a routed call reads them, and a `static let` computed from the arrays above is
    // initialized lazily, so every read was a `swift_once` call (two per HMAC call, in `perf annotate`). A literal is
    // a constant in the binary. `DispatcherTests` (route names) checks them against the arrays.
    static let modeCount = 3
    static let cipherCount = 42
    static let digestCount = 7
    static let count = 55

    /// Every route.
    public static let all: [Route] = (0..<count).map(Route.init(index:))

    /// The routes of the phone's engine, the only ones an offload backend gets by default: AES-ECB/CBC (every key
    /// size), SHA-1, HMAC-SHA1.
    public static let phoneEngine: [Route] =
        [CipherAlgorithm.aes128, .aes192, .aes256].flatMap { algorithm in
            [CipherMode.ecb, .cbc].flatMap { mode in [CipherDirection.encrypt, .decrypt].compactMap { cipher(algorithm, mode, $0) } }
        } + [digest(.sha1), hmac(.sha1)].compactMap { $0 }

    /// The route of a cipher call, `nil` when the kernel never serves it.
    @inline(__always)
    public static func cipher(_ algorithm: CipherAlgorithm, _ mode: CipherMode, _ direction: CipherDirection) -> Route? {
        guard let family = familyIndex(algorithm), let modeIndex = modeIndex(mode) else { return nil }
        let pair: Int = family * modeCount + modeIndex
        let offset: Int = direction == .encrypt ? 0 : 1
        return Route(index: pair * 2 + offset)
    }

    @inline(__always)
    public static func digest(_ algorithm: DigestAlgorithm) -> Route? {
        digestIndex(algorithm).map { Route(index: cipherCount + $0) }
    }

    @inline(__always)
    public static func hmac(_ algorithm: DigestAlgorithm) -> Route? {
        hmacIndex(algorithm).map { Route(index: cipherCount + digestCount + $0) }
    }

    /// A route by its ``name`` (`aes128-cbc-encrypt`, `sha1`, `hmac-sha1`), case-insensitive.
    public init?(name: String) {
        guard let route = Route.all.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = route
    }

    /// The routes a name stands for: one route by its ``name``, or, for `aes-<mode>-<direction>`, the three AES key
    /// sizes' routes; empty when the name means nothing.
    public static func routes(named name: String) -> [Route] {
        let lowered = name.lowercased()
        if let route = Route(name: lowered) { return [route] }
        guard lowered.hasPrefix("aes-") else { return [] }
        return ["aes128", "aes192", "aes256"].compactMap { Route(name: $0 + lowered.dropFirst(3)) }
    }

    /// The stable name used in the environment, the profile, the benchmark and counters.
    public var name: String {
        if index < Self.cipherCount {
            let family = Self.cipherFamilies[index / (Self.cipherModes.count * 2)].name
            let mode = Self.cipherModes[(index / 2) % Self.cipherModes.count]
            return "\(family)-\(mode)-" + (index % 2 == 0 ? "encrypt" : "decrypt")
        }
        if index < Self.cipherCount + Self.digests.count { return Self.digests[index - Self.cipherCount].rawValue }
        return "hmac-" + Self.hmacs[index - Self.cipherCount - Self.digests.count].rawValue
    }

    /// The three kinds of call a route is one of, each a run of route indexes.
    enum Kind {
        case cipher, digest, hmac

        var indexes: Range<Int> {
            switch self {
            case .cipher: 0..<Route.cipherCount
            case .digest: Route.cipherCount..<Route.cipherCount + Route.digestCount
            case .hmac: Route.cipherCount + Route.digestCount..<Route.count
            }
        }
    }

    var kind: Kind {
        index < Self.cipherCount ? .cipher : index < Self.cipherCount + Self.digestCount ? .digest : .hmac
    }

    /// The operation of the contract this route stands for.
    public var operation: CryptoOperation {
        if index < Self.cipherCount {
            let family = Self.cipherFamilies[index / (Self.cipherModes.count * 2)]
            return .cipher(family.algorithms[0], Self.cipherModes[(index / 2) % Self.cipherModes.count])
        }
        if index < Self.cipherCount + Self.digests.count { return .digest(Self.digests[index - Self.cipherCount]) }
        return .hmac(Self.hmacs[index - Self.cipherCount - Self.digests.count])
    }

    /// For cipher routes, the direction.
    public var direction: CipherDirection? {
        index < Self.cipherCount ? (index % 2 == 0 ? .encrypt : .decrypt) : nil
    }

    public var description: String { name }
    public static func < (lhs: Route, rhs: Route) -> Bool { lhs.index < rhs.index }

    // The indexes below are switches onto -1 for "no route", not onto an optional: a switch of integers the compiler
    // turns into arithmetic or a table load, where the optional's switch was a jump table, one indirect jump more per
    // routed call. The optional is made after the switch (`present`): testing the -1s in `cipher` instead let the
    // compiler fold the test into the family switch, a jump table again.

    @inline(__always)
    private static func familyIndex(_ algorithm: CipherAlgorithm) -> Int? { present(familySlot(algorithm)) }

    @inline(__always)
    private static func modeIndex(_ mode: CipherMode) -> Int? { present(modeSlot(mode)) }

    @inline(__always)
    private static func digestIndex(_ algorithm: DigestAlgorithm) -> Int? { present(digestSlot(algorithm)) }

    @inline(__always)
    private static func hmacIndex(_ algorithm: DigestAlgorithm) -> Int? { present(hmacSlot(algorithm)) }

    @inline(__always)
    private static func present(_ slot: Int) -> Int? { slot < 0 ? nil : slot }

    @inline(__always)
    private static func familySlot(_ algorithm: CipherAlgorithm) -> Int {
        switch algorithm {
        case .aes128: 0
        case .aes192: 1
        case .aes256: 2
        case .des: 3
        case .tripleDES: 4
        case .cast5: 5
        case .blowfish: 6
        case .rc2, .rc4: -1
        }
    }

    @inline(__always)
    private static func modeSlot(_ mode: CipherMode) -> Int {
        switch mode {
        case .ecb: 0
        case .cbc: 1
        case .ctr: 2
        default: -1
        }
    }

    @inline(__always)
    private static func digestSlot(_ algorithm: DigestAlgorithm) -> Int {
        switch algorithm {
        case .md2: -1
        case .md4: 0
        case .md5: 1
        case .sha1: 2
        case .sha224: 3
        case .sha256: 4
        case .sha384: 5
        case .sha512: 6
        }
    }

    @inline(__always)
    private static func hmacSlot(_ algorithm: DigestAlgorithm) -> Int {
        switch algorithm {
        case .md2, .md4: -1
        case .md5: 0
        case .sha1: 1
        case .sha224: 2
        case .sha256: 3
        case .sha384: 4
        case .sha512: 5
        }
    }
}
