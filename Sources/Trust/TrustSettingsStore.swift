public import Certificates
public import Foundation
import DurableFiles
import Synchronization

/// One domain's trust settings, kept in a property-list file laid out as Apple's trust-settings files are
/// (`trustVersion`, and `trustList` keyed by the certificate's upper-case SHA-1, each with `issuerName`,
/// `serialNumber`, `modDate` and the `trustSettings` array), plus the certificate's DER under `certificate`, as
/// there is no keychain of roots to find it in.
///
/// Every change locks `<path>.lock` (`flock`, so processes serialize), reads the file afresh, writes the new
/// contents to a file of its own, fsyncs it and renames it into place: a reader never sees a half-written
/// file, and two writers never lose each other's change. Reads are cached and re-read when the file changes
/// (its inode, size or modification time). The file is looked at again at most every ``recheckInterval``: an
/// evaluation then costs no system call, and another process's change is seen within that interval (this process's
/// own, at once).
public final class TrustSettingsStore: Sendable {
    /// The file.
    public let path: String
    /// The permissions a new file gets.
    public let mode: mode_t

    private struct Snapshot {
        let identity: FileIdentity
        let entries: [Certificate: Entry]
        /// When the file was last found unchanged (``coarseNanoseconds``).
        var checked: UInt64
    }

    /// How long a read stands before the file is looked at again.
    static let recheckInterval: UInt64 = 10_000_000

    /// The coarse monotonic clock, in nanoseconds: read without a system call, a few milliseconds fine.
    private static var coarseNanoseconds: UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// A stored certificate's settings and when they were last changed.
    public struct Entry: Sendable {
        public let settings: TrustSettings
        public let modificationDate: Date
    }

    private let cache = Mutex<Snapshot?>(nil)

    /// - Parameters:
    ///   - path: the property-list file (it and its directory are created on the first change).
    ///   - mode: the new file's permissions (default 0600: the user's own; an administrator's domain is 0644,
    ///     read by every user's evaluations).
    public init(path: String, mode: mode_t = 0o600) {
        self.path = path
        self.mode = mode
    }

    /// Every certificate with settings, with them.
    /// - Throws: ``TrustError`` `.corruptTrustSettings` or `.trustSettingsIO` (a missing file is no settings).
    public func entries() throws -> [Certificate: Entry] {
        let now = Self.coarseNanoseconds
        let cached = cache.withLock { $0 }
        if let cached, now &- cached.checked < Self.recheckInterval { return cached.entries }
        let identity = FileIdentity(path: path)
        if let cached, cached.identity == identity {
            cache.withLock { $0?.checked = now }
            return cached.entries
        }
        let entries = try read()
        cache.withLock { $0 = Snapshot(identity: identity, entries: entries, checked: now) }
        return entries
    }

    /// Every certificate's settings.
    public func all() throws -> [Certificate: TrustSettings] { try entries().mapValues(\.settings) }

    /// The settings of `certificate`, nil when it has none.
    public func settings(for certificate: Certificate) throws -> TrustSettings? { try entries()[certificate]?.settings }

    /// Stores `settings` for `certificate`, replacing any it had.
    /// - Throws: ``TrustError`` `.invalidTrustSettings` when they do not fit the certificate (nothing changes),
    ///   `.trustSettingsIO` or `.corruptTrustSettings`.
    public func set(_ settings: TrustSettings, for certificate: Certificate) throws {
        try settings.validate(for: certificate)
        try change { $0[certificate] = Entry(settings: settings, modificationDate: Date()) }
    }

    /// Removes the settings of `certificate`.
    /// - Returns: false when it had none (nothing changes).
    @discardableResult
    public func remove(for certificate: Certificate) throws -> Bool {
        var removed = false
        try change { removed = $0.removeValue(forKey: certificate) != nil }
        return removed
    }

    // MARK: Reading and writing the file

