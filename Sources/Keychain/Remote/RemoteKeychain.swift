public import KeychainWire
public import Foundation

/// A keychain kept by the keychain service (`securityd`): every call goes to it over its Unix socket, and it decides
/// which access groups this process may use (from the kernel's word on who is calling and its policy), not this
/// process. A password-locked keychain is unlocked in the service, for every process of the caller's uid.
public final class RemoteKeychain: KeychainStorage {
    /// The service's socket.
    public let socketPath: String
    /// The groups the service granted, a subset of those asked for.
    public let accessGroups: [String]
    /// The service's keychain this one acts on, by name; nil for the caller's default one.
    public let keychainName: String?
    private let client: KeychainServiceClient

    /// The caller's keychain in the keychain service listening at `socketPath`.
    /// - Parameters:
    ///   - accessGroups: the groups to act in, a subset of those the service grants (empty: all of them, the first
    ///     as the default for adds).
    ///   - keychain: the caller's keychain of that name in the service (a file name: letters, digits, `.`, `_`,
    ///     `-`); nil for its default keychain.
    ///   - create: whether a named keychain that does not exist is made (else `.itemNotFound`).
    /// - Throws: ``KeychainError`` `.io` when no service listens there, `.missingEntitlement` when the service
    ///   grants none of `accessGroups`.
    public init(socketPath: String, accessGroups: [String] = [], keychain: String? = nil, create: Bool = true) throws {
        let client = try KeychainServiceClient(socketPath: socketPath)
        guard case .groups(let granted) = try client.call(.hello(requesting: accessGroups)), !granted.isEmpty else {
            throw KeychainError(.missingEntitlement, "the keychain service grants none of the access groups asked for")
        }
        if let keychain {
            guard case .lockStatus = try client.call(.openKeychain(name: keychain, create: create)) else { throw Self.unexpectedAnswer }
        }
        self.socketPath = socketPath
        self.accessGroups = granted
        keychainName = keychain
        self.client = client
    }

    /// `securityd:<name> at <socket>`.
    public var location: String { "securityd:\(keychainName ?? "default") at \(socketPath)" }

    /// Deletes the caller's keychain named `name` in the keychain service at `socketPath`.
    /// - Throws: ``KeychainError`` `.itemNotFound` when there is none, `.parameter` for a name that is not one.
    public static func deleteKeychain(named name: String, socketPath: String) throws {
        let client = try KeychainServiceClient(socketPath: socketPath)
        _ = try client.call(.hello(requesting: []))
        guard case .count = try client.call(.deleteKeychain(name: name)) else { throw unexpectedAnswer }
    }

    /// An answer of the wrong kind for its request.
    static let unexpectedAnswer = KeychainError(.parameter, "the keychain service answered with something else")

    public func add(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data?, returning: ReturnOptions) throws -> KeychainItem {
        guard case .item(let item) = try client.call(.add(itemClass, attributes: attributes, data: data, returning: returning)) else {
            throw Self.unexpectedAnswer
        }
        return item
    }

    public func addIdentity(
        certificate: (attributes: ItemAttributes, data: Data), privateKey: (attributes: ItemAttributes, data: Data), returning: ReturnOptions
    ) throws -> KeychainItem {
        let request = KeychainWire.Request.addIdentity(
            certificate: certificate.attributes, certificateData: certificate.data, key: privateKey.attributes, keyData: privateKey.data,
            returning: returning)
        guard case .item(let item) = try client.call(request) else { throw Self.unexpectedAnswer }
        return item
    }

    public func add(_ items: [NewItem], unlessAnyMatches conditions: [ItemQuery]) throws -> Bool {
        guard case .added(let added) = try client.call(.addItems(items, unlessAnyMatches: conditions)) else { throw Self.unexpectedAnswer }
        return added
    }

    public func find(_ query: ItemQuery) throws -> [KeychainItem] {
        guard case .items(let items) = try client.call(.find(query)) else { throw Self.unexpectedAnswer }
        return items
    }

    public func update(_ query: ItemQuery, attributes changes: ItemAttributes, data: Data?) throws -> Int {
        guard case .count(let count) = try client.call(.update(query, attributes: changes, data: data)) else { throw Self.unexpectedAnswer }
        return count
    }

