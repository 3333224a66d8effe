import SecurityBase
import CryptoContract
import CryptoDispatcher
public import Cryptography
import Entropy
import Foundation
import Synchronization

/// How a keychain's password becomes the key that wraps its secrets key: the function and its parameters, stored
/// with the keychain (so each keychain keeps the cost it was made with) and bound into the wrapped key.
public struct PasswordDerivation: Sendable, Hashable {
    public enum Function: Sendable, Hashable {
        /// scrypt (RFC 7914), the default.
        case scrypt(Scrypt.Parameters)
        /// PBKDF2-HMAC-SHA256 (RFC 8018), the fallback where scrypt's memory cannot be had or is not allowed.
        case pbkdf2SHA256(rounds: Int)
    }

    public let function: Function
    public let salt: [UInt8]

    public init(function: Function, salt: [UInt8]) {
        self.function = function
        self.salt = salt
    }

    /// A fresh 32-byte salt with `function`, or with scrypt calibrated to about 100 ms here when nil.
    /// - Throws: ``KeychainError`` `.parameter` naming the rule a weak `function` breaks (``check(_:)``).
    public static func fresh(_ function: Function? = nil) throws -> PasswordDerivation {
        let function = try function ?? .scrypt(Scrypt.calibrate(milliseconds: 100))
        try check(function)
        return PasswordDerivation(function: function, salt: try EntropySource.bytes(count: 32))
    }

    static let keySize = 32
    /// PBKDF2 rounds below this are refused, when a keychain is made and when one is read.
    static let minimumRounds = 10_000
    /// scrypt below N = 2^10 or a block size of 8 is refused, when a keychain is made and when one is read (the
    /// calibrated default is at least 2^15 with a block size of 8).
    static let minimumCostLog2 = 10
    static let minimumBlockSize = 8

    /// Refuses parameters weaker than the rules above, or that scrypt cannot run.
    /// - Throws: ``KeychainError`` `.parameter` naming the rule.
    static func check(_ function: Function) throws {
        switch function {
        case .scrypt(let parameters):
            guard parameters.costLog2 >= minimumCostLog2, parameters.blockSize >= minimumBlockSize else {
                throw KeychainError(
                    .parameter,
                    "scrypt needs a cost of at least 2^\(minimumCostLog2) and a block size of at least \(minimumBlockSize) (asked: 2^\(parameters.costLog2), \(parameters.blockSize))")
            }
            guard parameters.costLog2 <= Scrypt.Parameters.maximumCostLog2, parameters.parallelism >= 1, parameters.memoryBytes <= 1 << 32 else {
                throw KeychainError(.parameter, "scrypt's cost, parallelism or memory is out of range")
            }
        case .pbkdf2SHA256(let rounds):
            guard rounds >= minimumRounds else {
                throw KeychainError(.parameter, "PBKDF2 needs at least \(minimumRounds) rounds (asked: \(rounds))")
            }
        }
    }

    /// `1 | 1 | log2 N (1) | r (4) | p (4) | salt length (1) | salt` for scrypt, `1 | 2 | iterations (4) |
    /// salt length (1) | salt` for PBKDF2; integers big-endian.
    var encoded: [UInt8] {
        var bytes: [UInt8] = [1]
        func append32(_ value: Int) { bytes += withUnsafeBytes(of: UInt32(value).bigEndian, Array.init) }
        switch function {
        case .scrypt(let parameters):
            bytes += [1, UInt8(parameters.costLog2)]
            append32(parameters.blockSize)
            append32(parameters.parallelism)
        case .pbkdf2SHA256(let rounds):
            bytes.append(2)
            append32(rounds)
        }
        bytes.append(UInt8(salt.count))
        return bytes + salt
    }

