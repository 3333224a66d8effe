public import Foundation

/// The persisted result of a calibration: per route, the input size from which the kernel is faster, measured
/// on one machine. Keyed by kernel release and CPU model, so a profile from another machine (or from before
/// a kernel upgrade) is stale and ignored.
public struct DispatchProfile: Codable, Sendable, Equatable {
    public struct Fingerprint: Codable, Sendable, Hashable {
        public var kernelRelease: String
        public var cpuModel: String

        public init(kernelRelease: String, cpuModel: String) {
            self.kernelRelease = kernelRelease
            self.cpuModel = cpuModel
        }

        /// This machine's fingerprint.
        public static var current: Fingerprint {
            Fingerprint(kernelRelease: MachineInfo.kernelRelease, cpuModel: MachineInfo.cpuModel)
        }
    }

    /// Current format; a file with another version is ignored.
    public static let formatVersion = 1

    public var version: Int
    public var fingerprint: Fingerprint
    /// When the calibration ran (ISO 8601).
    public var created: String
    /// Route name -> threshold in bytes; a route absent or `nil` never goes to the kernel.
    public var thresholds: [String: Int?]
    /// Why each threshold was chosen, for people.
    public var reasons: [String: String]

    public init(fingerprint: Fingerprint, thresholds: [String: Int?], reasons: [String: String]) {
        version = Self.formatVersion
        self.fingerprint = fingerprint
        created = ISO8601DateFormatter().string(from: Date())
        self.thresholds = thresholds
        self.reasons = reasons
    }

    /// Where profiles live: `$SECURITYSERVICES_PROFILE`, else `$XDG_CACHE_HOME/securityservices/dispatch-profile.json`,
    /// else `~/.cache/securityservices/dispatch-profile.json`.
    public static var defaultLocation: URL {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["SECURITYSERVICES_PROFILE"], !path.isEmpty { return URL(fileURLWithPath: path) }
        let cache =
            environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        return cache.appendingPathComponent("securityservices/dispatch-profile.json")
    }

    public enum LoadResult: Sendable, Equatable {
        case loaded(DispatchProfile)
        case missing
        /// Unreadable, not JSON, wrong version, or an unknown route: ignored.
        case corrupt(String)
        /// From another kernel or CPU: ignored.
        case stale(Fingerprint)
    }

    /// Reads a profile, never throwing: what cannot be used is reported, and the caller uses defaults.
    public static func load(from url: URL = defaultLocation, expecting fingerprint: Fingerprint = .current) -> LoadResult {
        guard let data = try? Data(contentsOf: url) else { return .missing }
        guard let profile = try? JSONDecoder().decode(DispatchProfile.self, from: data) else {
            return .corrupt("\(url.path) is not a dispatch profile")
        }
        guard profile.version == formatVersion else { return .corrupt("\(url.path) has format \(profile.version)") }
        if let unknown = profile.thresholds.keys.first(where: { Route(name: $0) == nil }) {
            return .corrupt("\(url.path) names an unknown route \(unknown)")
        }
        if profile.thresholds.values.contains(where: { ($0 ?? 0) < 0 }) {
            return .corrupt("\(url.path) has a negative threshold")
        }
        guard profile.fingerprint == fingerprint else { return .stale(profile.fingerprint) }
        return .loaded(profile)
    }

    /// Writes the profile atomically (a temporary file renamed into place), creating the folder.
    public func save(to url: URL = defaultLocation) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: url, options: .atomic)
    }
}

/// Facts about this machine that key the profile and label benchmark results.
public enum MachineInfo {
    public static let kernelRelease: String = {
        (try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
    }()

    public static let cpuModel: String = {
        let text = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("model name") || line.hasPrefix("Model") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }()
}
