import Foundation
import Keychain
public import KeychainService

/// A user's desktop session as the Secret Service sees one, made by the test: a private session bus
/// (`dbus-daemon --session`) and `securityd --secret-service` on it, both running as an unprivileged user
/// (``userUID``) as a user's session runs them, the daemon's keychains in a directory of that user (0700), a
/// root-owned policy directory. Clients run as the same user (``run(_:_:input:environment:)``). Needs root (to
/// change uid).
public final class SecretServiceDesktop {
    /// The session's user: `nobody`, an account every Debian system has (the bus daemon refuses a uid the password
    /// database does not know).
    public static let userUID: UInt32 = 65_534

    public let directory: TemporaryDirectory
    private let bus: Process
    /// The daemon the test started; nil when the bus starts it (D-Bus activation).
    private let daemon: Process?
    public var busAddress: String { "unix:path=" + directory.path("run/bus") }
    /// The keychain service's socket: the test's, or where a daemon the bus started puts it by default.
    public let socket: String
    public var policyDirectory: String { directory.path("policy") }
    private var logPath: String { directory.path("securityd.log") }

    /// Starts the bus and the daemon, and waits until the daemon holds `org.freedesktop.secrets`; or, `activated`,
    /// starts the bus with the deployed D-Bus service file (`Deployment/dbus`, its `Exec` pointed at the built
    /// `securityd`) in its service directory, and nothing else: the bus starts the daemon at the first call.
    /// - Parameter arguments: more `securityd` options (`--secret-service-sharing everyone`).
    public init(arguments: [String] = [], activated: Bool = false) throws {
        directory = try TemporaryDirectory("secret-service")
        chmod(directory.url.path, 0o755)
        let uid = Self.userUID
        for (name, owner, mode) in [("run", uid, 0o700), ("home", uid, 0o700), ("state", uid, 0o700), ("policy", 0, 0o755)]
            as [(String, UInt32, mode_t)]
        {
            try FileManager.default.createDirectory(atPath: directory.path(name), withIntermediateDirectories: true)
            chown(directory.path(name), owner, owner)
            chmod(directory.path(name), mode)
        }
        _ = FileManager.default.createFile(atPath: directory.path("securityd.log"), contents: nil)
        _ = FileManager.default.createFile(atPath: directory.path("bus.log"), contents: nil)

        let securityd = try BuiltExecutable.named("securityd").path
        var busArguments = ["--session", "--address=unix:path=" + directory.path("run/bus")]
        if activated {
            socket = directory.path("run/securityservices/securityd.sock")
            try FileManager.default.createDirectory(atPath: directory.path("services"), withIntermediateDirectories: true)
            let deployed = try String(contentsOf: Self.serviceFile, encoding: .utf8)
            try deployed.replacingOccurrences(of: "/usr/local/bin/securityd", with: securityd)
                .write(toFile: directory.path("services/org.freedesktop.secrets.service"), atomically: true, encoding: .utf8)
            try """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig>
                  <type>session</type>
                  <listen>unix:path=\(directory.path("run/bus"))</listen>
                  <auth>EXTERNAL</auth>
                  <servicedir>\(directory.path("services"))</servicedir>
                  <policy context="default">
                    <allow send_destination="*" eavesdrop="true"/>
                    <allow eavesdrop="true"/>
                    <allow own="*"/>
                  </policy>
                </busconfig>
                """.write(toFile: directory.path("bus.conf"), atomically: true, encoding: .utf8)
            for file in ["services", "services/org.freedesktop.secrets.service", "bus.conf"] { chmod(directory.path(file), 0o755) }
            busArguments = ["--config-file=" + directory.path("bus.conf")]
        } else {
            socket = directory.path("run/securityd.sock")
        }
        bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        bus.arguments = Self.asUser + ["/usr/bin/dbus-daemon", "--nofork", "--nopidfile"] + busArguments
        // What the bus passes on to a service it starts: the session's home and runtime directory.
        bus.environment = ["PATH": "/usr/bin:/bin", "HOME": directory.path("home"), "XDG_RUNTIME_DIR": directory.path("run")]
        bus.standardOutput = FileHandle.nullDevice
        bus.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.path("bus.log")))
        try bus.run()
        for _ in 0..<400 where !FileManager.default.fileExists(atPath: directory.path("run/bus")) { usleep(10_000) }

        guard !activated else {
            daemon = nil
            return
        }
        let daemon = Process()
        self.daemon = daemon
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        daemon.arguments =
            Self.asUser + [
                securityd, "--secret-service", "--socket", directory.path("run/securityd.sock"),
                "--directory", directory.path("state/keychains"), "--policy-directory", directory.path("policy"),
            ] + arguments
        daemon.environment = environment
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try daemon.run()
        for _ in 0..<400 {
            if nameOwned { return }
            guard daemon.isRunning else { break }
            usleep(25_000)
        }
        throw KeychainError(.io, "securityd --secret-service did not take the bus name: \(log)")
    }

    deinit {
        daemon?.terminate()
        daemon?.waitUntilExit()
        // A child started from a test's thread inherits its blocked signals: the bus daemon would not see SIGTERM.
        kill(bus.processIdentifier, SIGKILL)
        bus.waitUntilExit()
    }

    private static var asUser: [String] { ["--reuid=\(userUID)", "--regid=\(userUID)", "--clear-groups"] }

    /// The D-Bus service file in this repository.
    static let serviceFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Deployment/dbus/org.freedesktop.secrets.service")

    /// Whether a service holds `org.freedesktop.secrets` on the session's bus now.
    public var nameOwned: Bool {
        let owned = try? run(
            "/usr/bin/dbus-send",
            ["--session", "--print-reply", "--dest=org.freedesktop.DBus", "/", "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"])
        return owned?.stdout.contains("boolean true") == true
    }

    /// The session's environment: its bus, the keychain service's socket, a home of the user's.
    public var environment: [String: String] {
        [
            "PATH": "/usr/bin:/bin", "HOME": directory.path("home"), "DBUS_SESSION_BUS_ADDRESS": busAddress,
            "SECURITYSERVICES_KEYCHAIN_SERVICE": socket, "XDG_RUNTIME_DIR": directory.path("run"),
        ]
    }

    /// What the daemon wrote to its standard error.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Runs `executable` as the session's user, in the session's environment (with `environment` added), with
    /// `input` on its standard input.
    public func run(_ executable: String, _ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = Self.asUser + [executable] + arguments
        process.environment = self.environment.merging(environment) { $1 }
        let output = Pipe()
        let errors = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input == nil ? FileHandle.nullDevice : standardInput
        try process.run()
        if let input {
            try standardInput.fileHandleForWriting.write(contentsOf: Data(input.utf8))
            try standardInput.fileHandleForWriting.close()
        }
        let stderr = OpenSSLCLI.PipeReader(errors.fileHandleForReading)
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stdout, stderr.text())
    }

    /// Writes a policy file (root-owned, 0644, as the system policy must be).
    public func writePolicy(_ name: String, _ entries: [ApplicationPolicy.Entry]) throws {
        let path = policyDirectory + "/" + name
        try JSONEncoder().encode(entries).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
    }

    /// A copy of `executable` that is another application: one byte appended, so its SHA-256 differs; owned by the
    /// session's user.
    public func otherApplication(copying executable: String, named name: String) throws -> String {
        let path = directory.path(name)
        try BuiltExecutable.install(try Data(contentsOf: URL(fileURLWithPath: executable)) + Data([0]), at: path)
        chown(path, Self.userUID, Self.userUID)
        return path
    }
}