    /// - Throws: ``KeychainError`` `.decode` for anything but an encoding of ours with sane parameters.
    init(decoding bytes: [UInt8]) throws {
        let malformed = KeychainError(.decode, "the keychain's password parameters are malformed")
        var rest = bytes[...]
        func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard rest.count >= count else { throw malformed }
            defer { rest = rest.dropFirst(count) }
            return rest.prefix(count)
        }
        func take32() throws -> Int { try take(4).reduce(0) { $0 << 8 | Int($1) } }
        guard try take(1).first == 1 else { throw malformed }
        switch try take(1).first {
        case 1:
            let costLog2 = Int(try take(1).first!)  // !: take(1) returned one byte
            let parameters = Scrypt.Parameters(costLog2: costLog2, blockSize: try take32(), parallelism: try take32())
            guard (try? Self.check(.scrypt(parameters))) != nil else { throw malformed }
            function = .scrypt(parameters)
        case 2:
            let rounds = try take32()
            guard (try? Self.check(.pbkdf2SHA256(rounds: rounds))) != nil else { throw malformed }
            function = .pbkdf2SHA256(rounds: rounds)
        default: throw malformed
        }
        let saltCount = Int(try take(1).first!)  // !: take(1) returned one byte
        salt = Array(try take(saltCount))
        guard salt.count >= 16, rest.isEmpty else { throw malformed }
    }

    /// The 32-byte key `password` derives.
    func deriveKey(_ password: SecretBytes) throws -> SecretBytes {
        var key = SecretBytes(zeroed: Self.keySize)
        try password.withUnsafeBytes { password in
            try salt.withUnsafeBytes { salt in
                try key.withUnsafeMutableBytes { output in
                    switch function {
                    case .scrypt(let parameters):
                        try Scrypt.deriveKey(password: password, salt: salt, parameters: parameters, into: output)
                    case .pbkdf2SHA256(let rounds):
                        try PBKDF2.deriveKey(password: password, salt: salt, prf: .sha256, rounds: rounds, into: output)
                    }
                }
            }
        }
        return key
    }
}

/// When a password-locked keychain locks itself: after `interval` without a call that needed its secrets (nil:
/// never), and whether it should lock when the machine sleeps (kept as Apple's settings keep it; Linux tells a
/// library nothing of sleep, so it is recorded, not acted on).
public struct KeychainLockSettings: Sendable, Hashable {
    public var interval: Duration?
    public var lockOnSleep: Bool

    public init(interval: Duration? = .seconds(300), lockOnSleep: Bool = false) {
        self.interval = interval
        self.lockOnSleep = lockOnSleep
    }
}

/// The secrets key of one password-locked keychain file in this process, locked or unlocked, shared by every store
/// of the process on that file (unlocking one unlocks them all, as a keychain is unlocked for a login session).
final class SecretsLock: Sendable {
    private struct State {
        /// The secrets key as a keyed AES-GCM context; nil while locked (the context freed: OpenSSL cleanses it).
        var key: SecretEnvelope.WrappingKey?
        var lastUse = ContinuousClock.now
        /// When the keychain was last unlocked with its password (nil: not since it was last locked).
        var unlockedAt: ContinuousClock.Instant?
        var settings: KeychainLockSettings
        /// Wrong passwords in a row: each one after the first waits longer before it answers.
        var failures = 0
        /// Bumped at each unlock and lock: an idle check scheduled for an earlier unlock does nothing.
        var generation = 0
    }

    private let state: Mutex<State>
    /// The keychain's database file, for events.
    private let path: String
    /// Serializes unlocks and password changes (each derives a key for ~100 ms) without holding `state` meanwhile.
    private let deriving = Mutex(())

    init(settings: KeychainLockSettings, path: String) {
        state = Mutex(State(settings: settings))
        self.path = path
    }

    private func post(_ kind: KeychainEvent.Kind) {
        KeychainEvents.post(KeychainEvent(kind: kind, path: path, itemClass: nil, persistentReference: nil))
    }

    var isLocked: Bool {
        let (locked, idleLocked) = state.withLock { state in
            let idleLocked = Self.lockIfIdle(&state)
            return (state.key == nil, idleLocked)
        }
        if idleLocked { post(.lock) }
        return locked
    }

    var settings: KeychainLockSettings {
        get { state.withLock { $0.settings } }
        set {
            let generation = state.withLock { state in
                state.settings = newValue
                return state.generation
            }
            scheduleIdleCheck(generation)
        }
    }

