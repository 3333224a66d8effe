public import Foundation

/// Which access groups an application may use, as entitlements say on Apple platforms: policy files map an
/// application's identity (its executable's SHA-256, and optionally its path) to groups.
///
/// A policy file is JSON, one entry or a list of entries:
/// `{"name": "Mail", "path": "/usr/bin/mail-app", "sha256": "<64 hex digits>", "group": "mail-app",
/// "accessGroups": ["com.example.mail"]}`.
/// An executable whose SHA-256 (and path and group, when the entry names them) matches an entry gets that entry's
/// groups, in order, then those of every other matching entry, then its derived group (so that what it stored before
/// it had an entry stays its own). An application no entry names gets one group of its own, derived from its binary
/// (``derivedGroup(for:)``): a modified binary is another application. An interpreter (``PeerIdentity/isInterpreter``)
/// gets no derived group: every script it runs would share it.
public struct ApplicationPolicy: Sendable {
    public struct Entry: Codable, Sendable, Hashable {
        public var name: String?
        public var path: String?
        public var sha256: String
        /// The Unix group (a name or a number) the application is installed setgid to. When set, the entry matches
        /// only a caller the kernel recorded in that group at connect (``PeerIdentity/applicationGroup``): another
        /// process of the same user cannot borrow the entry's groups by running the binary after connecting, nor by
        /// preloading code into it (the loader ignores `LD_PRELOAD` in a setgid program).
        public var group: String?
        public var accessGroups: [String]

        public init(name: String? = nil, path: String? = nil, sha256: String, group: String? = nil, accessGroups: [String]) {
            self.name = name
            self.path = path
            self.sha256 = sha256
            self.group = group
            self.accessGroups = accessGroups
        }

        /// ``group`` as a gid: a number, or a name the group database knows; nil when it names none.
        var groupID: UInt32? {
            guard let group else { return nil }
            if let number = UInt32(group) { return number }
            return group.withCString { name in getgrnam(name).map { $0.pointee.gr_gid } }
        }

        func matches(_ identity: PeerIdentity) -> Bool {
            guard sha256.lowercased() == identity.executableSHA256, path.map({ $0 == identity.executablePath }) ?? true else { return false }
            guard group != nil else { return true }
            return groupID != nil && identity.applicationGroup == groupID
        }
    }

    public let entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// The group of an application that no policy entry names: `app.` and the first 32 hex digits of its
    /// binary's SHA-256.
    public static func derivedGroup(for identity: PeerIdentity) -> String { "app." + identity.executableSHA256.prefix(32) }

    /// The groups `identity` may use, first the one its adds go to; none for an interpreter no entry names.
    public func accessGroups(for identity: PeerIdentity) -> [String] {
        var groups: [String] = []
        for entry in entries where entry.matches(identity) {
            for group in entry.accessGroups where !groups.contains(group) { groups.append(group) }
        }
        if !identity.isInterpreter {
            // Last, so that adds go to the entry's first group; what the application stored before its entry existed
            // stays reachable (the migration to a policy entry).
            let derived = Self.derivedGroup(for: identity)
            if !groups.contains(derived) { groups.append(derived) }
        }
        return groups
    }

    /// The entries of every `*.json` file in `directories`, in name order; what cannot be used is skipped and
    /// reported.
    /// - Parameter requireOwner: a file (and its directory) must belong to this uid or to root, and not be writable
    ///   by group or others (the system directories: root).
    public static func load(directories: [String], requireOwner: uid_t) -> (policy: ApplicationPolicy, warnings: [String]) {
        var entries: [Entry] = []
        var warnings: [String] = []
        for directory in directories {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            if !isTrusted(directory, owner: requireOwner) {
                warnings.append("\(directory): not used (owned by another user, or writable by others)")
                continue
            }
            for name in names.sorted() where name.hasSuffix(".json") {
                let path = (directory as NSString).appendingPathComponent(name)
                if !isTrusted(path, owner: requireOwner) {
                    warnings.append("\(path): not used (owned by another user, or writable by others)")
                    continue
                }
                guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else {
                    warnings.append("\(path): cannot be read")
                    continue
                }
                let decoder = JSONDecoder()
                let found = (try? decoder.decode([Entry].self, from: data)) ?? (try? decoder.decode(Entry.self, from: data)).map { [$0] }
                guard let found else {
                    warnings.append("\(path): not a policy entry or a list of them")
                    continue
                }
                for entry in found {
                    if entry.group != nil, entry.groupID == nil {
                        warnings.append("\(path): an entry names the group \(entry.group ?? ""), which does not exist")
                        continue
                    }
                    guard entry.sha256.count == 64, entry.sha256.allSatisfy(\.isHexDigit),
                        !entry.accessGroups.isEmpty, entry.accessGroups.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 256 })
                    else {
                        warnings.append("\(path): an entry without a 64-digit sha256 or with an empty group list or name")
                        continue
                    }
                    entries.append(entry)
                }
            }
        }
        return (ApplicationPolicy(entries: entries), warnings)
    }

    private static func isTrusted(_ path: String, owner: uid_t) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0 else { return false }
        return (status.st_uid == owner || status.st_uid == 0) && status.st_mode & (S_IWGRP | S_IWOTH) == 0
    }
}
