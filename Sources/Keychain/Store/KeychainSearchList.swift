import DurableFiles
import Foundation
import Synchronization

/// Which keychains a user searches, and which one takes new items, as the desktop keychain's preferences keep them
/// per domain: the user's (`$XDG_CONFIG_HOME/securityservices/keychains.json`, else `~/.config/…`) and the
/// system's (`/etc/securityservices/keychains.json`, the administrator's; `SECURITYSERVICES_SYSTEM_KEYCHAIN_PREFERENCES`
/// names another for this process). Each file is
/// `{"default": PATH, "login": PATH, "search": [PATH, …]}`, every member optional.
///
/// Unset, the user's default keychain is the default keychain (``KeychainDefaults/path``), the login keychain the one
/// made on first use, and the search list the user's default followed by the system's list.
public enum KeychainSearchList {
    public enum Domain: Sendable, Hashable, CaseIterable {
        case user, system
    }

    struct Preferences: Codable, Equatable {
        var `default`: String?
        var login: String?
        var search: [String]?
    }

    private static let files = Mutex<[Domain: String]>([:])

    /// Points a domain's preferences at another file (tests, containers); nil restores the default location.
    public static func configure(_ domain: Domain, file: String?) {
        files.withLock { $0[domain] = file }
    }

    /// The file a domain's preferences are in.
    public static func file(_ domain: Domain) -> String {
        if let configured = files.withLock({ $0[domain] }) { return configured }
        return domain == .user ? defaultUserFile : defaultSystemFile
    }

    /// The environment's choices, read once: the search runs on every SecItemCopyMatching, and reading the
    /// environment builds a dictionary of all of it.
    private static let defaultUserFile: String = {
        let environment = ProcessInfo.processInfo.environment
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.config"
        return config + "/securityservices/keychains.json"
    }()

    /// A process may read another system file (a container's, a test's); it changes what this process searches,
    /// nobody else's.
    private static let defaultSystemFile: String =
        ProcessInfo.processInfo.environment["SECURITYSERVICES_SYSTEM_KEYCHAIN_PREFERENCES"].flatMap { $0.isEmpty ? nil : $0 }
        ?? "/etc/securityservices/keychains.json"

    /// What identifies a version of a preferences file (nil: no file).
    private struct Stamp: Equatable {
        let inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int

        init?(_ path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            inode = UInt64(status.st_ino)
            size = Int64(status.st_size)
            seconds = status.st_mtim.tv_sec
            nanoseconds = status.st_mtim.tv_nsec
        }
    }

    private static let cached = Mutex<(stamps: [Stamp?], files: [String], defaultKeychain: String, list: [String])?>(nil)

    /// ``effective(defaultKeychain:)``, read again only when either domain's file or the default keychain changed
    /// (two stat(2) calls a search).
    package static func effectiveCached(defaultKeychain: String) throws -> [String] {
        let files = [file(.user), file(.system)]
        let stamps = files.map { Stamp($0) }
        if let hit = cached.withLock({ $0 }), hit.files == files, hit.stamps == stamps, hit.defaultKeychain == defaultKeychain {
            return hit.list
        }
        let list = try effective(defaultKeychain: defaultKeychain)
        cached.withLock { $0 = (stamps, files, defaultKeychain, list) }
        return list
    }

    /// A domain's preferences (empty when its file does not exist).
    /// - Throws: ``KeychainError`` `.decode` for a file that is not such a document, `.io` when it cannot be read.
    static func preferences(_ domain: Domain) throws -> Preferences {
        let path = file(domain)
        guard FileManager.default.fileExists(atPath: path) else { return Preferences() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw KeychainError(.io, "cannot read the keychain preferences \(path)")
        }
        do {
            return try JSONDecoder().decode(Preferences.self, from: data)
        } catch {
            throw KeychainError(.decode, "the keychain preferences \(path) are malformed")
        }
    }

    /// Replaces a domain's preferences, whole (written to a new file, synced, renamed into place; its directory
    /// created 0700).
    static func write(_ preferences: Preferences, _ domain: Domain) throws {
        let path = file(domain)
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(preferences)
            _ = try data.withUnsafeBytes { try DurableFile.write($0, to: path, mode: 0o644, placement: .replace) }
        } catch let error as DurableFileError {
            throw KeychainError(.io, "cannot write the keychain preferences \(path) (\(error.step.rawValue))", errno: error.errno)
        } catch {
            throw KeychainError(.io, "cannot write the keychain preferences \(path)")
        }
    }

    /// Absolute, normalized: the form paths are compared and stored in.
    static func normalized(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }

    /// The domain's default keychain: the one new items go to.
    public static func defaultKeychain(_ domain: Domain = .user) throws -> String? {
        if let path = try preferences(domain).default { return path }
        return domain == .user ? KeychainDefaults.path : nil
    }

    /// Sets (nil: unsets) the domain's default keychain.
    public static func setDefaultKeychain(_ path: String?, _ domain: Domain = .user) throws {
        try update(domain) { $0.default = path.map(normalized) }
    }

    /// Reads, changes and writes back a domain's preferences.
    private static func update(_ domain: Domain, _ change: (inout Preferences) -> Void) throws {
        var preferences = try preferences(domain)
        change(&preferences)
        try write(preferences, domain)
    }

    /// The domain's login keychain (the user's: the keychain made on first use, ``KeychainDefaults/defaultPath``,
    /// unless set).
    public static func loginKeychain(_ domain: Domain = .user) throws -> String? {
        if let path = try preferences(domain).login { return path }
        return domain == .user ? KeychainDefaults.defaultPath : nil
    }

    public static func setLoginKeychain(_ path: String?, _ domain: Domain = .user) throws {
        try update(domain) { $0.login = path.map(normalized) }
    }

    /// The domain's search list as set (nil: not set).
    public static func searchList(_ domain: Domain) throws -> [String]? { try preferences(domain).search }

    /// Sets (nil: unsets) the domain's search list; duplicates are dropped, the first kept.
    public static func setSearchList(_ paths: [String]?, _ domain: Domain) throws {
        var seen = Set<String>()
        let list = paths?.map(normalized).filter { seen.insert($0).inserted }
        try update(domain) { $0.search = list }
    }

    /// The keychains a search goes through, in order: the user's list when set, else the user's default keychain;
    /// then the system's list; each once.
    /// - Parameter defaultKeychain: the user's default keychain as this process has it open (nil: as the
    ///   preferences and defaults say).
    public static func effective(defaultKeychain: String? = nil) throws -> [String] {
        let user = try searchList(.user) ?? [try defaultKeychain ?? self.defaultKeychain(.user)].compactMap { $0 }
        var seen = Set<String>()
        return (user + (try searchList(.system) ?? [])).filter { seen.insert($0).inserted }
    }
}
