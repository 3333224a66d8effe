public import KeychainWire
public import Foundation

/// A keychain: items, their secrets encrypted at rest, seen through the caller's access groups; kept in this
/// process (``EmbeddedKeychain``, a SQLite file) or by the keychain service (``RemoteKeychain``), chosen when it is
/// opened. The calls are the same either way (``KeychainStorage``); the few that only one kind offers say so.
public final class KeychainStore: Sendable {
    /// The keychain the calls go to.
    public let storage: any KeychainStorage

    /// The store over `storage`.
    public init(_ storage: any KeychainStorage) {
        self.storage = storage
    }

    /// Opens (creating on first use) the keychain at `path` with `masterKey`, for a caller in `accessGroups`
    /// (``EmbeddedKeychain/init(path:masterKey:accessGroups:)``).
    public convenience init(path: String, masterKey: any MasterKeyHolder, accessGroups: [String]) throws {
        self.init(try EmbeddedKeychain(path: path, masterKey: masterKey, accessGroups: accessGroups))
    }

    /// Opens the keychain at `path` with the master key in the key file beside it (``EmbeddedKeychain/init(path:accessGroups:)``).
    public convenience init(path: String, accessGroups: [String]) throws {
        self.init(try EmbeddedKeychain(path: path, accessGroups: accessGroups))
    }

    /// The caller's keychain in the keychain service listening at `socketPath`
    /// (``RemoteKeychain/init(socketPath:accessGroups:keychain:create:)``).
    public convenience init(service socketPath: String, accessGroups: [String] = [], keychain: String? = nil, create: Bool = true) throws {
        self.init(try RemoteKeychain(socketPath: socketPath, accessGroups: accessGroups, keychain: keychain, create: create))
    }

    /// Creates a password-locked keychain at `path` and opens it, unlocked
    /// (``EmbeddedKeychain/createPasswordLocked(path:password:accessGroups:derivation:settings:)``).
    public static func createPasswordLocked(
        path: String, password: some DataProtocol, accessGroups: [String], derivation: PasswordDerivation.Function? = nil,
        settings: KeychainLockSettings = KeychainLockSettings()
    ) throws -> KeychainStore {
        KeychainStore(
            try EmbeddedKeychain.createPasswordLocked(
                path: path, password: password, accessGroups: accessGroups, derivation: derivation, settings: settings))
    }

    /// Deletes the caller's keychain named `name` in the keychain service at `socketPath`.
    /// - Throws: ``KeychainError`` `.itemNotFound` when there is none, `.parameter` for a name that is not one.
    public static func deleteServiceKeychain(named name: String, service socketPath: String) throws {
        try RemoteKeychain.deleteKeychain(named: name, socketPath: socketPath)
    }

    /// The keychain when it is kept in this process.
    public var embedded: EmbeddedKeychain? { storage as? EmbeddedKeychain }
    /// The keychain when the keychain service keeps it.
    public var remote: RemoteKeychain? { storage as? RemoteKeychain }

    /// The database file, or the service's socket.
    public var path: String { embedded?.path ?? remote?.socketPath ?? location }
    /// The caller's access groups: adds go to the first unless told otherwise; queries see only these. For a remote
    /// keychain, the groups the service granted.
    public var accessGroups: [String] { storage.accessGroups }
    /// The service's keychain this store acts on, by name; nil for the caller's default one (or an embedded store).
    public var serviceKeychain: String? { remote?.keychainName }
    /// What this store is, for people: the database's path, or the service's socket and keychain
    /// (`securityd:<name> at <socket>`).
    public var location: String { storage.location }

    // The item calls: ``KeychainStorage`` says what each does.

    @discardableResult
    public func add(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data? = nil, returning: ReturnOptions = []) throws -> KeychainItem {
        try storage.add(itemClass, attributes: attributes, data: data, returning: returning)
    }

    @discardableResult
    public func addIdentity(
        certificate: (attributes: ItemAttributes, data: Data), privateKey: (attributes: ItemAttributes, data: Data), returning: ReturnOptions = []
    ) throws -> KeychainItem {
        try storage.addIdentity(certificate: certificate, privateKey: privateKey, returning: returning)
    }

    /// An item for ``add(_:unlessAnyMatches:)``.
    public typealias NewItem = KeychainModel.NewItem

    @discardableResult
    public func add(_ items: [NewItem], unlessAnyMatches conditions: [ItemQuery]) throws -> Bool {
        try storage.add(items, unlessAnyMatches: conditions)
    }

    public func find(_ query: ItemQuery) throws -> [KeychainItem] { try storage.find(query) }

    @discardableResult
    public func update(_ query: ItemQuery, attributes changes: ItemAttributes, data: Data? = nil) throws -> Int {
        try storage.update(query, attributes: changes, data: data)
    }

