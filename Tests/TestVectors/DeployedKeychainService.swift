public import Foundation
import Keychain
public import KeychainService

/// `securityd` run as its systemd unit (`Deployment/systemd/securityd.service`) runs it: under a uid of its own
/// (``daemonUID``, as `DynamicUser=yes` gives it), with exactly the unit's capabilities (`AmbientCapabilities`,
/// `CapabilityBoundingSet`) and `NoNewPrivileges`, read from the unit file itself and applied with `setpriv`; its
/// socket in a directory of its own, its keychains in a state directory of its own (0700), a root-owned policy
/// directory. Needs root (to change uid); tests that use it are enabled only as root.
public final class DeployedKeychainService {
    /// The daemon's uid and gid (no account needs to exist for them).
    public static let daemonUID: UInt32 = 61_000

    public let directory: TemporaryDirectory
    public let process: Process
    public var socket: String { directory.path("run/securityd.sock") }
    public var policyDirectory: String { directory.path("policy") }
    /// Where the keychains are, `<keychains>/<uid>/keychain.db`.
    public var keychains: String { directory.path("state/keychains") }
    private var logPath: String { directory.path("securityd.log") }

    /// Starts the daemon and waits until it accepts.
    /// - Parameter arguments: more `securityd` options.
    public init(arguments: [String] = []) throws {
        directory = try TemporaryDirectory("securityd-deployed")
        chmod(directory.url.path, 0o755)
        let uid = Self.daemonUID
        for (name, owner, mode) in [("run", uid, 0o755), ("state", uid, 0o700), ("policy", 0, 0o755)] as [(String, UInt32, mode_t)] {
            try FileManager.default.createDirectory(atPath: directory.path(name), withIntermediateDirectories: true)
            chown(directory.path(name), owner, owner)
            chmod(directory.path(name), mode)
        }
        let logPath = directory.path("securityd.log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let unit = try Self.unit
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments =
            unit.setprivArguments(uid: uid) + [
                try BuiltExecutable.named("securityd").path, "--socket", socket, "--directory", keychains, "--policy-directory", policyDirectory,
            ] + arguments
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        for _ in 0..<400 {
            if (try? KeychainServiceClient(socketPath: socket)) != nil { return }
            guard process.isRunning else { break }
            usleep(25_000)
        }
        process.terminate()
        throw KeychainError(.io, "securityd did not start as its unit runs it: \(log)")
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    /// What the daemon wrote to its standard error.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Writes a policy file (root-owned, 0644, as the system policy must be).
    public func writePolicy(_ name: String, _ entries: [ApplicationPolicy.Entry]) throws {
        let path = policyDirectory + "/" + name
        try JSONEncoder().encode(entries).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
    }

    /// The daemon's resident memory in bytes (`VmRSS`).
    public var residentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// What the unit file says of the process it starts.
    public struct Unit {
        public let dynamicUser: Bool
        public let ambientCapabilities: [String]
        public let boundingCapabilities: [String]
        public let noNewPrivileges: Bool
        public let execStart: String

        init(_ text: String) {
            var values: [String: String] = [:]
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                values[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            func capabilities(_ key: String) -> [String] {
                (values[key] ?? "").split(separator: " ").map { $0.lowercased().replacingOccurrences(of: "cap_", with: "") }
            }
            dynamicUser = values["DynamicUser"] == "yes"
            ambientCapabilities = capabilities("AmbientCapabilities")
            boundingCapabilities = capabilities("CapabilityBoundingSet")
            noNewPrivileges = values["NoNewPrivileges"] == "yes"
            execStart = values["ExecStart"] ?? ""
        }

        /// `setpriv`'s options for this unit's credentials under `uid`.
        func setprivArguments(uid: UInt32) -> [String] {
            let ambient = (["-all"] + ambientCapabilities.map { "+" + $0 }).joined(separator: ",")
            let bounding = (["-all"] + boundingCapabilities.map { "+" + $0 }).joined(separator: ",")
            return ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--inh-caps=" + ambient, "--ambient-caps=" + ambient, "--bounding-set=" + bounding]
                + (noNewPrivileges ? ["--no-new-privs"] : [])
        }
    }

    /// The unit files' folder in this repository.
    public static let unitDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Deployment/systemd")

    public static var unit: Unit {
        get throws { Unit(try String(contentsOf: unitDirectory.appendingPathComponent("securityd.service"), encoding: .utf8)) }
    }

    /// Runs `executable` with `arguments` as `uid` (its own gid, no supplementary groups), with `environment` added;
    /// its standard output, trimmed.
    public static func run(_ executable: String, _ arguments: [String], uid: UInt32, environment: [String: String] = [:]) throws -> String {
        try BuiltExecutable.run(
            URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", executable] + arguments,
            environment: environment
        ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