    private func change(_ body: (inout [Certificate: Entry]) -> Void) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                // The directory opens to whom the file does (execute where read is granted): a user's 0600 settings
                // get a 0700 directory — the keychain's own data directory may be this one, and was left 0755 when
                // trust settings created it first — the administrator's 0644 a 0755 one.
                let directoryMode = Int(mode | ((mode & 0o444) >> 2))
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: directoryMode])
            } catch {
                throw TrustError(.trustSettingsIO, "cannot create the directory \(directory)")
            }
        }
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, mode)
        guard lock >= 0 else { throw Self.ioError("cannot open \(path).lock") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw Self.ioError("cannot lock \(path).lock") }
        }
        var entries = try read()
        body(&entries)
        try write(entries)
        cache.withLock { $0 = nil }
    }

    private func read() throws -> [Certificate: Entry] {
        let data: Data
        do {
            data = Data(try DurableFile.read(path))
        } catch where error.step == .open && error.errno == ENOENT {
            return [:]
        } catch {
            throw Self.ioError("cannot read \(path)", errno: error.errno)
        }
        guard let plist = PropertyListValue.object(from: data),
            let root = plist as? [String: Any], (root["trustVersion"] as? NSNumber)?.intValue == 1,
            let list = root["trustList"] as? [String: Any]
        else { throw TrustError(.corruptTrustSettings, "\(path) is not a trust-settings file") }
        var entries: [Certificate: Entry] = [:]
        for (key, value) in list {
            guard let record = value as? [String: Any], let der = record["certificate"] as? Data,
                let certificate = try? Certificate(derEncoded: der),
                certificate.sha1Fingerprint.hexUppercased == key,
                let array = record["trustSettings"] as? [Any],
                let settings = Self.decode(array)
            else { throw TrustError(.corruptTrustSettings, "\(path): the record \(key) is not valid") }
            entries[certificate] = Entry(
                settings: settings, modificationDate: record["modDate"] as? Date ?? Date(timeIntervalSince1970: 0))
        }
        return entries
    }

    private func write(_ entries: [Certificate: Entry]) throws {
        var list: [String: Any] = [:]
        for (certificate, entry) in entries {
            list[certificate.sha1Fingerprint.hexUppercased] = [
                "certificate": certificate.derEncoded,
                "issuerName": certificate.issuer.derEncoded,
                "serialNumber": certificate.serialNumber,
                "modDate": entry.modificationDate,
                "trustSettings": Self.encode(entry.settings),
            ] as [String: Any]
        }
        let root: [String: Any] = ["trustVersion": 1, "trustList": list]
        guard let data = try? PropertyListSerialization.data(fromPropertyList: root, format: .xml, options: 0) else {
            throw TrustError(.corruptTrustSettings, "the settings cannot be written as a property list")
        }
        do {
            _ = try data.withUnsafeBytes { bytes in try DurableFile.write(bytes, to: path, mode: mode) }
        } catch let error as DurableFileError {
            throw Self.ioError("cannot write \(path)", errno: error.errno)
        }
    }

    /// The error of a failed file call: `.trustSettingsPermissionDenied` for EACCES, else `.trustSettingsIO`.
    private static func ioError(_ what: String, errno code: Int32 = errno) -> TrustError {
        TrustError(
            code == EACCES ? .trustSettingsPermissionDenied : .trustSettingsIO, "\(what): \(String(cString: strerror(code)))")
    }

    // MARK: The trust-settings array

    /// Apple's keys of a usage-constraint dictionary.
    enum Key {
        static let policy = "kSecTrustSettingsPolicy"
        static let policyString = "kSecTrustSettingsPolicyString"
        static let allowedError = "kSecTrustSettingsAllowedError"
        static let result = "kSecTrustSettingsResult"
    }

    static func encode(_ settings: TrustSettings) -> [[String: Any]] {
        settings.constraints.map { constraint in
            var dictionary: [String: Any] = [Key.result: NSNumber(value: constraint.result.rawValue)]
            if let policy = constraint.policy { dictionary[Key.policy] = policy.identifier }
            if let policyString = constraint.policyString { dictionary[Key.policyString] = policyString }
            if !constraint.allowedErrors.isEmpty { dictionary[Key.allowedError] = constraint.allowedErrors.map(\.description) }
            return dictionary
        }
    }

    static func decode(_ array: [Any]) -> TrustSettings? {
        var constraints: [TrustSettings.Constraint] = []
        for element in array {
            guard let dictionary = element as? [String: Any],
                let raw = (dictionary[Key.result] as? NSNumber)?.uint32Value,
                let result = TrustSettings.Result(rawValue: raw)
            else { return nil }
            var policy: TrustSettings.Policy?
            if let identifier = dictionary[Key.policy] {
                guard let identifier = identifier as? String, let known = TrustSettings.Policy(identifier: identifier)
                else { return nil }
                policy = known
            }
            var allowed: [TrustFailureReason] = []
            if let names = dictionary[Key.allowedError] {
                guard let names = names as? [String] else { return nil }
                for name in names {
                    guard let reason = TrustFailureReason(named: name) else { return nil }
                    allowed.append(reason)
                }
            }
            guard
                let constraint = try? TrustSettings.Constraint(
                    policy: policy, policyString: dictionary[Key.policyString] as? String, allowedErrors: allowed,
                    result: result)
            else { return nil }
            constraints.append(constraint)
        }
        return TrustSettings(constraints)
    }
}

