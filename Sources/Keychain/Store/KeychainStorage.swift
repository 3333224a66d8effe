public import Foundation

/// What a keychain does, wherever it is kept: ``EmbeddedKeychain`` keeps it in this process (a SQLite file, secrets
/// sealed under a master key), ``RemoteKeychain`` asks the keychain service (`securityd`), which keeps it for its
/// callers. ``KeychainStore`` is either, chosen when it is opened.
///
/// Every call is one transaction: a failed call changes nothing.
public protocol KeychainStorage: AnyObject, Sendable {
    /// The access groups the calls act in: adds go to the first unless told otherwise; queries see only these.
    var accessGroups: [String] { get }
    /// What this keychain is, for people: a database's path, or the service's socket and keychain.
    var location: String { get }

    /// Adds an item.
    /// - Parameters:
    ///   - itemClass: the item's class (not `.identity`: its certificate and key are added separately).
    ///   - attributes: its attributes; `accessGroup`, when given, must be one of the caller's.
    ///   - data: the secret (the password, the certificate or key bytes), encrypted at rest.
    ///   - returning: what to return about the new item.
    /// - Returns: the new item with what `returning` asked for.
    /// - Throws: ``KeychainError``: `.duplicateItem`, `.missingEntitlement`, `.noSuchAttribute`, `.parameter`.
    func add(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data?, returning: ReturnOptions) throws -> KeychainItem
    /// Adds an identity: its certificate and its private key, in one transaction (both or neither).
    /// - Parameters:
    ///   - certificate: the certificate item's attributes (its `publicKeyHash` pairs it with the key) and data.
    ///   - privateKey: the key item's attributes (its `applicationLabel` must equal that hash; `keyClass` 1) and
    ///     data.
    /// - Returns: the identity with what `returning` asked for.
    /// - Throws: ``KeychainError`` `.duplicateItem` when either half exists (nothing is added), `.parameter` when
    ///   the halves do not pair, and the errors of ``add(_:attributes:data:returning:)``.
    func addIdentity(
        certificate: (attributes: ItemAttributes, data: Data), privateKey: (attributes: ItemAttributes, data: Data), returning: ReturnOptions
    ) throws -> KeychainItem
    /// Adds several items at once, provided no item matches any of `conditions`: the check and the adds are one
    /// write transaction (all the items or none), so of several callers racing to create the same set, exactly one
    /// adds.
    /// - Returns: true when the items were added; false when a condition matched (nothing was added).
    func add(_ items: [NewItem], unlessAnyMatches conditions: [ItemQuery]) throws -> Bool
    /// The items matching `query`, at most its limit, each with what `query.returning` asks for.
    /// - Throws: ``KeychainError``: `.itemNotFound` when nothing matches, `.missingEntitlement` for a group the
    ///   caller lacks, `.noSuchAttribute`, `.parameter`, `.decode` for a secret that does not authenticate;
    ///   for a secret whose access control asks for the user, `.interactionNotAllowed` without the proof
    ///   (``ItemQuery/authentication``) and `.authFailed` for a wrong password.
    func find(_ query: ItemQuery) throws -> [KeychainItem]
    /// Changes every item matching `query`: the attributes in `changes` and, when given, the secret.
    /// - Returns: how many items changed.
    /// - Throws: ``KeychainError``: `.itemNotFound` when nothing matches, `.duplicateItem` when a changed item
    ///   would collide with another (nothing is changed then), `.parameter`, `.missingEntitlement`; for an item
    ///   whose access control asks for the user, `.interactionNotAllowed` without the proof and `.authFailed` for a
    ///   wrong password.
    func update(_ query: ItemQuery, attributes changes: ItemAttributes, data: Data?) throws -> Int
    /// Deletes every item matching `query` (an identity: its certificate and its private key).
    /// - Returns: how many items (identities count once) were deleted.
    /// - Throws: ``KeychainError`` `.itemNotFound` when nothing matches, `.parameter` for return options or
    ///   a case-insensitive query.
    func delete(_ query: ItemQuery) throws -> Int

    /// Whether the keychain has a password, and whether it is locked now.
    func lockStatus() throws -> (passwordLocked: Bool, locked: Bool)
    /// Gives the keychain, while it holds no item and has no password, a password; it is unlocked after.
    /// - Parameters:
    ///   - derivation: how the password becomes a key; nil for scrypt calibrated where the keychain is kept.
    ///   - settings: when it locks itself.
    /// - Throws: ``KeychainError`` `.duplicateItem` when the keychain holds items or has a password, `.parameter`
    ///   for an empty password (or, for a remote keychain, a derivation or settings other than the defaults: the
    ///   service chooses).
    func setInitialPassword(_ password: some DataProtocol, derivation: PasswordDerivation.Function?, settings: KeychainLockSettings) throws
    /// Unlocks the keychain (an embedded one for every store of this process on it; a remote one for every process
    /// of the caller's uid), until ``lock()`` or the settings' idle interval.
    /// - Throws: ``KeychainError`` `.authFailed` for a wrong password (each wrong password in a row from the
    ///   second waits longer before it answers), `.parameter` for a keychain that has no password.
    func unlock(password: some DataProtocol) throws
    /// Checks `password` against the keychain's without unlocking it: the proof of the user.
    /// - Throws: ``KeychainError`` `.authFailed` for a wrong password (counted and delayed as a wrong unlock),
    ///   `.parameter` for a keychain that has no password.
    func verifyPassword(_ password: some DataProtocol) throws
    /// Locks the keychain: its secrets key is dropped (and wiped) at once.
    /// - Throws: ``KeychainError`` `.parameter` for a keychain that has no password.
    func lock() throws
    /// Changes the password: the secrets key is wrapped again under the new one, no item rewritten.
    /// - Throws: ``KeychainError`` `.authFailed` when `old` is wrong (nothing changes), `.parameter` for an empty
    ///   new password, a keychain without one, or a derivation a remote keychain's service chooses itself.
    func changePassword(old: some DataProtocol, new: some DataProtocol, derivation: PasswordDerivation.Function?) throws
    /// When the keychain locks itself.
    /// - Throws: ``KeychainError`` `.parameter` for a keychain that has no password.
    func lockSettings() throws -> KeychainLockSettings
    /// Sets when the keychain locks itself.
    /// - Throws: ``KeychainError`` `.parameter` for a keychain that has no password, `.interactionNotAllowed` while
    ///   it is locked.
    func setLockSettings(_ settings: KeychainLockSettings) throws
}