    /// The secrets key, for one call that seals or opens a secret (which counts as use).
    /// - Throws: ``KeychainError`` `.interactionNotAllowed` while locked (a library cannot ask for the password).
    func key() throws -> SecretEnvelope.WrappingKey {
        let (key, idleLocked) = state.withLock { state in
            let idleLocked = Self.lockIfIdle(&state)
            if state.key != nil { state.lastUse = .now }
            return (state.key, idleLocked)
        }
        if idleLocked { post(.lock) }
        guard let key else { throw KeychainError(.interactionNotAllowed, "the keychain is locked: unlock it with its password first") }
        return key
    }

    func lock() {
        let wasUnlocked = state.withLock { state in
            defer {
                state.key = nil
                state.unlockedAt = nil
                state.generation += 1
            }
            return state.key != nil
        }
        if wasUnlocked { post(.lock) }
    }

    /// Unwraps the secrets key from `wrapped` with `password` and keeps it.
    /// - Parameter waiting: whether a wrong password waits before it is answered (the keychain service delays its
    ///   answer itself, holding no thread).
    /// - Throws: ``KeychainError`` `.authFailed` for a wrong password, after a delay that doubles with each wrong
    ///   password in a row from the second (0.25 s, 0.5 s, … at most 8 s). The wait holds no lock: another caller's
    ///   right password is checked meanwhile (derivations run one at a time, each costing a guesser a full one).
    func unlock(_ password: SecretBytes, derivation: PasswordDerivation, wrapped: [UInt8], waiting: Bool = true) throws {
        do {
            try deriving.withLock { _ in
                let key = try Self.unwrap(wrapped, password: password, derivation: derivation)
                let generation = state.withLock { state in
                    state.key = key
                    state.lastUse = .now
                    state.unlockedAt = .now
                    state.failures = 0
                    state.generation += 1
                    return state.generation
                }
                scheduleIdleCheck(generation)
            }
            post(.unlock)
        } catch let error as KeychainError where error.code == .authFailed {
            failed(waiting: waiting)
            throw error
        }
    }

    /// Counts a wrong password, and waits its delay when `waiting`.
    private func failed(waiting: Bool) {
        let failures = state.withLock { state in
            state.failures += 1
            return state.failures
        }
        if waiting, failures > 1 { Thread.sleep(forTimeInterval: Self.failureDelay(failures)) }
    }

    /// Wrong passwords in a row so far.
    var consecutiveFailures: Int { state.withLock { $0.failures } }

    /// The wait after the `failures`-th wrong password in a row.
    static func failureDelay(_ failures: Int) -> TimeInterval { failures < 2 ? 0 : min(0.25 * Double(1 << min(failures - 2, 5)), 8) }

    /// Whether the keychain is unlocked and was unlocked with its password at most `duration` ago (a proof of the
    /// user that ``ItemAuthentication/reuse`` lets a read take instead of the password).
    func unlocked(within duration: Duration) -> Bool {
        guard duration > .zero, !isLocked else { return false }
        return state.withLock { state in state.unlockedAt.map { ContinuousClock.now - $0 <= duration } ?? false }
    }

    /// Checks `password` against `wrapped` without unlocking (a password change proves the old password this way): a
    /// wrong one counts and waits as a wrong unlock does.
    func verify(_ password: SecretBytes, derivation: PasswordDerivation, wrapped: [UInt8], waiting: Bool = true) throws -> SecretBytes {
        do {
            return try deriving.withLock { _ in try Self.unwrapBytes(wrapped, password: password, derivation: derivation) }
        } catch let error as KeychainError where error.code == .authFailed {
            failed(waiting: waiting)
            throw error
        }
    }

    // MARK: Wrapping

    /// The associated data of the wrapped secrets key: its purpose and the derivation, so a blob moved to another
    /// parameter set does not open.
    private static func identity(_ derivation: PasswordDerivation) -> [UInt8] {
        Array("SecurityServices keychain secrets key v1".utf8) + [0] + derivation.encoded
    }