/// The user's and the administrator's trust-settings domains (Apple's `kSecTrustSettingsDomainUser` and
/// `…Admin`; the system domain is the CA bundle, ``SystemAnchors``, and has no settings file).
///
/// - The user's: `$SECURITYSERVICES_TRUST_SETTINGS`, else `$XDG_DATA_HOME/securityservices/trust-settings.plist`
///   (`~/.local/share/…` without it), 0600.
/// - The administrator's: `$SECURITYSERVICES_ADMIN_TRUST_SETTINGS`, else
///   `/etc/securityservices/trust-settings.plist`, 0644 (every user's evaluations read it; only root writes it).
///
/// ``withDomains(_:_:)`` replaces both for one task (tests, servers acting for several users).
public struct TrustSettingsDomains: Sendable {
    public let user: TrustSettingsStore
    public let administrator: TrustSettingsStore

    public init(user: TrustSettingsStore, administrator: TrustSettingsStore) {
        self.user = user
        self.administrator = administrator
    }

    /// Both domains in one directory (`user.plist`, `admin.plist`): for tests and sandboxes.
    public init(directory: String) {
        self.init(
            user: TrustSettingsStore(path: directory + "/user.plist"),
            administrator: TrustSettingsStore(path: directory + "/admin.plist", mode: 0o644))
    }

    @TaskLocal private static var scoped: TrustSettingsDomains?

    private static let defaults: TrustSettingsDomains = {
        let environment = ProcessInfo.processInfo.environment
        let data: String
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            data = xdg
        } else {
            data = (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.local/share"
        }
        let user = environment["SECURITYSERVICES_TRUST_SETTINGS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? data + "/securityservices/trust-settings.plist"
        let administrator = environment["SECURITYSERVICES_ADMIN_TRUST_SETTINGS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/etc/securityservices/trust-settings.plist"
        return TrustSettingsDomains(
            user: TrustSettingsStore(path: user), administrator: TrustSettingsStore(path: administrator, mode: 0o644))
    }()

    /// The domains in effect for this task.
    public static var current: TrustSettingsDomains { scoped ?? defaults }

    /// Runs `body` with `domains` in effect for this task and its child tasks only.
    public static func withDomains<R>(_ domains: TrustSettingsDomains, _ body: () async throws -> R) async rethrows -> R {
        try await $scoped.withValue(domains) { try await body() }
    }

    /// As above, for synchronous code.
    public static func withDomains<R>(_ domains: TrustSettingsDomains, _ body: () throws -> R) rethrows -> R {
        try $scoped.withValue(domains) { try body() }
    }

    /// What an evaluation consults now: the user's settings over the administrator's.
    /// - Throws: ``TrustError`` when a settings file cannot be read: an evaluation then fails rather than
    ///   ignore a distrust it cannot see.
    public func snapshot() throws -> TrustSettingsSet {
        TrustSettingsSet(domains: [try user.all(), try administrator.all()])
    }
}

/// What identifies one version of a file: a rename gives a new inode, a rewrite a new size or time.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int

    /// The identity of the file at `path`; all zero when there is none.
    init(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            (device, inode, size, modifiedSeconds, modifiedNanoseconds) = (0, 0, -1, 0, 0)
            return
        }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
    }
}

extension Data {
    var hexUppercased: String { map { String(format: "%02X", $0) }.joined() }
}
