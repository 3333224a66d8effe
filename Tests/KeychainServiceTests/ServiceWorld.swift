import Foundation
import KeychainService
import TestVectors

/// A keychain service on a socket of its own, with a policy directory, and copies of the test application. As root
/// the service is `securityd` run as its systemd unit runs it (``DeployedKeychainService``: a uid of its own, the
/// unit's capabilities); otherwise a service in this process.
final class ServiceWorld {
    let directory: TemporaryDirectory
    let deployed: DeployedKeychainService?
    let inProcess: KeychainService?
    let socket: String
    let policyDirectory: String
    /// Where the keychains are, `<keychains>/<uid>/keychain.db`.
    let keychains: String

    init() throws {
        directory = try TemporaryDirectory("keychain-service")
        // Traversable by the other uids of the tests.
        chmod(directory.url.path, 0o755)
        if getuid() == 0 {
            let daemon = try DeployedKeychainService()
            deployed = daemon
            inProcess = nil
            socket = daemon.socket
            policyDirectory = daemon.policyDirectory
            keychains = daemon.keychains
        } else {
            try FileManager.default.createDirectory(atPath: directory.path("policy"), withIntermediateDirectories: true)
            let service = try KeychainService(
                .init(socketPath: directory.path("securityd.sock"), directory: directory.path("keychains"), policyDirectories: [directory.path("policy")]))
            service.start()
            deployed = nil
            inProcess = service
            socket = directory.path("securityd.sock")
            policyDirectory = directory.path("policy")
            keychains = directory.path("keychains")
        }
    }

    deinit { inProcess?.stop() }

    /// The test application, built next to the test bundle.
    static var application: URL {
        get throws { try BuiltExecutable.named("keychain-service-client") }
    }

    /// A copy of the test application named `name` (0755); `modified` appends a byte (the program runs the same,
    /// its SHA-256 differs).
    func application(_ name: String, modified: Bool = false) throws -> String {
        let path = directory.path(name)
        var bytes = try Data(contentsOf: try Self.application)
        if modified { bytes.append(0x0A) }
        try BuiltExecutable.install(bytes, at: path)
        return path
    }

    /// Runs an application with the socket and `arguments`; its output. `asNobody` runs it as uid and gid 65534
    /// (setpriv); `environment` is added to this process's.
    func run(_ application: String, _ arguments: [String], asNobody: Bool = false, environment: [String: String] = [:]) throws -> String {
        let process = Process()
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if asNobody {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", application, socket] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: application)
            process.arguments = [socket] + arguments
        }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `sha256sum`'s digest of a file: the independent identity.
    static func sha256(_ path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix(64))
    }

    func writePolicy(_ name: String, _ entries: [ApplicationPolicy.Entry]) throws {
        try JSONEncoder().encode(entries).write(to: URL(fileURLWithPath: policyDirectory + "/" + name))
        chmod(policyDirectory + "/" + name, 0o644)
    }
}