    public func delete(_ query: ItemQuery) throws -> Int {
        guard case .count(let count) = try client.call(.delete(query)) else { throw Self.unexpectedAnswer }
        return count
    }

    public func lockStatus() throws -> (passwordLocked: Bool, locked: Bool) { try lockCall(.status) }

    public func setInitialPassword(_ password: some DataProtocol, derivation: PasswordDerivation.Function?, settings: KeychainLockSettings) throws {
        guard derivation == nil, settings == KeychainLockSettings() else {
            throw KeychainError(.parameter, "the keychain service chooses the derivation and keeps the default settings")
        }
        _ = try lockCall(.setPassword(Data(password)))
    }

    public func unlock(password: some DataProtocol) throws { _ = try lockCall(.unlock(Data(password))) }

    public func verifyPassword(_ password: some DataProtocol) throws { _ = try lockCall(.verifyPassword(Data(password))) }

    public func lock() throws { _ = try lockCall(.lock) }

    public func changePassword(old: some DataProtocol, new: some DataProtocol, derivation: PasswordDerivation.Function?) throws {
        guard derivation == nil else { throw KeychainError(.parameter, "the keychain service chooses the derivation") }
        _ = try lockCall(.changePassword(old: Data(old), new: Data(new)))
    }

    public func lockSettings() throws -> KeychainLockSettings {
        guard case .lockSettings(let interval, let lockOnSleep) = try client.call(.keychainLock(.settings)) else { throw Self.unexpectedAnswer }
        return KeychainLockSettings(interval: interval.map { .seconds($0) }, lockOnSleep: lockOnSleep)
    }

    public func setLockSettings(_ settings: KeychainLockSettings) throws {
        _ = try lockCall(.setSettings(interval: settings.interval.map { max(1, $0.components.seconds) }, lockOnSleep: settings.lockOnSleep))
    }

    /// A lock request, and the lock status the service answers with.
    private func lockCall(_ request: KeychainWire.LockRequest) throws -> (passwordLocked: Bool, locked: Bool) {
        guard case .lockStatus(let passwordLocked, let locked) = try client.call(.keychainLock(request)) else { throw Self.unexpectedAnswer }
        return (passwordLocked, locked)
    }

    /// A private-key operation done by the keychain service with the key of the key or identity item
    /// `reference` names, in the caller's groups: the key does not leave the service.
    /// - Parameters:
    ///   - algorithm: Apple's `SecKeyAlgorithm` string.
    ///   - authentication: the proof of the user, for a key whose access control asks for it (the one the key was
    ///     found with).
    /// - Returns: the signature or the plaintext.
    /// - Throws: ``KeychainError`` `.itemNotFound` when no key or identity of the caller's groups has the reference;
    ///   `.parameter` for a public key, an algorithm the key does not run, or input it does not take.
    public func keyOperation(
        _ kind: KeychainWire.KeyOperationKind, reference: Data, algorithm: String, input: Data, authentication: ItemAuthentication? = nil
    ) throws -> Data {
        let request = KeychainWire.Request.keyOperation(kind, reference: reference, algorithm: algorithm, input: input, authentication: authentication)
        guard case .bytes(let output) = try client.call(request) else { throw Self.unexpectedAnswer }
        return output
    }

    /// A private key generated and kept by the keychain service (the key never exists in this process).
    /// - Parameters:
    ///   - keyType: Apple's `kSecAttrKeyType` code, 42 (RSA, 1024–4096 bits in whole bytes) or 73 (EC, 256, 384
    ///     or 521 bits).
    ///   - attributes: added to those the key derives (application tag, label, access group, …).
    /// - Returns: the key item as the service seals it (``KeychainWire/heldKeyTokenID``), with what `returning` asks.
    /// - Throws: ``KeychainError`` `.parameter` for another type or size; the store's errors (`duplicateItem`,
    ///   `missingEntitlement`, …).
    public func generateKey(keyType: Int64, bits: Int, attributes: ItemAttributes, returning: ReturnOptions) throws -> KeychainItem {
        let request = KeychainWire.Request.generateKey(keyType: keyType, bits: bits, attributes: attributes, returning: returning)
        guard case .item(let item) = try client.call(request) else { throw Self.unexpectedAnswer }
        return item
    }
}
