public import CryptoContract
public import Foundation
import DurableFiles
import KernelBackend

/// The persisted result of a calibration: per offload backend and route, the input size from which the backend
/// beats software and the fitted cost of a call, measured on one machine. Keyed by kernel release, CPU model and
/// features, and where each backend runs the engine routes, so a profile from another machine (or from before a
/// kernel upgrade, or with an engine module loaded or unloaded since) is stale and ignored.
public struct DispatchProfile: Codable, Sendable, Equatable {
    public struct Fingerprint: Codable, Sendable, Hashable {
        public var kernelRelease: String
        public var cpuModel: String
        /// The CPU's crypto-relevant features (`aes`, `sha_ni`, `avx2`, …), sorted.
        public var cpuFeatures: String
        /// Per offload backend, where it runs the phone engine's routes (driver names).
        public var placements: String

        public init(kernelRelease: String, cpuModel: String, cpuFeatures: String = "", placements: String = "") {
            self.kernelRelease = kernelRelease
            self.cpuModel = cpuModel
            self.cpuFeatures = cpuFeatures
            self.placements = placements
        }

        /// This machine's fingerprint with the default offload backends.
        public static var current: Fingerprint { current(for: Dispatcher.defaultBackends) }

        /// This machine's fingerprint with `backends`.
        public static func current(for backends: [any OffloadBackend]) -> Fingerprint {
            let placements = backends.map { backend in
                backend.kind.name + ": "
                    + Route.phoneEngine.map { "\($0.name)=\(backend.placement(of: $0.operation))" }.joined(separator: ", ")
            }
            return Fingerprint(
                kernelRelease: MachineInfo.kernelRelease, cpuModel: MachineInfo.cpuModel,
                cpuFeatures: MachineInfo.cpuFeatures, placements: placements.joined(separator: "; "))
        }
    }

    /// One offload backend's calibration.
    public struct Backend: Codable, Sendable, Equatable {
        /// Route name -> threshold in bytes; a route absent or `nil` never goes to the backend.
        public var thresholds: [String: Int?]
        /// Why each threshold was chosen, for people.
        public var reasons: [String: String]
        /// Route name -> the fitted cost of a call.
        public var costs: [String: CallCost]

        public init(thresholds: [String: Int?], reasons: [String: String] = [:], costs: [String: CallCost] = [:]) {
            self.thresholds = thresholds
            self.reasons = reasons
            self.costs = costs
        }
    }

    /// Current format; a file with another version is ignored (format 1, before pluggable backends, had one
    /// kernel table).
    public static let formatVersion = 2

    public var version: Int
    public var fingerprint: Fingerprint
    /// When the calibration ran (ISO 8601).
    public var created: String
    /// Offload backend name -> its calibration.
    public var backends: [String: Backend]
    /// Route name -> the fitted cost of a software call.
    public var softwareCosts: [String: CallCost]

    public init(fingerprint: Fingerprint, backends: [String: Backend], softwareCosts: [String: CallCost] = [:]) {
        version = Self.formatVersion
        self.fingerprint = fingerprint
        created = ISO8601DateFormatter().string(from: Date())
        self.backends = backends
        self.softwareCosts = softwareCosts
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
        guard let bytes = try? DurableFile.read(url.path, maximumLength: 1 << 20) else { return .missing }
        let data = Data(bytes)
        struct Version: Decodable { var version: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: data).version else {
            return .corrupt("\(url.path) is not a dispatch profile")
        }
        guard version == formatVersion else {
            return .corrupt("\(url.path) has format \(version), not \(formatVersion): calibrate again (make calibrate)")
        }
        guard let profile = try? JSONDecoder().decode(DispatchProfile.self, from: data) else {
            return .corrupt("\(url.path) is not a dispatch profile")
        }
        let routeNames = profile.backends.values.flatMap { Array($0.thresholds.keys) + Array($0.costs.keys) }
            + Array(profile.softwareCosts.keys)
        if let unknown = routeNames.first(where: { Route(name: $0) == nil }) {
            return .corrupt("\(url.path) names an unknown route \(unknown)")
        }
        if profile.backends.values.contains(where: { $0.thresholds.values.contains { ($0 ?? 0) < 0 } }) {
            return .corrupt("\(url.path) has a negative threshold")
        }
        let costs = profile.backends.values.flatMap(\.costs.values) + profile.softwareCosts.values
        if costs.contains(where: { !($0.fixedNanoseconds >= 0 && $0.nanosecondsPerByte >= 0) }) {
            return .corrupt("\(url.path) has a negative or invalid cost")
        }
        guard profile.fingerprint == fingerprint else { return .stale(profile.fingerprint) }
        return .loaded(profile)
    }

    /// Writes the profile whole or not at all (``DurableFile``), creating the folder.
    public func save(to url: URL = defaultLocation) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        _ = try data.withUnsafeBytes { bytes in try DurableFile.write(bytes, to: url.path, mode: 0o644) }
    }
}

/// Facts about this machine that key the profile and label benchmark results.
public enum MachineInfo {
    public static let kernelRelease: String = {
        ProcFile.read("/proc/sys/kernel/osrelease")?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
    }()

    /// The CPU flags that decide software crypto speed (x86 `flags`, Arm `Features`), sorted and space-separated.
    public static let cpuFeatures: String = {
        let relevant: Set<Substring> = [
            "aes", "vaes", "pclmulqdq", "sha_ni", "avx", "avx2", "avx512f", "ssse3", "pmull", "sha1", "sha2", "asimd", "neon",
        ]
        let text = ProcFile.read("/proc/cpuinfo") ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("flags") || line.hasPrefix("Features") {
            if let colon = line.firstIndex(of: ":") {
                return Set(line[line.index(after: colon)...].split(separator: " ")).intersection(relevant).sorted().joined(separator: " ")
            }
        }
        return ""
    }()

    public static let cpuModel: String = {
        let text = ProcFile.read("/proc/cpuinfo") ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("model name") || line.hasPrefix("Model") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }()
}
