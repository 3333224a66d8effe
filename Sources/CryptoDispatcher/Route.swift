public import CryptoContract

/// An operation the dispatcher may send to the kernel, with its own threshold and counters: a cipher family
/// in a mode and direction (`aes-cbc-encrypt`), a digest (`sha1`) or an HMAC (`hmac-sha1`).
///
/// AES key sizes share one route: the engine's speed does not depend on them enough to matter for routing.
public struct Route: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// Dense index into the dispatcher's tables.
    let index: Int

    private init(index: Int) { self.index = index }

    static let cipherFamilies: [(name: String, algorithms: [CipherAlgorithm])] = [
        ("aes", [.aes128, .aes192, .aes256]), ("des", [.des]), ("3des", [.tripleDES]), ("cast5", [.cast5]),
        ("blowfish", [.blowfish]),
    ]
    static let cipherModes: [CipherMode] = [.ecb, .cbc, .ctr]
    static let digests: [DigestAlgorithm] = [.md4, .md5, .sha1, .sha224, .sha256, .sha384, .sha512]
    static let hmacs: [DigestAlgorithm] = [.md5, .sha1, .sha224, .sha256, .sha384, .sha512]
    static let cipherCount = cipherFamilies.count * cipherModes.count * 2
    static let count = cipherCount + digests.count + hmacs.count

    /// Every route.
    public static let all: [Route] = (0..<count).map(Route.init(index:))

    /// The routes of the phone's engine, the only ones the kernel gets by default: AES-ECB/CBC, SHA-1, HMAC-SHA1.
    public static let phoneEngine: [Route] = ([
        .cipher(.aes128, .ecb, .encrypt), .cipher(.aes128, .ecb, .decrypt), .cipher(.aes128, .cbc, .encrypt),
        .cipher(.aes128, .cbc, .decrypt), .digest(.sha1), .hmac(.sha1),
    ] as [Route?]).compactMap { $0 }

    /// The route of a cipher call, `nil` when the kernel never serves it.
    public static func cipher(_ algorithm: CipherAlgorithm, _ mode: CipherMode, _ direction: CipherDirection) -> Route? {
        guard let family = familyIndex(algorithm), let modeIndex = modeIndex(mode) else { return nil }
        let pair: Int = family * cipherModes.count + modeIndex
        let offset: Int = direction == .encrypt ? 0 : 1
        return Route(index: pair * 2 + offset)
    }

    public static func digest(_ algorithm: DigestAlgorithm) -> Route? {
        digestIndex(algorithm).map { Route(index: cipherCount + $0) }
    }

    public static func hmac(_ algorithm: DigestAlgorithm) -> Route? {
        hmacIndex(algorithm).map { Route(index: cipherCount + digests.count + $0) }
    }

    /// A route by its ``name`` (`aes-cbc-encrypt`, `sha1`, `hmac-sha1`), case-insensitive.
    public init?(name: String) {
        guard let route = Route.all.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = route
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

    /// An operation of the contract this route stands for (the AES-128 one for AES routes).
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

    private static func familyIndex(_ algorithm: CipherAlgorithm) -> Int? {
        switch algorithm {
        case .aes128, .aes192, .aes256: 0
        case .des: 1
        case .tripleDES: 2
        case .cast5: 3
        case .blowfish: 4
        case .rc2, .rc4: nil
        }
    }

    private static func modeIndex(_ mode: CipherMode) -> Int? {
        switch mode {
        case .ecb: 0
        case .cbc: 1
        case .ctr: 2
        default: nil
        }
    }

    private static func digestIndex(_ algorithm: DigestAlgorithm) -> Int? {
        switch algorithm {
        case .md2: nil
        case .md4: 0
        case .md5: 1
        case .sha1: 2
        case .sha224: 3
        case .sha256: 4
        case .sha384: 5
        case .sha512: 6
        }
    }

    private static func hmacIndex(_ algorithm: DigestAlgorithm) -> Int? {
        switch algorithm {
        case .md2, .md4: nil
        case .md5: 0
        case .sha1: 1
        case .sha224: 2
        case .sha256: 3
        case .sha384: 4
        case .sha512: 5
        }
    }
}