    /// `secretsKey` wrapped under the key `password` derives.
    static func wrap(_ secretsKey: SecretBytes, password: SecretBytes, derivation: PasswordDerivation) throws -> [UInt8] {
        let kek = try derivation.deriveKey(password)
        let wrapping = SecretEnvelope.WrappingKey.keyed(try kek.withUnsafeBytes { try Dispatcher.shared.makeAEADKey(.aesGCM, key: $0) })
        return try secretsKey.withUnsafeBytes {
            try SecretEnvelope.seal(Array($0), identity: identity(derivation), wrapping: wrapping, engine: Dispatcher.shared)
        }
    }

    private static func unwrapBytes(_ wrapped: [UInt8], password: SecretBytes, derivation: PasswordDerivation) throws -> SecretBytes {
        let kek = try derivation.deriveKey(password)
        let wrapping = SecretEnvelope.WrappingKey.keyed(try kek.withUnsafeBytes { try Dispatcher.shared.makeAEADKey(.aesGCM, key: $0) })
        var key = SecretBytes(zeroed: try wrapped.withUnsafeBytes { try SecretEnvelope.plaintextCount($0) })
        let count: Int
        do {
            count = try wrapped.withUnsafeBytes { blob in
                try key.withUnsafeMutableBytes {
                    try SecretEnvelope.open(blob, identity: identity(derivation), wrapping: wrapping, engine: Dispatcher.shared, into: $0)
                }
            }
        } catch let error as KeychainError where error.code == .decode {
            // A tag that does not verify: the password is wrong (or the blob damaged, which no password fixes).
            throw KeychainError(.authFailed, "the password does not unlock this keychain")
        }
        guard count == PasswordDerivation.keySize else { throw KeychainError(.decode, "the keychain's wrapped key is malformed") }
        return key.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    private static func unwrap(_ wrapped: [UInt8], password: SecretBytes, derivation: PasswordDerivation) throws -> SecretEnvelope.WrappingKey {
        let key = try unwrapBytes(wrapped, password: password, derivation: derivation)
        return .keyed(try key.withUnsafeBytes { try Dispatcher.shared.makeAEADKey(.aesGCM, key: $0) })
    }

    /// A keyed context for a secrets key in hand (a keychain just created is unlocked).
    func adopt(_ secretsKey: SecretBytes) throws {
        let key = SecretEnvelope.WrappingKey.keyed(try secretsKey.withUnsafeBytes { try Dispatcher.shared.makeAEADKey(.aesGCM, key: $0) })
        let generation = state.withLock { state in
            state.key = key
            state.lastUse = .now
            state.generation += 1
            return state.generation
        }
        scheduleIdleCheck(generation)
    }

    // MARK: Idle locking

    /// Locks a keychain idle for its interval; whether it did.
    private static func lockIfIdle(_ state: inout State) -> Bool {
        guard state.key != nil, let interval = state.settings.interval, state.lastUse.duration(to: .now) >= interval else { return false }
        state.key = nil
        state.generation += 1
        return true
    }

    /// Locks the keychain once it has been idle for the settings' interval, even when no call comes to notice:
    /// the key does not outlive the interval in memory by more than the check's lateness.
    private func scheduleIdleCheck(_ generation: Int) {
        let due: ContinuousClock.Instant? = state.withLock { state in
            guard state.generation == generation, state.key != nil, let interval = state.settings.interval else { return nil }
            return state.lastUse + interval
        }
        guard let due else { return }
        let delay = max(ContinuousClock.now.duration(to: due), .milliseconds(1))
        let nanoseconds = Int(delay.components.seconds) * 1_000_000_000 + Int(delay.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            guard let self else { return }
            let (stillUnlocked, idleLocked) = self.state.withLock { state in
                let idleLocked = Self.lockIfIdle(&state)
                return (state.generation == generation && state.key != nil, idleLocked)
            }
            if idleLocked { self.post(.lock) }
            if stillUnlocked { self.scheduleIdleCheck(generation) }
        }
    }
}
