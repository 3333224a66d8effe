import Foundation
import Keychain
import KeychainService

/// The Secret Service against gnome-keyring-daemon, in one run and on one bus: a private session bus
/// (`dbus-daemon --session`), gnome-keyring-daemon on it (unlocked headless: `--unlock` with a password on standard
/// input, as it needs before its login collection exists), then this package's Secret Service on the same bus (the
/// code `securityd --secret-service` runs, in this process). The same client, Python's `secretstorage`, looks one
/// item up many times against each: a search by attributes and the secret through one encrypted (DH) session. The
/// client's own time is in both; the ratio is what a user's application pays for the isolation.
struct SecretServiceBench {
    let lookups: Int

    struct Result: Encodable {
        let lookups: Int
        let client: String
        let securityd: LatencySummary
        let gnomeKeyring: LatencySummary

        var ratio: Double { securityd.p50Microseconds / gnomeKeyring.p50Microseconds }

        enum CodingKeys: String, CodingKey { case lookups, client, securityd, gnomeKeyring = "gnome_keyring", ratio = "ratio_p50" }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(lookups, forKey: .lookups)
            try container.encode(client, forKey: .client)
            try container.encode(securityd, forKey: .securityd)
            try container.encode(gnomeKeyring, forKey: .gnomeKeyring)
            try container.encode(ratio, forKey: .ratio)
        }

        func table() -> String {
            func line(_ name: String, _ side: LatencySummary) -> String {
                name.padding(toLength: 22, withPad: " ", startingAt: 0)
                    + String(format: " %9.0f %9.1f %9.1f", side.opsPerSecond, side.p50Microseconds, side.p99Microseconds)
            }
            return [
                "Secret Service: \(lookups) lookups (\(client)) through one session bus, against each service; µs per lookup",
                "service                    ops/s       p50       p99",
                line("securityd", securityd),
                line("gnome-keyring-daemon", gnomeKeyring),
                String(
                    format: "securityd / gnome-keyring-daemon p50: %.2f (each application sees only its own items; with gnome-keyring, "
                        + "every process of the user sees every item)", ratio),
            ].joined(separator: "\n")
        }
    }

    /// Why the comparison cannot run here (a program it needs is missing), or nil.
    static var unavailableReason: String? {
        for program in ["/usr/bin/dbus-daemon", "/usr/bin/dbus-send", "/usr/bin/gnome-keyring-daemon", "/usr/bin/python3"]
        where !FileManager.default.isExecutableFile(atPath: program) {
            return "\(program) is not installed"
        }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        probe.arguments = ["-c", "import secretstorage"]
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return "python3 does not run" }
        probe.waitUntilExit()
        return probe.terminationStatus == 0 ? nil : "Python's secretstorage is not installed (python3-secretstorage)"
    }

    static let client = """
        import sys, time, secretstorage, secretstorage.util
        bus = secretstorage.dbus_init()
        session = secretstorage.util.open_session(bus)
        collection = secretstorage.get_default_collection(bus, session)
        collection.create_item("bench", {"service": "bench.example.com", "username": "bench"}, b"secret-value", replace=True)
        times = []
        for _ in range(int(sys.argv[1])):
            start = time.perf_counter_ns()
            item = next(collection.search_items({"service": "bench.example.com", "username": "bench"}))
            assert item.get_secret() == b"secret-value"
            times.append(time.perf_counter_ns() - start)
        print(" ".join(map(str, times)))
        """

    func run() throws -> Result {
        let directory = try TemporaryDirectory(prefix: "secbench-secrets")
        defer { directory.remove() }
        let path = directory.path
        for folder in ["run", "home", "keychains"] {
            try FileManager.default.createDirectory(atPath: path + "/" + folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        try Self.client.write(toFile: path + "/client.py", atomically: true, encoding: .utf8)
        let address = "unix:path=" + path + "/run/bus"
        let environment = [
            "PATH": "/usr/bin:/bin", "HOME": path + "/home", "XDG_RUNTIME_DIR": path + "/run", "DBUS_SESSION_BUS_ADDRESS": address,
        ]
        let bus = try Self.start("/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=" + address], environment)
        defer {
            kill(bus.processIdentifier, SIGKILL)
            bus.waitUntilExit()
        }
        for _ in 0..<400 where !FileManager.default.fileExists(atPath: path + "/run/bus") { usleep(10_000) }

        // gnome-keyring first: it gives the name back when it ends.
        let keyring = try Self.start(
            "/usr/bin/gnome-keyring-daemon", ["--foreground", "--unlock", "--components=secrets"], environment, input: "secbench")
        try Self.waitForName(environment)
        let theirs = try Self.lookups(lookups, path, environment)
        kill(keyring.processIdentifier, SIGKILL)
        keyring.waitUntilExit()
        for _ in 0..<400 where Self.nameOwned(environment) { usleep(10_000) }

        // The Secret Service of a keychain service in this process; the interpreter is granted a group by the
        // user's policy, as the product asks of scripts.
        let service = try KeychainService(.init(socketPath: path + "/run/securityd.sock", directory: path + "/keychains", policyDirectories: []))
        let policy = path + "/keychains/\(geteuid())/applications.d"
        try FileManager.default.createDirectory(atPath: policy, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let python = URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path
        let entry = ApplicationPolicy.Entry(name: "python", sha256: try Self.sha256(python), accessGroups: ["secbench"])
        try JSONEncoder().encode([entry]).write(to: URL(fileURLWithPath: policy + "/python.json"))
        Thread.detachNewThread { try? service.serveSecretService(busAddress: address) }
        try Self.waitForName(environment)
        let ours = try Self.lookups(lookups, path, environment)
        return Result(
            lookups: lookups, client: "Python secretstorage: SearchItems and GetSecret, one DH session", securityd: LatencySummary(ours),
            gnomeKeyring: LatencySummary(theirs))
    }

    // MARK: Processes

    private static func start(_ program: String, _ arguments: [String], _ environment: [String: String], input: String? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : pipe
        try process.run()
        if let input {
            try pipe.fileHandleForWriting.write(contentsOf: Data(input.utf8))
            try pipe.fileHandleForWriting.close()
        }
        return process
    }

    private static func output(_ program: String, _ arguments: [String], _ environment: [String: String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    private static func nameOwned(_ environment: [String: String]) -> Bool {
        let reply = try? output(
            "/usr/bin/dbus-send",
            ["--session", "--print-reply", "--dest=org.freedesktop.DBus", "/", "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"],
            environment)
        return reply?.1.contains("boolean true") == true
    }

    private static func waitForName(_ environment: [String: String]) throws {
        for _ in 0..<400 {
            if nameOwned(environment) { return }
            usleep(25_000)
        }
        throw KeychainError(.io, "no Secret Service took the bus name")
    }

    /// The client's lookup times, nanoseconds.
    private static func lookups(_ count: Int, _ path: String, _ environment: [String: String]) throws -> [Double] {
        let (status, text) = try output("/usr/bin/python3", [path + "/client.py", String(count)], environment)
        let times = text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        guard status == 0, times.count == count else { throw KeychainError(.io, "the Secret Service client failed (status \(status))") }
        return times
    }

    private static func sha256(_ file: String) throws -> String {
        let (status, text) = try output("/usr/bin/openssl", ["dgst", "-sha256", "-r", file], ["PATH": "/usr/bin:/bin"])
        guard status == 0, text.count >= 64 else { throw KeychainError(.io, "the SHA-256 of \(file) cannot be computed") }
        return String(text.prefix(64))
    }
}
