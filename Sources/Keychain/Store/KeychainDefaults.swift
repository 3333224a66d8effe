import Foundation
import Synchronization

/// The keychain that code written for Apple platforms gets with no set-up: a per-user database under the XDG
/// data directory, created on first use, and an access group named after the executable.
///
/// Overrides, strongest first: ``withStore(_:_:)`` for one task; ``configure(path:accessGroups:)``; the environment (`SECURITYSERVICES_KEYCHAIN`
/// for the database path, `SECURITYSERVICES_ACCESS_GROUPS` for a comma-separated group list); the defaults
/// (`$XDG_DATA_HOME/securityservices/keychain.db`, else `~/.local/share/securityservices/keychain.db`; the
/// executable's file name).
///
/// Service mode: without an environment path, the keychain is the keychain service's when one is configured
/// (`SECURITYSERVICES_KEYCHAIN_SERVICE`, its socket) or its default socket exists (``defaultServiceSocket``): the
/// caller's default keychain there, or, for a configured path (or the user's default keychain), the caller's
/// keychain in the service named by the path's file name (``serviceKeychainName(for:)``). The service then decides
/// the access groups; configured or environment groups narrow them.
public enum KeychainDefaults {
    private struct State {
        var path: String?
        var accessGroups: [String]?
        var store: KeychainStore?
        /// Whether the kept store is the one the user's preferences (or the default path) chose, rather than one
        /// this process configured, named in its environment, or a keychain service's.
        var storeFollowsPreferences = false
    }
    private static let state = Mutex(State())

    /// A keychain that replaces the default for the current task and the tasks it creates.
    @TaskLocal private static var scoped: KeychainStore?

    /// Runs `body` with `store` as the default keychain of this task (and its child tasks) only: other tasks
    /// and threads keep theirs. For tests and for servers that act for several clients at once.
    public static func withStore<R>(_ store: KeychainStore, _ body: () async throws -> R) async rethrows -> R {
        try await $scoped.withValue(store) { try await body() }
    }

    /// As above, for synchronous code.
    public static func withStore<R>(_ store: KeychainStore, _ body: () throws -> R) rethrows -> R {
        try $scoped.withValue(store) { try body() }
    }

    /// Sets (or with `nil`, clears) the path and groups the default keychain uses, closing the open one.
    public static func configure(path: String?, accessGroups: [String]?) {
        state.withLock { $0 = State(path: path, accessGroups: accessGroups, store: nil) }
    }

    /// The database path in effect: configured, else the environment's, else the user's default keychain
    /// (``KeychainSearchList``) when one is set, else ``defaultPath``.
    public static var path: String {
        state.withLock { $0.path } ?? environmentPath ?? preferredPath ?? defaultPath
    }

    /// The user's default keychain, when one is set in the user's keychain preferences (an unreadable file sets
    /// none: the default path serves, as before any preference existed).
    private static var preferredPath: String? { (try? KeychainSearchList.preferences(.user))?.default }

    /// Closes the default keychain opened so far, keeping the configuration: the next call opens the keychain in
    /// effect then (after the user's default keychain changed). The copies of items deleted or replaced through it
    /// leave the files first (``KeychainStore/removeDeletedCopies()``): a short-lived process calls it before it
    /// exits, before the store's own deferred removal could run.
    public static func close() {
        let closed = state.withLock { state in
            defer { state.store = nil }
            return state.store
        }
        closed?.removeDeletedCopies()
    }

    /// The access groups in effect.
    public static var accessGroups: [String] {
        state.withLock { $0.accessGroups } ?? environmentGroups ?? [executableName]
    }