    @discardableResult
    public func delete(_ query: ItemQuery) throws -> Int { try storage.delete(query) }

    // The password lock.

    public func lockStatus() throws -> (passwordLocked: Bool, locked: Bool) { try storage.lockStatus() }

    /// Whether this keychain's secrets are locked by a password; for a remote keychain, the service's answer (false
    /// when it cannot be asked).
    public var isPasswordLocked: Bool { embedded?.isPasswordLocked ?? (try? storage.lockStatus())?.passwordLocked ?? false }

    /// Whether the keychain is locked now: its attributes readable, its secrets not; for a remote keychain, the
    /// service's answer (false when it cannot be asked).
    public var isLocked: Bool { embedded?.isLocked ?? (try? storage.lockStatus())?.locked ?? false }

    public func setInitialPassword(
        _ password: some DataProtocol, derivation: PasswordDerivation.Function? = nil, settings: KeychainLockSettings = KeychainLockSettings()
    ) throws {
        try storage.setInitialPassword(password, derivation: derivation, settings: settings)
    }

    public func unlock(password: some DataProtocol) throws { try storage.unlock(password: password) }

    public func verifyPassword(_ password: some DataProtocol) throws { try storage.verifyPassword(password) }

    public func lock() throws { try storage.lock() }

    public func changePassword(old: some DataProtocol, new: some DataProtocol, derivation: PasswordDerivation.Function? = nil) throws {
        try storage.changePassword(old: old, new: new, derivation: derivation)
    }

    public func lockSettings() throws -> KeychainLockSettings { try storage.lockSettings() }

    public func setLockSettings(_ settings: KeychainLockSettings) throws { try storage.setLockSettings(settings) }

    // What only an embedded keychain offers: the service maintains its own keychains.

    /// How the keychain's password becomes its key (``EmbeddedKeychain/passwordDerivation()``).
    public func passwordDerivation() throws -> PasswordDerivation.Function { try requireEmbedded("the password derivation").passwordDerivation() }

    /// Writes the caller's items to `url` (``EmbeddedKeychain/backup(to:)``).
    @discardableResult
    public func backup(to url: URL) throws -> Int { try requireEmbedded("a backup").backup(to: url) }

    /// Restores items from a backup (``EmbeddedKeychain/restore(from:)``).
    public func restore(from url: URL) throws -> RestoreReport { try requireEmbedded("a restore").restore(from: url) }

    /// Rewrites the secrets sealed in an older envelope (``EmbeddedKeychain/upgradeEnvelopes()``).
    @discardableResult
    public func upgradeEnvelopes() throws -> Int { try requireEmbedded("an envelope upgrade").upgradeEnvelopes() }

    /// How SQLite runs `query` (``EmbeddedKeychain/queryPlan(_:)``).
    public func queryPlan(_ query: ItemQuery) throws -> [String] { try requireEmbedded("a query plan").queryPlan(query) }

    /// Removes the sealed copies of deleted and replaced items now (``EmbeddedKeychain/removeDeletedCopies()``);
    /// false for a remote keychain, whose service does it.
    @discardableResult
    public func removeDeletedCopies() -> Bool { embedded?.removeDeletedCopies() ?? false }

    private func requireEmbedded(_ what: String) throws -> EmbeddedKeychain {
        guard let embedded else { throw KeychainError(.unimplemented, "\(what) is not offered through the keychain service") }
        return embedded
    }

    // What only the keychain service offers: keys that never leave it.

    /// A private-key operation done by the keychain service (``RemoteKeychain/keyOperation(_:reference:algorithm:input:authentication:)``).
    /// - Throws: ``KeychainError`` `.unimplemented` for an embedded keychain (its caller holds the key and does the
    ///   operation itself).
    public func keyOperation(
        _ kind: KeychainWire.KeyOperationKind, reference: Data, algorithm: String, input: Data, authentication: ItemAuthentication? = nil
    ) throws -> Data {
        guard let remote else {
            throw KeychainError(.unimplemented, "key operations are the keychain service's; an embedded keychain's caller holds the key")
        }
        return try remote.keyOperation(kind, reference: reference, algorithm: algorithm, input: input, authentication: authentication)
    }

    /// A private key generated and kept by the keychain service (``RemoteKeychain/generateKey(keyType:bits:attributes:returning:)``).
    /// - Throws: ``KeychainError`` `.unimplemented` for an embedded keychain.
    public func generateKey(keyType: Int64, bits: Int, attributes: ItemAttributes, returning: ReturnOptions) throws -> KeychainItem {
        guard let remote else {
            throw KeychainError(
                .unimplemented, "key generation in the keychain is the keychain service's; an embedded keychain stores keys made by its caller")
        }
        return try remote.generateKey(keyType: keyType, bits: bits, attributes: attributes, returning: returning)
    }
}
