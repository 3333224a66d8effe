import Foundation
import Keychain

extension KeychainService {
    /// Serves the freedesktop Secret Service API on the session bus (`org.freedesktop.secrets`) over this
    /// service's keychains, until the session bus ends: every Linux application that stores secrets through
    /// libsecret, `secret-tool`, Python's `secretstorage` or `keyring`, git's libsecret helper, reaches the
    /// keychain. Answers calls on this thread, one at a time.
    ///
    /// Each caller is identified from the pid and uid the bus daemon recorded when it connected (its executable
    /// and that binary's SHA-256, as on the socket) and sees the items of the access groups the policy grants it;
    /// with ``SecretServiceSharing/everyone``, every process of the user sees every item, as with gnome-keyring.
    /// - Parameters:
    ///   - sharing: who sees which items.
    ///   - prompter: the program that asks the user for a locked keychain's password (its one argument says which
    ///     keychain and for which application; it prints the password): `Unlock` then answers with a prompt, as the
    ///     specification has it. Nil: `Unlock` of a locked collection is refused, saying how to unlock it.
    ///   - busAddress: the bus to serve on (nil: the user's session bus, `DBUS_SESSION_BUS_ADDRESS`).
    /// - Throws: ``KeychainError`` `.io` when there is no session bus, another service holds the name, or the bus
    ///   fails.
    public func serveSecretService(sharing: SecretServiceSharing = .perApplication, prompter: String? = nil, busAddress: String? = nil) throws {
        let bus = try SecretServiceBus(address: busAddress)
        try bus.serve(SecretServiceFront(keychains: self, sharing: sharing, prompter: prompter))
    }

    // MARK: The stores

    /// Runs `body` on the store of `identity`'s keychain `keychain` (nil: its default one) seen through `groups`, as
    /// a request of that caller on the socket runs: items' access control lists are checked against it.
    func withStore<R>(for identity: PeerIdentity, keychain: String?, groups: [String], _ body: (EmbeddedKeychain) throws -> R) throws -> R {
        let application = ItemAccess.Application(path: identity.executablePath, sha256: identity.executableSHA256)
        let pool = try pool(uid: identity.uid, keychain: keychain, groups: groups)
        return try ItemAccess.$accessor.withValue(application) { try pool.withStore(body) }
    }

    /// The names of `uid`'s keychains besides its default one, sorted.
    func keychainNames(uid: uid_t) -> [String] {
        let folder = (userDirectory(uid) as NSString).appendingPathComponent("keychains")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return files.filter { $0.hasSuffix(".db") }.map { String($0.dropLast(3)) }.filter { (try? keychainPath(uid: uid, name: $0)) != nil }.sorted()
    }

    /// Creates `uid`'s keychain `name` (empty, with a key file of its own), if it does not exist, opening it for
    /// a caller in `groups`.
    /// - Throws: ``KeychainError`` `.parameter` for a name that is not one, `.diskFull` past the quota.
    func createKeychain(uid: uid_t, name: String, groups: [String]) throws {
        if !FileManager.default.fileExists(atPath: try keychainPath(uid: uid, name: name)) { try checkQuota(uid: uid) }
        _ = try pool(uid: uid, keychain: name, groups: groups).withStore { $0.path }
    }
}