    /// The default keychain, opened once (its directory created 0700 on first use).
    /// - Throws: ``KeychainError`` when it cannot be created or opened.
    public static func store() throws -> KeychainStore {
        if let scoped { return scoped }
        if let store = state.withLock({ $0.store }) { return store }
        let configured = state.withLock { $0.path } ?? environmentPath
        if let socket = serviceMode {
            let named = (state.withLock { $0.path } ?? preferredPath).map(serviceKeychainName(for:))
            return keep(try KeychainStore(service: socket, accessGroups: requestedServiceGroups, keychain: named), followsPreferences: false)
        }
        let path = self.path, groups = accessGroups
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw KeychainError(.io, "cannot create the keychain directory \(directory)")
            }
        } else if path == defaultPath {
            narrowDataDirectory(directory)
        }
        return keep(try KeychainStore(path: path, accessGroups: groups), followsPreferences: configured == nil)
    }

    /// The default keychain, and whether it is the one the user's preferences chose (so a search may go through the
    /// user's search list), or one this task or process set for itself. Costs a lock once the store is open.
    public static func storeForSearch() throws -> (store: KeychainStore, followsPreferences: Bool) {
        if let scoped { return (scoped, false) }
        let store = try self.store()
        return (store, state.withLock { $0.store === store && $0.storeFollowsPreferences })
    }

    /// Keeps `store` as the default keychain, unless another thread kept one first (that one is returned).
    private static func keep(_ store: KeychainStore, followsPreferences: Bool) -> KeychainStore {
        state.withLock { state in
            if let existing = state.store { return existing }
            state.store = store
            state.storeFollowsPreferences = followsPreferences
            return store
        }
    }

    /// The keychain service's socket when the default keychain is the service's (no `SECURITYSERVICES_KEYCHAIN`, and
    /// a service configured or listening at its default socket); nil in embedded mode.
    public static var serviceMode: String? { environmentPath == nil ? serviceSocket : nil }

    /// The name of the service's keychain that a keychain path stands for in service mode: its file name
    /// (`build.keychain` for `~/build.keychain`, as security(1) names keychains).
    public static func serviceKeychainName(for path: String) -> String { (path as NSString).lastPathComponent }

    /// The groups to ask the service for: configured, else the environment's, else all it grants.
    public static var requestedServiceGroups: [String] { state.withLock { $0.accessGroups } ?? environmentGroups ?? [] }

    /// In service mode, the caller's keychain in the service that `path` stands for (its file name), in the groups
    /// asked for; nil in embedded mode.
    /// - Throws: ``KeychainError`` `.itemNotFound` when it does not exist and `create` is false.
    public static func serviceStore(for path: String, create: Bool) throws -> KeychainStore? {
        guard let socket = serviceMode else { return nil }
        return try KeychainStore(
            service: socket, accessGroups: requestedServiceGroups, keychain: serviceKeychainName(for: path), create: create)
    }

    /// Makes `store` the default keychain (a command that opened the keychain it names).
    public static func use(_ store: KeychainStore) {
        state.withLock { state in
            state.store = store
            state.storeFollowsPreferences = false
        }
    }

    /// What the default keychain is, for people: the open store's ``KeychainStore/location``, else ``path``.
    public static var location: String { state.withLock { $0.store?.location } ?? path }

    /// Where a system keychain service listens (the systemd socket unit's path).
    public static let defaultServiceSocket = "/run/securityservices/securityd.sock"

    /// The keychain service's socket in effect: `SECURITYSERVICES_KEYCHAIN_SERVICE` (empty: none, whatever
    /// exists), else ``defaultServiceSocket`` when it exists; nil for embedded mode.
    public static var serviceSocket: String? {
        if let configured = ProcessInfo.processInfo.environment["SECURITYSERVICES_KEYCHAIN_SERVICE"] {
            return configured.isEmpty ? nil : configured
        }
        var status = stat()
        return lstat(defaultServiceSocket, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK ? defaultServiceSocket : nil
    }

    private static var environmentPath: String? {
        ProcessInfo.processInfo.environment["SECURITYSERVICES_KEYCHAIN"].flatMap { $0.isEmpty ? nil : $0 }
    }

    private static var environmentGroups: [String]? {
        guard let list = ProcessInfo.processInfo.environment["SECURITYSERVICES_ACCESS_GROUPS"] else { return nil }
        let groups = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return groups.isEmpty ? nil : groups
    }

    /// Closes the default keychain's own directory (`…/securityservices`) to others when it was left open (made by
    /// hand or by an older release): only the user's processes should list its files. A directory the caller named
    /// is the caller's to set; its database and key files are 0600 whatever it allows.
    private static func narrowDataDirectory(_ directory: String) {
        var status = stat()
        guard stat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == geteuid(),
            status.st_mode & 0o077 != 0
        else { return }
        _ = chmod(directory, 0o700)
    }

    static var defaultPath: String {
        let environment = ProcessInfo.processInfo.environment
        let data: String
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {  // the spec: relative values are ignored
            data = xdg
        } else {
            data = (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.local/share"
        }
        return data + "/securityservices/keychain.db"
    }

    /// The executable's file name (`/proc/self/exe`, else argv[0]).
    static var executableName: String {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments.first ?? "default"
        let name = (target as NSString).lastPathComponent
        return name.isEmpty ? "default" : name
    }
}
